//===- Passes.h - Flow kernel codegen passes ---------------------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CODEGEN_COMMON_PASSES_H
#define FLOW_CODEGEN_COMMON_PASSES_H

#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flow {

#define GEN_PASS_DECL
#include "flow/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flow/Codegen/Common/Passes.h.inc"

} // namespace flow
} // namespace mlir

#endif // FLOW_CODEGEN_COMMON_PASSES_H
