//===- Passes.td - Flow graph passes -----------------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD
#define FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def StripAnnotationsPass : Pass<"flow-strip-annotations", "func::FuncOp"> {
  let summary = "Drops SBP annotations for a single-device compile";
  let description = [{
    Replaces every `flow.annotate` with its operand and, with
    `strip-signature` (on by default), removes `flow.sbp` from the function's
    arguments and results and `flow.mesh` from the function. A program
    compiled for one device has no use for placement; this pass makes the
    graph placement-free so single-device pipelines need not handle it.

    ```mlir
    %1 = flow.annotate %0 as #flow.sbp<[S(0)]> on @mesh : tensor<8x4xf32>
    %2 = flow.relu %1 : tensor<8x4xf32>
    // becomes
    %2 = flow.relu %0 : tensor<8x4xf32>
    ```
  }];
  let options = [
    Option<"stripSignature", "strip-signature", "bool", /*default=*/"true",
           "Also remove flow.sbp and flow.mesh from the function signature">
  ];
  let statistics = [
    Statistic<"numAnnotationsRemoved", "annotations-removed",
              "Number of flow.annotate ops removed">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

#endif // FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD
