//===- FlowSbpInterface.td - SBP rules of flow ops ---------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWSBPINTERFACE_TD
#define FLOW_DIALECT_FLOW_IR_FLOWSBPINTERFACE_TD

include "mlir/IR/OpBase.td"

def Flow_SbpOpInterface : OpInterface<"SbpOpInterface"> {
  let cppNamespace = "::mlir::flow";
  let description = [{
    How an op may be laid out over one axis of a device mesh: the list of
    SBP signatures (one SBP per operand and per result) under which every
    device computes its piece of the result from its pieces of the operands,
    and the op's compute cost. Every flow op implements it (the rules live in
    FlowSbp.cpp, one function per op); nd-mesh signatures are the product of
    these per-axis rules, filtered by the operands' sizes (see
    `getNdSbpSignatures`).
  }];
  let methods = [
    InterfaceMethod<[{
        The op's valid signatures along one mesh axis, the all-B signature
        first. An op with no signature (collectives, which only appear after
        partitioning) cannot be placed by propagation.
      }],
      "::llvm::SmallVector<::mlir::flow::SbpSignature>", "getSbpRules", (ins)>,
    InterfaceMethod<[{
        The work of the op on one device holding everything: FLOPs for
        contractions, result elements otherwise.
      }],
      "double", "getComputeCost", (ins)>,
  ];
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWSBPINTERFACE_TD
