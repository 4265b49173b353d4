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
    InterfaceMethod<[{
        Writes the op for one device of a partitioned program: `operands`
        are the device's pieces laid out as the chosen signature asks
        (`place.operands`), `resultTypes` the types of its pieces of the
        results (`place.results`). Most ops are the same op on pieces; an op
        whose attributes speak of global sizes or positions rewrites them in
        local terms, and an op reducing over a split dimension computes its
        partial statistics and reduces them across the splitting mesh axes
        here. Returns the device's results.
      }],
      "::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>", "partition",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$operands,
           "::mlir::TypeRange":$resultTypes,
           "const ::mlir::flow::DevicePlace &":$place)>,
  ];
}

#endif // FLOW_DIALECT_FLOW_IR_FLOWSBPINTERFACE_TD
