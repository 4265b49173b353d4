//===- FlowGradientInterface.td - VJP rules of flow ops -----*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWGRADIENTINTERFACE_TD
#define FLOW_DIALECT_FLOW_IR_FLOWGRADIENTINTERFACE_TD

include "mlir/IR/OpBase.td"

def Flow_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::flow";
  let description = [{
    The op's vector-Jacobian product (reverse-mode rule): given the gradient
    of a scalar loss with respect to each of the op's results, builds flow
    ops that compute the gradient with respect to each of its operands.
    `flow-autodiff` calls it on every op between the arguments it
    differentiates and the loss, last op first. The rules live in
    FlowGradients.cpp, one function per op, next to the SBP rules; an op
    without a rule has no model, and `flow-autodiff` names it.

    Rules that need an op's inputs or results (saved activations) read the
    op's own operands and results: the forward values stay alive until the
    backward ops have used them, and memory planning sees that.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at `builder`'s insertion point, the gradient of every
        operand from `resultGrads` (one per result, null for a result the
        loss does not depend on; at least one is set). Sets
        `operandGrads[i]` (sized to the operands, all null on entry) to a
        value of operand `i`'s type, or leaves it null where operand `i`
        gets no gradient (integer operands, indices, masks). Fails, with a
        diagnostic on the op, for a case the rule does not cover.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::MutableArrayRef<::mlir::Value>":$operandGrads)>,
  ];
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWGRADIENTINTERFACE_TD
