//===- Passes.h - Flow fusion passes ----------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_FUSION_PASSES_H
#define FLOW_FUSION_PASSES_H

#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flow {

#define GEN_PASS_DECL
#include "flow/Fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flow/Fusion/Passes.h.inc"

} // namespace flow
} // namespace mlir

#endif // FLOW_FUSION_PASSES_H
