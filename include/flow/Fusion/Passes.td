//===- Passes.td - Flow fusion passes ----------------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_FUSION_PASSES_TD
#define FLOW_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FormDispatchRegionsPass
    : Pass<"flow-form-dispatch-regions", "func::FuncOp"> {
  let summary = "Groups compute ops into dispatch regions, one per kernel";
  let description = [{
    Puts every compute op of a host function (public, not a kernel) into a
    `flow.dispatch_region`; with `fusion` (the default), a consumer joins
    its producer's region by these rules, in program order:

    - element-wise and broadcasting ops (unary, binary, `select`, `compare`,
      `cast`, `gelu`, `broadcast_to`, `batch_norm`), `reshape` and
      `transpose` join the region of a producer they read; a reshape or
      transpose becomes indexing inside the kernel;
    - a reduction (`reduce_sum`, `reduce_mean`, `reduce_max`, `softmax`,
      `log_softmax`, `layer_norm`, `rms_norm`) joins with its element-wise
      prologue, and element-wise consumers join it as its epilogue; each
      norm or softmax is one kernel, and reductions over the same rows share
      one (a masked softmax and the row maximum that finds rows masked
      throughout; `flow-tile-rows` then computes them row by row);
    - element-wise consumers join a generated `matmul` or `conv2d` (or
      another root: gather, pooling, concat...) as its epilogue.

    A consumer stays out, with the reason in a `flow.fusion_refused`
    attribute, when joining would:

    - change the kernel's rows (the region's work splits into independent
      rows, one workgroup's share each; a consumer that reads another row
      of an in-region value, or has a different row count, would make the
      kernel serial or wrong);
    - put a reduction after a contraction in one kernel;
    - move a value past an op that uses it (an op outside the region,
      between the producer and the consumer, reads the producer);
    - read across a host op: a library GEMM (f32 `matmul` with
      `library-matmul`), a library convolution (f32 `conv2d` with
      `library-conv`) or a collective is never inside a kernel, so its
      consumers start a new one (the host pipeline may then fuse them into
      the library call: `flow-fuse-conv-epilogues`).

    Before grouping, a reshape that splits the rows of an element-wise op's
    result moves above that op when the op's full-size operands come from
    the host: `reshape(add(gemm, bias))` from `[B*S, F]` to `[B, S, ...]`
    becomes `add(reshape(gemm), bias)` (a host view, then the add in
    `[B, S, F]`), so the add has the rows of its consumers and fuses with
    them (the activation after a bias, the split into attention heads)
    instead of ending a kernel before a view. Operands that broadcast over
    the trailing dimensions (a bias, a scalar) stay as they are.

    No op is ever duplicated: a value used inside and outside its region
    becomes one of the region's results. A trailing `reshape` whose result
    is used only outside the region is left to the host (a view). Ops with
    no elements are replaced by empty constants.

    With `fusion=false` every compute op is a region of its own (one op, one
    kernel), for comparison.

    ```mlir
    %m = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %g = flow.gelu %a : tensor<8x32xf32>
    // becomes (the matmul is a library GEMM on the host)
    %r = flow.dispatch_region rows = 8 -> (tensor<8x32xf32>) {
      %a = flow.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
      %g = flow.gelu %a : tensor<8x32xf32>
      flow.return %g : tensor<8x32xf32>
    }
    // and %a carries flow.fusion_refused = "its producer flow.matmul runs
    // on the host as a library GEMM"
    ```
  }];
  let options = [
    Option<"fusion", "fusion", "bool", /*default=*/"true",
           "Fuse producers and consumers (false: one op per region)">,
    Option<"libraryMatmul", "library-matmul", "bool", /*default=*/"true",
           "Leave f32 flow.matmul (and bf16 ones into f32) in the host "
           "schedule for a library GEMM">,
    Option<"narrowLibraryMatmul", "narrow-library-matmul", "bool",
           /*default=*/"false",
           "With library-matmul, f16 and bf16 flow.matmul into their own "
           "type or f32 are library GEMMs too">,
    Option<"libraryConv", "library-conv", "bool", /*default=*/"false",
           "Leave f32 flow.conv2d in the host schedule for a library "
           "convolution">,
    Option<"narrowLibraryConv", "narrow-library-conv", "bool",
           /*default=*/"false",
           "With library-conv, f16 and bf16 flow.conv2d are library "
           "convolutions too">
  ];
  let statistics = [
    Statistic<"numRegions", "regions", "Number of dispatch regions formed">,
    Statistic<"numFused", "fused-ops", "Number of ops fused into a producer's region">,
    Statistic<"numRefused", "refusals", "Number of fusion candidates refused">,
    Statistic<"numRowSplitsMoved", "row-splits-moved",
              "Number of reshapes moved above the element-wise op they read">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def OutlineKernelsPass : Pass<"flow-outline-kernels", "ModuleOp"> {
  let summary = "Turns each dispatch region into a kernel function";
  let description = [{
    Runs after `flow-form-dispatch-regions`. Every `flow.dispatch_region` of
    a public function becomes a private kernel function
    (`@<function>_k<N>`, marked `flow.kernel`, in program order) and is
    replaced by a `func.call` to it: the values the region reads from above
    are the kernel's operands, the values it returns its results. The host
    schedule keeps what the host runs itself: `flow.constant`,
    `flow.parameter`, `flow.reshape` (a view of its operand's buffer),
    library GEMMs (`flow.matmul` outside a region) and collectives. Splat
    constants are cloned into the kernels that use them; other constants
    are passed as buffers. A compute op outside any region is an error.

    Each kernel records the region's `rows` in `flow.workgroup_extent`: how
    many independent rows it may be split into (1: it runs as a single
    workgroup). When every op of the region is element-wise, the call lists
    in `flow.inplace_operands` the operands of the result's type that the
    region reads only at the result's own positions: the result may take
    over such an operand's buffer (`flow-plan-memory` decides).

    ```mlir
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = flow.dispatch_region rows = 8 -> (tensor<8x16xf32>) {
        %1 = flow.relu %x : tensor<8x16xf32>
        flow.return %1 : tensor<8x16xf32>
      }
      return %0 : tensor<8x16xf32>
    }
    // becomes
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = call @f_k0(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
      return %0 : tensor<8x16xf32>
    }
    func.func private @f_k0(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32>
        attributes {flow.kernel, flow.workgroup_extent = 8 : i64} {
      %0 = flow.relu %arg0 : tensor<8x16xf32>
      return %0 : tensor<8x16xf32>
    }
    ```
  }];
  let statistics = [
    Statistic<"numKernels", "kernels", "Number of kernels outlined">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect",
                           "::mlir::func::FuncDialect"];
}

def DedupKernelsPass : Pass<"flow-dedup-kernels", "ModuleOp"> {
  let summary = "Keeps one kernel of each set of identical kernels";
  let description = [{
    Kernels (`flow.kernel` functions) that are the same function under
    another name (the fusion pass's `flow.fusion_refused` notes and
    locations aside) become one: calls to the others call the first, and
    the others are erased. Repeated blocks of a model (ResNet's residual
    blocks, a transformer's layers) then compile each kernel once. It runs
    first in the host phase, after the compile report has listed every
    kernel the fusion pass formed.

    ```mlir
    func.func private @f_k0(%x: tensor<8xf32>) -> tensor<8xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} { ... }
    func.func private @f_k1(%x: tensor<8xf32>) -> tensor<8xf32> attributes {flow.kernel, flow.workgroup_extent = 8 : i64} { ... same ... }
    // call @f_k1 becomes call @f_k0; @f_k1 is erased
    ```
  }];
  let statistics = [
    Statistic<"numRemoved", "removed", "Number of duplicate kernels erased">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def BoundSymbolicShapesPass : Pass<"flow-bound-symbolic-shapes", "ModuleOp"> {
  let summary = "Compiles symbolic shapes at their upper bounds, with rows "
                "counted at run time";
  let description = [{
    Runs after the kernels are outlined. In a function with size symbols
    (`flow.dims`), every tensor whose only symbolic dimension is its row
    dimension (the first that is not a static 1) becomes a static tensor
    at its upper bound: buffers and the arena are planned for the largest
    call, and the data of a smaller call fills the leading rows, as a
    row-major tensor of the actual size does. What varies is the count of
    rows, and each consumer takes it at run time:

    - a kernel whose rows are symbolic records their extent in
      `flow.row_extent`, takes the call's symbol values
      (`flow.symbols`) as its last input, and runs its workgroups over the
      actual rows only (`flow-distribute-workgroups`);
    - a library `flow.matmul` records the extent of its leading rows in
      `flow.rows`;
    - the function's arguments and results keep their symbolic types in
      `flow.symbolic_type`, which the executable writer records for the
      runtime's checks.

    What this cannot compile yet is refused by name: a symbolic dimension
    after the row dimension, a kernel over rows of two extents or one that
    combines its rows, a convolution, attention or collective on symbolic
    rows.

    ```mlir
    func.func @f(%x: tensor<?x16xf32, #flow.shape<[batch, 16]>>) -> ...
        attributes {flow.dims = [#flow.dim<"batch", 1, 8>]} {
      %0 = call @f_k0(%x) : (...) -> tensor<?x16xf32, #flow.shape<[batch, 16]>>
    // becomes
    func.func @f(%x: tensor<8x16xf32> {flow.symbolic_type = ...}) -> ... {
      %sizes = flow.symbols : tensor<1xi64>
      %0 = call @f_k0(%x, %sizes) : (tensor<8x16xf32>, tensor<1xi64>) -> tensor<8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::flow::FlowDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // FLOW_FUSION_PASSES_TD
