//===- FlowGradient.h - Reverse-mode rules of flow ops ----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The gradient interface (one vector-Jacobian product per op, in
// FlowGradients.cpp) that `flow-autodiff` builds the backward pass from.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWGRADIENT_H
#define FLOW_DIALECT_FLOW_IR_FLOWGRADIENT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "flow/Dialect/Flow/IR/FlowGradientInterface.h.inc"

namespace mlir {
namespace flow {

/// Attaches the gradient rules to the flow ops that have one (called by the
/// dialect).
void registerGradientInterfaceModels(MLIRContext *context);

/// `grad` (shaped like the result of a numpy broadcast) summed over the
/// dimensions along which a value of type `target` was broadcast, and
/// reshaped to `target`: the gradient of the value before broadcasting.
Value sumToType(OpBuilder &b, Location loc, Value grad,
                RankedTensorType target);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_FLOWGRADIENT_H
