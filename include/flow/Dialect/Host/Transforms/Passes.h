//===- Passes.h - The host dialect's passes ---------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_HOST_TRANSFORMS_PASSES_H
#define FLOW_DIALECT_HOST_TRANSFORMS_PASSES_H

#include "flow/Dialect/Host/IR/HostOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flow {

#define GEN_PASS_DECL
#include "flow/Dialect/Host/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flow/Dialect/Host/Transforms/Passes.h.inc"

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_HOST_TRANSFORMS_PASSES_H
