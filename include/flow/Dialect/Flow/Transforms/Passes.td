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

def FuseSiblingMatmulsPass
    : Pass<"flow-fuse-sibling-matmuls", "func::FuncOp"> {
  let summary = "Joins matrix products of one input by weights of the "
                "parameter archive into one";
  let description = [{
    Matrix products that read the same `lhs` with 2-D weights of the
    parameter archive (the query, key and value projections of attention;
    the gate and up projections of a gated MLP) become one product with the
    weights concatenated along their output axis, and a slice of its result
    for each. The weights are joined once, when the runtime binds the
    executable (a `flow.concat` of parameters stays on the host and becomes
    one constant), so each call runs one GEMM of n = n1 + n2 + ... instead
    of several smaller ones: fewer launches on a GPU, wider panels on a CPU.

    Products join when they share `lhs`, `transpose_lhs`, `transpose_rhs`,
    `accumulate_f32` and element types, their weights are parameters (or
    pieces of them) of one rank-2 shape up to the output axis, and they are
    in one block.

    ```mlir
    %q = flow.matmul %x, %wq : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %k = flow.matmul %x, %wk : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    // becomes
    %w = flow.concat %wq, %wk axis = 1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x128xf32>
    %qk = flow.matmul %x, %w : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
    %q = flow.slice %qk starts = [0, 0] limits = [8, 64] strides = [1, 1] : tensor<8x128xf32> -> tensor<8x64xf32>
    %k = flow.slice %qk starts = [0, 64] limits = [8, 128] strides = [1, 1] : tensor<8x128xf32> -> tensor<8x64xf32>
    ```
  }];
  let statistics = [
    Statistic<"numJoined", "joined", "Number of matrix products joined into "
              "another">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

def DecomposeAttentionPass
    : Pass<"flow-decompose-attention", "func::FuncOp"> {
  let summary = "Expands flow.attention into matmul, softmax and matmul";
  let description = [{
    For targets without an attention library (`Target::hasAttentionLibrary`)
    each `flow.attention` becomes the ops it stands for: the scores
    `flow.matmul` (key transposed), the scale, the mask and the causal mask
    as `flow.select` or `flow.add`, `flow.softmax` (with zeros for a query
    that every key is hidden from), and the `flow.matmul` by the value. The
    kernels then fuse them as any other ops.

    ```mlir
    %o = flow.attention %q, %k, %v scale = 1.250000e-01
        : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>)
        -> tensor<1x4x8x64xf32>
    // becomes
    %s = flow.matmul %q, %k {transpose_rhs} : ... -> tensor<1x4x8x8xf32>
    %c = flow.constant dense<1.250000e-01> : tensor<f32>
    %t = flow.mul %s, %c : ...
    %p = flow.softmax %t axis = 3 : tensor<1x4x8x8xf32>
    %o = flow.matmul %p, %v : ... -> tensor<1x4x8x64xf32>
    ```
  }];
  let statistics = [
    Statistic<"numExpanded", "expanded", "Number of attention ops expanded">
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
    products, summed in f32) f16 and bf16 convolutions are rewritten too;
    with `narrow-library` as well (a convolution library that runs them)
    only those padded asymmetrically.

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
           "Rewrite f16 and bf16 convolutions too, for a GEMM library that "
           "runs f16 and bf16 products (whatever their padding, unless "
           "narrow-library)">,
    Option<"narrowLibrary", "narrow-library", "bool", /*default=*/"false",
           "With only-asymmetric, f16 and bf16 convolutions padded "
           "symmetrically stay for the library too (cuDNN runs them)">
  ];
  let statistics = [
    Statistic<"numConvs", "convolutions", "Number of convolutions rewritten">,
    Statistic<"numSplit", "split-convolutions",
              "Number of convolutions run in pieces">
  ];
  let dependentDialects = ["::mlir::flow::FlowDialect"];
}

#endif // FLOW_DIALECT_FLOW_TRANSFORMS_PASSES_TD
