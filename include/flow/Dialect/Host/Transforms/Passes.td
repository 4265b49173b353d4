//===- Passes.td - The host dialect's passes ---------------*- tablegen -*-===//
//
// Part of the Flow project.
//
// The passes of the host phase: the host schedule built from the flow
// phase's functions, library calls fused and laid out, state tied,
// collectives overlapped and memory planned.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_HOST_TRANSFORMS_PASSES_TD
#define FLOW_DIALECT_HOST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildHostSchedulePass : Pass<"flow-build-host-schedule", "ModuleOp"> {
  let summary = "Turns each host function into its schedule on buffers";
  let description = [{
    Runs on the public functions after `flow-outline-kernels` and rewrites
    each into the host schedule (`flow.host.*` ops on memrefs), in
    destination style:

    - the function takes its inputs and then one buffer per output
      (`flow.host_outputs` counts them) and returns nothing;
    - `flow.constant` and `flow.parameter` become `flow.host.constant` and
      `flow.host.parameter`, `flow.reshape` a `flow.host.view`;
    - each command (a kernel call, a library `flow.matmul`, a collective)
      becomes `flow.host.dispatch`, `flow.host.gemm` or
      `flow.host.collective`, writing each result into a buffer: the
      caller's output buffer when the function returns the result (the
      first time it is returned; through a view when it is returned
      reshaped), otherwise a new `flow.host.alloc`;
    - an output no command wrote (an input, a constant, a value returned
      twice) is filled by a `flow.host.copy` at the end.

    An op the host cannot run is an error naming it. With `bf16-convs`
    (`--precision=bf16`), every `flow.host.conv` is marked `bf16`: the
    library reads its input and filter rounded to bf16 and sums in f32, as
    `flow-matmuls-to-bf16` does for the products that become GEMMs. With
    `allow-tf32` (`--allow-tf32`, CUDA), every f32 `flow.host.gemm` is
    marked `allow_tf32`.

    ```mlir
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = call @f_k0(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
      %1 = call @f_k1(%0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
      return %1 : tensor<8x16xf32>
    }
    // becomes
    func.func @f(%x: memref<8x16xf32>, %out: memref<8x16xf32>)
        attributes {flow.host_outputs = 1 : i64} {
      %0 = flow.host.alloc : memref<8x16xf32>
      flow.host.dispatch @f_k0(%x) outs(%0) : (memref<8x16xf32>) -> (memref<8x16xf32>)
      flow.host.dispatch @f_k1(%0) outs(%out) : (memref<8x16xf32>) -> (memref<8x16xf32>)
      return
    }
    ```
  }];
  let options = [
    Option<"bf16Convs", "bf16-convs", "bool", /*default=*/"false",
           "Run library convolutions in bf16, summed in f32">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "Let f32 library GEMMs multiply in TF32">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def FuseGemmEpiloguesPass : Pass<"flow-fuse-gemm-epilogues", "ModuleOp"> {
  let summary = "Runs element-wise kernels tile by tile with the GEMM before them";
  let description = [{
    On a host schedule, marks `gemm_epilogue` on a `flow.host.dispatch` that
    directly follows a `flow.host.gemm` (one batch, at least two rows) when
    the kernel is element-wise in the GEMM's result (the result is one of
    its `in_place_operands`) and its workgroup rows are the GEMM's rows (its
    `flow.workgroup_extent` is the GEMM's row count). The runtime then runs
    the kernel's workgroup t right after GEMM piece t, on the same thread,
    while those rows are in cache: bias, activation, residual add and scale
    become the library call's epilogue without a generated GEMM. The kernel
    functions must still be in the module (run before they are split off).

    ```mlir
    flow.host.gemm %x, %w -> %t : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
    flow.host.dispatch @f_k0(%t, %b) outs(%out) {in_place_operands = array<i64: 0>}
        : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
    // becomes
    flow.host.dispatch @f_k0(%t, %b) outs(%out) {gemm_epilogue, in_place_operands = ...}
    ```
  }];
  let statistics = [
    Statistic<"numEpilogues", "epilogues", "Number of kernels run as GEMM epilogues">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def LibraryGemmEpiloguesPass
    : Pass<"flow-library-gemm-epilogues", "ModuleOp"> {
  let summary = "Folds bias and activation kernels into library GEMMs";
  let description = [{
    On a host schedule, a `flow.host.dispatch` whose kernel is the epilogue
    the GEMM library applies itself (cuBLASLt's bias and activation
    epilogues) becomes part of the `flow.host.gemm` before it: the kernel
    adds a bias (one f32 per column) to the GEMM's result and/or applies
    `relu` or the tanh form of `gelu`, in that order, and is the only other
    reader of the result. The GEMM then writes the kernel's output, and the
    kernel is not compiled: one launch and one pass over the result fewer.
    A target runs it when its runtime's GEMM library has such epilogues
    (CUDA; the CPU runs its epilogues tile by tile instead,
    `flow-fuse-gemm-epilogues`).

    ```mlir
    flow.host.gemm %x, %w -> %t : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
    flow.host.dispatch @f_k0(%t, %b) outs(%out) : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
    // with @f_k0 = relu(%t + %b) becomes
    flow.host.gemm %x, %w bias(%b : memref<32xf32>) -> %out activation = relu
        : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
    ```
  }];
  let statistics = [
    Statistic<"numFused", "fused", "Number of kernels folded into GEMMs">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def FuseConvEpiloguesPass : Pass<"flow-fuse-conv-epilogues", "ModuleOp"> {
  let summary = "Fuses element-wise kernels into the library convolution before them";
  let description = [{
    On a host schedule, a `flow.host.dispatch` whose kernel only adds a
    tensor of the same shape (a residual) to a `flow.host.conv`'s result
    and/or applies `flow.relu` to it becomes part of that convolution: the
    convolution gains `residual` and `relu` and writes the kernel's output
    itself, and the dispatch and the convolution's own buffer go. The
    convolution's result must be a transient buffer that only that kernel
    reads. The convolution moves to where the kernel was, so a residual
    computed between them (the other branch of a residual block) is ready.
    The kernel functions must still be in the module.

    ```mlir
    flow.host.conv %x, %w bias(%b) -> %t strides = [1, 1] padding = [0, 0, 0, 0]
        dilations = [1, 1] groups = 1 : ...
    flow.host.dispatch @f_k3(%t, %r) outs(%out) : ...   // relu(add(%t, %r))
    // becomes
    flow.host.conv %x, %w bias(%b) residual(%r) -> %out strides = [1, 1]
        padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {relu} : ...
    ```
  }];
  let statistics = [
    Statistic<"numFused", "epilogues", "Number of kernels fused into convolutions">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def LibraryPoolsPass : Pass<"flow-library-pools", "ModuleOp"> {
  let summary = "Runs pooling next to library convolutions on the runtime";
  let description = [{
    On a host schedule, a `flow.host.dispatch` whose kernel is one
    `flow.max_pool2d` or `flow.avg_pool2d` (f32, no other op) becomes a
    `flow.host.max_pool` or `flow.host.avg_pool` when it reads a buffer a
    `flow.host.conv` or a library pool writes, or writes one a
    `flow.host.conv` reads. The runtime then pools
    in the convolutions' own layout (`flow-choose-conv-layouts` keeps the
    buffers blocked, channels innermost), where a generated kernel would
    need the buffers NCHW: the library would reorder the data out of its
    layout and back, and a strided window over NCHW rows does not
    vectorize. Kernels no dispatch runs any more are erased. Pools that
    touch no convolution's buffer stay kernels.

    ```mlir
    flow.host.conv %x, %w -> %t ... {relu}
    flow.host.dispatch @main_k1(%t) outs(%p) : ...   // flow.max_pool2d
    flow.host.conv %p, %w2 -> %y ...
    // becomes
    flow.host.conv %x, %w -> %t ... {relu}
    flow.host.max_pool %t -> %p kernel = [3, 3] strides = [2, 2]
        padding = [1, 1, 1, 1] dilations = [1, 1] : ...
    flow.host.conv %p, %w2 -> %y ...
    ```
  }];
  let statistics = [
    Statistic<"numPools", "pools", "Number of pooling kernels run on the runtime">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def ChooseConvLayoutsPass : Pass<"flow-choose-conv-layouts", "ModuleOp"> {
  let summary = "Keeps buffers only convolutions and pools touch in the library's own layout";
  let description = [{
    A transient buffer (`flow.host.alloc`) of f32 `[N, C, H, W]` with `C` a
    multiple of 16 whose every user is a `flow.host.conv` reading it as
    input or residual or writing it as output, or a library pool
    (`flow.host.max_pool`, `flow.host.avg_pool`) reading or writing it, is
    held in the runtime's convolution layout
    (the one its library prefers: NHWC, or channels in blocks of 16 or 8):
    each such use is marked (`blocked_input`, `blocked_residual`,
    `blocked_output`). Between convolutions (and the pools among them) the
    data then never changes layout; the runtime reorders only where a
    convolution meets a plain buffer (a kernel's, the caller's or a
    constant). Filters, biases, views and every buffer a kernel, copy or
    collective touches stay plain.

    A blocked buffer that `bf16` convolutions read or write, and nothing
    else but pools (they read it as an input rounded to bf16 anyway; a
    max pool's maximum of bf16 values is one of them, and an average pool
    averages the bf16 values and rounds where the convolution would), is
    held in bf16: its
    `flow.host.alloc` becomes a bf16 memref of the same shape, half the
    bytes to write and read. A residual added from such a buffer is then
    rounded to bf16 too.

    ```mlir
    %t = flow.host.alloc : memref<1x64x56x56xf32>
    flow.host.conv %x, %w1 -> %t ... {relu}
    flow.host.conv %t, %w2 -> %y ...
    // becomes
    flow.host.conv %x, %w1 -> %t ... {blocked_output, relu}
    flow.host.conv %t, %w2 -> %y ... {blocked_input}
    ```
  }];
  let statistics = [
    Statistic<"numBlocked", "blocked-buffers", "Number of buffers kept blocked">,
    Statistic<"numBf16", "bf16-buffers", "Number of blocked buffers held in bf16">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def PlanMemoryPass : Pass<"flow-plan-memory", "ModuleOp"> {
  let summary = "Places every transient buffer of a host schedule in one arena";
  let description = [{
    Runs on the host schedules `flow-build-host-schedule` built. Commands
    are numbered from 1 in order; each `flow.host.alloc` lives from the
    first command that uses it to the last one that uses it or a view of
    it. With `in-place`, a dispatch's first output takes over the buffer of
    an input listed in its `in_place_operands` when that input dies at the
    dispatch. It is off by default: measured, it made ResNet-50's arena
    larger (14.5 MB against 13.6) and its kernels slower (51-53 ms against
    48), since a kernel whose input and output alias fails LLVM's run-time
    overlap checks and runs its scalar loop. A `flow.host.conv` always
    writes over its residual when the residual dies there and has the
    output's type and layout: the runtime's library then adds the
    destination's contents (a sum post-op) instead of reading a second
    buffer.

    The offsets come from the arena planner (flow/Support/MemoryPlan.h):
    four packing orders, the smallest arena kept, and a check that no two
    buffers alive at once overlap (an unsound plan is an error). The pass
    puts one `flow.host.arena` at the top of the function, recording the
    plan (`#flow.arena_plan<bytes, lower_bound, unplanned, heuristic>`),
    and replaces each allocation by a `flow.host.slice` of it with its
    offset and live range. The `.fbin` writer serializes these as they are.

    ```mlir
    %0 = flow.host.alloc : memref<256xf32>
    flow.host.dispatch @f_k0(%x) outs(%0) : (memref<256xf32>) -> (memref<256xf32>)
    flow.host.dispatch @f_k1(%0) outs(%out) : (memref<256xf32>) -> (memref<256xf32>)
    // becomes
    %arena = flow.host.arena #flow.arena_plan<bytes = 1024,
        lower_bound = 1024, unplanned = 1024, heuristic = "..."> : memref<1024xi8>
    %0 = flow.host.slice %arena[0] live [1, 2] : memref<1024xi8> -> memref<256xf32>
    ...
    ```
  }];
  let options = [
    Option<"inPlace", "in-place", "bool", /*default=*/"false",
           "Let element-wise kernels write over an operand dying at them">
  ];
  let statistics = [
    Statistic<"numInPlace", "in-place-values", "Number of values computed in place">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def OverlapCollectivesPass : Pass<"flow-overlap-collectives", "ModuleOp"> {
  let summary = "Starts collectives early and waits for them late";
  let description = [{
    Runs on host schedules before `flow-plan-memory`. A collective placed
    by `flow-partition` sits just before the op that needs its result, so
    the devices compute, then communicate, then compute again. This pass
    lets them overlap:

    1. A collective whose output is no larger than its input (all-reduce,
       reduce-scatter, all-to-all) moves up to just after the last command
       it depends on: the one writing its input, or one using its output
       buffer. It never moves above another collective, so every device
       still meets the collectives in the same order. A data-parallel
       step's gradient all-reduces then start as soon as each gradient is
       computed instead of all at the end. All-gathers stay where they are
       (moved up, a gathered weight would stay alive longer).
    2. A collective with at least one command between it and the first
       command that reads its output or writes its input becomes `async`,
       and a `flow.host.wait` is put before that command (or before the
       return). The runtime runs the collective on a communication thread
       while the commands in between run.

    First, an all-reduce whose input is a transient buffer that nothing
    reads after it reduces in place (its output is its input): a gradient
    in flight then holds one buffer, not two, and no copy is made. The
    memory plan keeps the buffers of a collective in flight alive up to
    its wait. `hoist=false` keeps every collective in its place (no step
    1).

    ```mlir
    flow.host.gemm %dy, %x -> %gw ...
    flow.host.gemm %dy, %w -> %dx ...
    flow.host.collective all_reduce %gw -> %r on @mesh axes = [0] {reduction = 0 : i32} ...
    flow.host.dispatch @sgd(%w, %r) outs(%w2) ...
    // becomes
    flow.host.gemm %dy, %x -> %gw ...
    flow.host.collective all_reduce %gw -> %gw on @mesh axes = [0] async {reduction = 0 : i32} ...
    flow.host.gemm %dy, %w -> %dx ...
    flow.host.wait %gw -> %gw ...
    flow.host.dispatch @sgd(%w, %gw) outs(%w2) ...
    ```
  }];
  let options = [
    Option<"hoist", "hoist", "bool", /*default=*/"true",
           "Move reductions up to just after what they depend on">
  ];
  let statistics = [
    Statistic<"numInPlace", "in-place", "All-reduces written over their input">,
    Statistic<"numHoisted", "hoisted", "Collectives moved up">,
    Statistic<"numAsync", "async", "Collectives made asynchronous">,
    Statistic<"numOverlapped", "overlapped-commands", "Commands that run while a collective is in flight">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

def TieStatePass : Pass<"flow-tie-state", "ModuleOp"> {
  let summary = "Writes each state's next value into its input buffer, in place";
  let description = [{
    Runs on host schedules before `flow-plan-memory`. A function whose
    argument and result carry the same `flow.state` name (a parameter, an
    optimizer moment, the step count: see `flow-apply-optimizer`) computes
    the state's next value from its current one. This pass makes the
    command that writes the output buffer write the input buffer instead,
    so a runtime that keeps the state between calls updates it where it
    lies: no output buffer, no copy. That is sound when every command
    reading the old value runs before the write, or the write is the last
    reader and an element-wise kernel (one of its `in_place_operands`,
    of the output's type). Otherwise the value is computed into a transient
    buffer and copied into the input after every command (one copy, never
    a wrong read). An output that is its input unchanged loses its copy.

    The output buffer is marked `flow.tied_input = i` (its input's
    position) and no command uses it; the executable lists the pair in its
    state table (docs/training.md).

    ```mlir
    func.func @step(%w: memref<4xf32> {flow.state = "w"}, %g: memref<4xf32>,
                    %out: memref<4xf32> {flow.state = "w"})
        attributes {flow.host_outputs = 1 : i64} {
      flow.host.dispatch @sgd(%w, %g) outs(%out) {in_place_operands = array<i64: 0>} ...
    // becomes
      flow.host.dispatch @sgd(%w, %g) outs(%w) {in_place_operands = array<i64: 0>} ...
    // with %out {flow.state = "w", flow.tied_input = 0 : i64}
    ```
  }];
  let statistics = [
    Statistic<"numInPlace", "tied-in-place", "States written in place by their last reader or after it">,
    Statistic<"numCopied", "tied-copied", "States computed aside and copied into their input">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect", "::mlir::flow::HostDialect"];
}

#endif // FLOW_DIALECT_HOST_TRANSFORMS_PASSES_TD
