//===- Passes.h - Flow CUDA codegen passes ----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CODEGEN_CUDA_PASSES_H
#define FLOW_CODEGEN_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flow {

#define GEN_PASS_DECL
#include "flow/Codegen/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flow/Codegen/CUDA/Passes.h.inc"

} // namespace flow
} // namespace mlir

#endif // FLOW_CODEGEN_CUDA_PASSES_H
