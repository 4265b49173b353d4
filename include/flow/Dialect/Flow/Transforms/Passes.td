//===- Passes.td - Flow graph passes -----------------------*- tablegen -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD
#define FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"flow-autodiff", "ModuleOp"> {
  let summary = "Appends the gradients of a scalar loss to a function's results";
  let description = [{
    Reverse-mode differentiation. For every function with arguments marked
    `flow.requires_grad`, the first result is the loss (a float tensor of
    one element); the pass builds, after the forward ops, the ops computing
    the loss's gradient with respect to each marked argument, and returns
    them after the existing results, in argument order. Each gradient result
    is marked `flow.gradient_of = N` (the argument's position) and the
    arguments lose their mark, so running the pass again changes nothing.

    The backward ops come from each op's `GradientOpInterface` rule (its
    vector-Jacobian product), applied last op first; a value used several
    times sums its gradients. Only ops both reached from a marked argument
    and reaching the loss are differentiated. An op on that path without a
    rule is an error naming it; a marked argument the loss does not depend
    on gets a zero gradient and a warning.

    ```mlir
    func.func @loss(%x: tensor<4x8xf32>,
                    %w: tensor<8x2xf32> {flow.requires_grad}) -> tensor<f32> {
      %y = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = flow.reduce_sum %y [0, 1] : tensor<4x2xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    // becomes @loss(%x, %w) -> (tensor<f32>, tensor<8x2xf32> {flow.gradient_of = 1})
    // returning the loss and x^T * ones(4, 2).
    ```

    **Recompute.** A forward value the backward reads is kept from the
    forward pass until that read. For the ops named by `recompute` (op
    names such as `flow.gelu`, or `elementwise` for every element-wise op)
    and by the function's `flow.recompute` attribute (an array of the same
    strings), the backward reads a copy of the op built just before its
    first backward reader instead, so the forward value dies with its last
    forward reader: memory for compute. Chains recompute whole (a copy's
    operands made by recomputed ops are copies too); only ops without
    regions or side effects are copied.
  }];
  let options = [
    ListOption<"recompute", "recompute", "std::string",
               "op names (or `elementwise`) the backward recomputes instead "
               "of reading the forward pass's values">
  ];
  let statistics = [
    Statistic<"numOpsDifferentiated", "ops-differentiated",
              "Number of forward ops whose gradient rule ran">,
    Statistic<"numOpsRecomputed", "ops-recomputed",
              "Number of forward ops copied into the backward pass">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def ApplyOptimizerPass : Pass<"flow-apply-optimizer", "ModuleOp"> {
  let summary = "Turns a function's gradients into an optimizer step on its state";
  let description = [{
    For every function with a `flow.optimizer` dictionary, after
    `flow-autodiff`: each gradient result (`flow.gradient_of = N`) is
    replaced by argument N's next value under the optimizer, and the
    optimizer's own state (moments, the step count) is added as arguments
    and results. A training step is then a function from state and a batch
    to the loss and the next state: an argument and a result with the same
    `flow.state` name are one value across steps (the runtime keeps it
    resident). Parameters keep their `flow.state` name, or get `argN`;
    moments are named `<parameter>.<moment>` and start at zero
    (`flow.state_init = "zeros"`). The learning rate is a new argument
    (`flow.learning_rate`), so a schedule needs no recompile.

    Settings (`flow.optimizer` entries, floats unless noted):
    - `kind` (string): `"sgd"` or `"adamw"`.
    - sgd: `momentum` (0), `weight_decay` (0, added to the gradient as in
      torch.optim.SGD); state `momentum_buffer` when momentum is not 0.
    - adamw: `beta1` (0.9), `beta2` (0.999), `eps` (1e-8), `weight_decay`
      (0.01, decoupled, as torch.optim.AdamW); state `exp_avg`,
      `exp_avg_sq` and the step count `optimizer.step`, with torch's bias
      correction.
    - `max_grad_norm` (0: off): every gradient scaled by
      `min(1, max_grad_norm / (norm + 1e-6))`, where `norm` is the global
      L2 norm of all gradients (torch.nn.utils.clip_grad_norm_).
    - `skip_nonfinite` (bool, false): a step whose loss is not finite keeps
      every state's old value.
    - `shard_state` (bool, false): on a mesh, ZeRO-style moments (below).

    On a mesh (`flow.mesh`), a parameter's moments are laid out as the
    parameter (its `flow.sbp`, B when absent); with `shard_state` they are
    also split over the mesh's first axis, along the first dimension no
    other axis splits that has at least as many elements as the axis has
    devices. Each gradient is pinned (`flow.annotate`) to that layout
    before clipping and the update read it, so a partial gradient is
    reduced once: all-reduced for a replicated update, reduce-scattered for
    a sharded one.

    ```mlir
    func.func @step(%x: tensor<4x8xf32>,
                    %w: tensor<8x2xf32> {flow.requires_grad, flow.state = "w"})
        -> tensor<f32> attributes {flow.optimizer = {kind = "sgd", momentum = 0.9}} {...}
    // after flow-autodiff and flow-apply-optimizer:
    // (%x, %w {flow.state = "w"}, %lr {flow.learning_rate},
    //  %buf {flow.state = "w.momentum_buffer", flow.state_init = "zeros"})
    //   -> (loss, w' {flow.state = "w"}, buf' {flow.state = "w.momentum_buffer"})
    ```
  }];
  let options = [
    Option<"freeLayouts", "free-layouts", "bool", /*default=*/"false",
           "Auto-parallel: leave the layout of the moments and gradients of "
           "parameters without a flow.sbp to the SBP planner (no pins)">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def PropagateSbpPass : Pass<"flow-propagate-sbp", "func::FuncOp"> {
  let summary = "Gives every value of a mesh function an SBP";
  let description = [{
    For functions with a `flow.mesh`, chooses an nd-SBP signature for every
    op, greedily in program order: among the op's valid signatures (its
    per-axis rules from `SbpOpInterface`, multiplied over the mesh axes and
    filtered by size), the one whose operands are cheapest to box into
    from the SBPs they already have; ties go to the signature that splits
    the op's work over the most devices. Then a refinement looks at users
    too: an op moves to another of its signatures, alone or with its users
    (each re-placed at its best for the op's new signature), when that
    lowers the boxing time of the values it touches as their users want
    them (a value is boxed once per distinct layout wanted) plus the ops'
    times (each the longer of its work at the device's FLOP/s and its
    pieces' bytes at the memory's bandwidth), sweeping until no move helps.
    `search=exact` also finds the optimum of the same measure with each use
    of a value boxed on its own, by variable elimination (exact;
    transformer layers in a chain cost time linear in their number), and
    on a mesh of several axes also one axis at a time (each axis exact
    given the ones before it), refines each, and keeps the cheapest plan;
    where no elimination fits its budget it falls back to greedy+refine;
    the report says which ran. Times come from the mesh description
    `mesh-spec` (a preset, `cpu-mpi` by default, or a JSON file: per mesh
    axis a bandwidth and a per-call latency, per device f32 FLOP/s, memory
    and memory bandwidth; see MeshSpec.h). Where a plan needs more memory
    per device than `memory-limit` (with `free-arguments`, the device's
    memory by default), memory
    is priced in the measure (arguments and parameters by their pieces,
    activations at their peak over program order) and the price raised
    until the plan fits; a plan that cannot fit is an error. It turns a
    reduce-scatter and an all-gather around a norm into one all-reduce,
    and a result pinned split pulls the split back to
    the inputs where nothing needs to move. Function arguments keep their
    `flow.sbp` (B when absent, unless `free-arguments` is set: then the
    search places them too, as auto-parallel does) and `flow.annotate` pins its result. Each op
    records its choice as `flow.sbp` (results) and `flow.operand_sbp`
    (what each operand must be boxed to); results without a `flow.sbp` get
    all-B, so every device receives the whole result, except a state's next
    value (a result whose `flow.state` names an argument), which gets that
    argument's SBP: a training step's parameters and moments stay in the
    layout each device keeps them in, and are updated where they lie.

    Marking only the batch as split gives data parallelism; marking weights
    as split gives tensor parallelism:

    ```mlir
    flow.mesh @mesh [2]
    func.func @mlp(%x: tensor<8x16xf32> {flow.sbp = #flow.sbp<[S(0)]>},
                   %w: tensor<16x4xf32>) -> tensor<8x4xf32>
        attributes {flow.mesh = @mesh} {
      %y = flow.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
    // %y: flow.operand_sbp = [S(0), B], flow.sbp = [S(0)]; the result is
    // marked [B] (all-gathered by flow-partition).
    ```
  }];
  let options = [
    Option<"printRules", "print-rules", "bool", /*default=*/"false",
           "Emit a remark listing each op's per-axis rules (for tests)">,
    Option<"search", "search", "std::string", /*default=*/"\"refine\"",
           "How plans are searched: greedy, refine (greedy then local "
           "moves; the default), exact (the optimum of the measure with "
           "each use boxed on its own, by variable elimination, refined; "
           "greedy+refine where the elimination would not fit) or "
           "exhaustive (every combination, at most 10^6: an oracle for "
           "tests)">,
    Option<"freeArguments", "free-arguments", "bool", /*default=*/"false",
           "Auto-parallel: also choose the layout of arguments without a "
           "flow.sbp, and report the same measure of plain data parallel "
           "and tensor parallel (the best of the three is kept)">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "Bytes per device a plan may use (0: none, or with "
           "free-arguments the device memory of the mesh description, "
           "warned about rather than refused); memory is priced in until "
           "the plan fits">,
    Option<"meshSpec", "mesh-spec", "std::string", /*default=*/"\"cpu-mpi\"",
           "The mesh description costs are timed on: a preset (cpu-mpi, "
           "h100-nvlink, h200-nvlink, h100-nodes) or a JSON file">
  ];
  let statistics = [
    Statistic<"numOpsPlaced", "ops-placed", "Number of ops given an SBP">,
    Statistic<"numOpsMoved", "ops-moved",
              "Number of moves the refinement made">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def PartitionPass : Pass<"flow-partition", "ModuleOp"> {
  let summary = "Rewrites mesh functions into the programs each device runs";
  let description = [{
    Runs after `flow-propagate-sbp`. For every device of a function's mesh,
    writes the function that device runs: every value has the shape of the
    device's piece (a dimension of N split over p devices gives the first
    N mod p devices one more element), and wherever an operand's SBP is not
    the one its consumer needs, boxing ops are inserted, one mesh axis at a
    time over that axis' devices: S -> B all-gather, P -> B all-reduce,
    P -> S reduce-scatter, S(i) -> S(j) all-to-all, B -> S a
    `flow.dynamic_slice` of the device's own piece (of a weight: the
    parameter's piece, read once at load), B -> P the value on the axis'
    first device and zeros elsewhere (B -> P(max) is the value); other
    pairs go through B. Each op writes itself for the device through the
    partition hook of its SBP interface (a mean over a split axis becomes
    the device's sum over the global count, a softmax over a split axis
    reduces partial statistics, ...). A collective identical to an earlier
    one (the same boxing of the same value, needed by several consumers) is
    emitted once.
    Function arguments and results keep their `flow.sbp` (results: B by
    default), so a device receives its piece of each input and returns its
    piece of each result.

    The program is SPMD: where a device's position enters the computation
    (the offsets of a B -> S piece, the first device of B -> P, the rows a
    vocabulary-parallel gather holds), it reads `flow.piece_offsets`, which
    the runtime fills in for the device running it. Devices therefore
    differ only in the shapes of their pieces: with even splits all share
    one function, with uneven ones devices whose pieces have the same
    shapes share one (an axis of p devices splitting lengths with k
    distinct remainders mod p gives at most k + 1). Each function lists
    its devices in `flow.ranks` (row-major ranks of the mesh) and names its
    global function in `flow.partition_of`. When all devices share one
    function it keeps the global name, otherwise the functions are named
    `<name>_r<first rank>`.

    ```mlir
    // flow.mesh @tp [2]; %w2 row-split, %h column-split:
    %y = flow.matmul %h, %w2 {flow.operand_sbp = [S(1), S(0)], flow.sbp = [P]} ...
    return %y  // result [B]
    // becomes, on each device
    %y = flow.matmul %h, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
    %r = flow.all_reduce sum %y on @tp axes = [0] : tensor<8x16xf32>
    return %r
    ```
  }];
  let statistics = [
    Statistic<"numMergedCollectives", "merged-collectives",
              "Collectives that repeated an earlier identical one">,
    Statistic<"numDevicePrograms", "device-programs",
              "Number of distinct device functions written">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def CheckIndexInputsPass : Pass<"flow-check-index-inputs", "func::FuncOp"> {
  let summary = "Marks arguments a gather reads as indices, for a check at "
                "run time";
  let description = [{
    A gather clamps an index outside its input's dimension into range (no
    read leaves the tensor), which would turn a bad token id or class
    target into a silent wrong answer; PyTorch raises. This pass finds the
    function arguments whose values reach the indices of a `flow.gather` or
    `flow.gather_elements` unchanged: directly, through reshapes,
    broadcasts, transposes and widening integer casts, through a loss's
    `select(compare ne(x, c), x, k)` (so `c`, an ignore_index, is allowed
    too), or through `select(compare lt(x, 0), add(x, n), x)` (negative
    indices counting from the end, as ONNX's: `lower = -n`). Each gets
    `flow.index_check = {bound, lower?, ignore?, what}`; the
    executable lists them and the runtime checks every call's value before
    it runs. An argument read by several gathers gets the smallest bound.
    Indices computed inside the program are not checked.

    ```mlir
    func.func @f(%t: tensor<64x8xf32>, %ids: tensor<4xi64>) -> tensor<4x8xf32> {
      %e = flow.gather %t[%ids] axis = 0 : (tensor<64x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
      return %e : tensor<4x8xf32>
    }
    // after: %ids: tensor<4xi64> {flow.index_check = {bound = 64 : i64, what = "flow.gather at ..."}}
    ```
  }];
  let statistics = [
    Statistic<"numChecked", "checked-arguments",
              "Arguments marked for an index check">
  ];
}

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

def MatmulsToBf16Pass : Pass<"flow-matmuls-to-bf16", "func::FuncOp"> {
  let summary = "Runs f32 matrix products in bf16, summed in f32";
  let description = [{
    Mixed precision for the CPUs with bf16 arithmetic (AVX-512 BF16, AMX):
    every `flow.matmul` on f32 (convolutions too, after
    `flow-conv-to-gemm`) reads its operands rounded to bf16 and sums the
    products in f32 (`accumulate_f32`); its result, and everything that is
    not a matrix product (norms, softmax, element-wise ops), stays f32.
    Operands are converted where it costs least:

    - a constant is converted at compile time;
    - a weight of the parameter archive is read as bf16 (the runtime
      converts the f32 tensor once, when it loads the executable);
    - a view of either is a view of the converted value;
    - anything else gets a `flow.cast`, which fusion puts in the kernel
      that computes it (that kernel then writes bf16, half the bytes).

    ```mlir
    %w = flow.parameter "fc.weight" : tensor<256x128xf32>
    %y = flow.matmul %x, %w : (tensor<8x256xf32>, tensor<256x128xf32>) -> tensor<8x128xf32>
    // becomes
    %w16 = flow.parameter "fc.weight" : tensor<256x128xbf16>
    %x16 = flow.cast %x : tensor<8x256xf32> to tensor<8x256xbf16>
    %y = flow.matmul %x16, %w16 {accumulate_f32}
        : (tensor<8x256xbf16>, tensor<256x128xbf16>) -> tensor<8x128xf32>
    ```
  }];
  let statistics = [
    Statistic<"numMatmuls", "matmuls", "Number of matrix products run in bf16">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def ConvToGemmPass : Pass<"flow-conv-to-gemm", "func::FuncOp"> {
  let summary = "Rewrites f32 convolutions as im2col and a matrix product";
  let description = [{
    A `flow.conv2d` on `f32` becomes `flow.im2col` (skipped for a 1x1,
    stride-1, unpadded kernel, where the input already is the matrix), a
    batched `flow.matmul` of the weight `[G, O / G, C / G * KH * KW]` with the
    columns `[N, G, C / G * KH * KW, OH * OW]`, reshapes, and the bias as a
    broadcast add. The matrix product then runs as a library GEMM.

    Columns that would take more than `max-columns-bytes` (default 2 MiB,
    about one core's L2 cache; 0: no limit) are not made at once: the
    convolution runs in pieces, a block of output rows of every image at a
    time (at most 8 pieces), each piece's im2col cropping the input rows it
    does not read (a negative padding) and padding those beyond the input,
    and `flow.concat` joins the pieces' products. The columns of a piece die at its matrix product, so
    the memory plan reuses them, and they are written and read while they
    are still in cache.

    With `only-asymmetric` (the CUDA targets, whose cuDNN takes one
    padding per dimension) only convolutions padded differently on the two
    sides of a dimension are rewritten; the rest stay `flow.conv2d` for the
    library. With `narrow` (targets whose GEMM library runs f16 and bf16
    products, summed in f32) f16 and bf16 convolutions are rewritten too.

    ```mlir
    %y = flow.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1]
        dilations = [1, 1] groups = 1
        : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32>
    // becomes
    %c = flow.im2col %x kernel = [3, 3] ... -> tensor<1x8x3x3x16x16xf32>
    %m = flow.reshape %c : ... -> tensor<1x1x72x256xf32>
    %k = flow.reshape %w : tensor<16x8x3x3xf32> -> tensor<1x16x72xf32>
    %p = flow.matmul %k, %m : (...) -> tensor<1x1x16x256xf32>
    %y = flow.reshape %p : tensor<1x1x16x256xf32> -> tensor<1x16x16x16xf32>
    ```
  }];
  let options = [
    Option<"maxColumnsBytes", "max-columns-bytes", "int64_t",
           /*default=*/"2097152",
           "Largest im2col buffer of one piece, in bytes (0: no limit)">,
    Option<"onlyAsymmetric", "only-asymmetric", "bool", /*default=*/"false",
           "Rewrite only convolutions whose padding differs between the "
           "two sides of a dimension (the rest stay for a library that "
           "takes symmetric padding only, such as cuDNN)">,
    Option<"narrow", "narrow", "bool", /*default=*/"false",
           "Rewrite f16 and bf16 convolutions too (whatever their padding), "
           "for a GEMM library that runs f16 and bf16 products">
  ];
  let statistics = [
    Statistic<"numConvs", "convolutions", "Number of convolutions rewritten">,
    Statistic<"numSplit", "split-convolutions",
              "Number of convolutions run in pieces">
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
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
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

#endif // FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD
