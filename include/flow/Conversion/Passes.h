//===- Passes.h - Flow lowerings --------------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CONVERSION_PASSES_H
#define FLOW_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace flow {

#define GEN_PASS_DECL
#include "flow/Conversion/Passes.h.inc"

/// Adds the patterns lowering flow compute ops to linalg/tensor/arith/math.
void populateFlowToLinalgPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "flow/Conversion/Passes.h.inc"

} // namespace flow
} // namespace mlir

#endif // FLOW_CONVERSION_PASSES_H
