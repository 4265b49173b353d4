//===- Passes.td - Flow lowerings --------------------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CONVERSION_PASSES_TD
#define FLOW_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFlowToLinalgPass : Pass<"flow-convert-to-linalg", "ModuleOp"> {
  let summary = "Lowers flow ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every compute op of the flow dialect into upstream dialects on
    tensors: elementwise ops and reductions become `linalg.generic` (numpy
    broadcasting through indexing maps), `flow.transpose` becomes
    `linalg.transpose`, data movement becomes `tensor` ops, windows
    (convolution, pooling) become `linalg.generic` over a `tensor.pad`ded
    input. `f16` and `bf16` arithmetic is computed in `f32` and rounded once.
    `flow.annotate` is dropped (single-device lowering), and meshes that are
    no longer referenced are erased.

    Collectives have no single-device lowering: the pass reports them as an
    error naming the op.

    ```mlir
    %z = flow.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    // becomes
    %e = tensor.empty() : tensor<4x8xf32>
    %z = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1),
                                          (d0, d1) -> (d0, d1)], ...}
        ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
      ^bb0(%a: f32, %c: f32, %out: f32):
        %s = arith.addf %a, %c : f32
        linalg.yield %s : f32
    } -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // FLOW_CONVERSION_PASSES_TD
