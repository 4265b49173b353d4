//===- HostOps.td - The host dialect: the host schedule ---*- tablegen -*-===//
//
// Part of the Flow project.
//
// The host schedule: what the runtime does, in order, to run one function.
// `flow-build-host-schedule` turns a function of the flow phase (kernel
// calls, library matmuls and collectives on tensors) into these ops on
// memrefs, written in destination style: the function takes its inputs and
// then one buffer per output, each command names the buffers it reads and
// writes, and every transient buffer is a `host.alloc`.
// `flow-plan-memory` then replaces the allocations by slices of one arena.
// The `.fbin` writer serializes the result op by op.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_HOST_IR_HOSTOPS_TD
#define FLOW_DIALECT_HOST_IR_HOSTOPS_TD

include "flow/Dialect/Flow/IR/FlowBase.td"
include "flow/Dialect/Flow/IR/FlowAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// A buffer of the host schedule: static shape, identity layout (checked by
/// the verifiers), a supported element type.
def Flow_HostBuffer : StaticShapeMemRefOf<[F32, F16, BF16, F64, I64, I32, I16,
                                           I8, UI64, UI32, UI16, UI8, I1]>;
/// The arena: bytes.
def Flow_ArenaBuffer : MemRefRankOf<[I8], [1]>;

def Host_Dialect : Dialect {
  let name = "host";
  let cppNamespace = "::mlir::flow";
  let summary = "Flow's host level: the schedule a device runs, on buffers";
  let description = [{
    A public function after the `host` phase is a schedule of `host` ops on
    buffers (memrefs): constants and parameters read in place, one arena
    per function that the memory plan carves into views, kernel dispatches,
    library calls (GEMM, convolution, pooling), copies and collectives. The
    executable writer turns each op into one command of the executable;
    every device runs those commands in order (runtime/src/CommandLoop.h).
    Kernels stay `func.func` ops marked `flow.kernel`.
  }];
  let dependentDialects = ["::mlir::flow::FlowDialect",
                           "::mlir::memref::MemRefDialect"];
}

class Flow_HostOp<string mnemonic, list<Trait> traits = []>
    : Op<Host_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Flow_HostConstantOp : Flow_HostOp<"constant", [Pure]> {
  let summary = "a constant buffer stored in the executable";
  let description = [{
    The bytes of `value` (row-major, one byte per i1), stored in the
    executable and read in place; nothing writes to it.

    ```mlir
    %c = host.constant dense<1.0> : tensor<4xf32> : memref<4xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flow_HostParameterOp : Flow_HostOp<"parameter", [Pure]> {
  let summary = "a weight of the module's parameter archive, read in place";
  let description = [{
    The tensor called `name` in the safetensors archive the module's
    `flow.parameters` attribute names; the runtime maps it at load time.

    With `piece [offsets] of [shape]`, the block of the archive's tensor
    (of that shape) at `offsets` (flow.parameter's piece); with `sbp
    #flow.sbp<...> of [shape]`, the piece the running device holds under
    that SBP, found from its mesh coordinates at load; with both, its piece
    of the block the offsets start.

    ```mlir
    %w = host.parameter "fc1.weight" : memref<784x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_of,
                       OptionalAttr<Flow_SbpAttr>:$piece_sbp,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_sbp_of);
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = [{
    $name (`piece` $piece_offsets^ `of` $piece_of)?
    (`sbp` $piece_sbp^ `of` $piece_sbp_of)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_HostPieceOffsetsOp : Flow_HostOp<"piece_offsets", [Pure]> {
  let summary = "a constant buffer the runtime fills from the device's place";
  let description = [{
    `flow.piece_offsets` on the host: `i64` offsets of the running device's
    piece of a tensor shaped `of` under `sbp` (relative to its piece under
    `within`), written by the runtime when it binds the executable to a
    device of the mesh; nothing writes to it afterwards.

    ```mlir
    %o = host.piece_offsets <[S(0)]> of [8, 6] : memref<2xi64>
    ```
  }];
  let arguments = (ins Flow_SbpAttr:$sbp, OptionalAttr<Flow_SbpAttr>:$within,
                       DenseI64ArrayAttr:$of);
  let results = (outs MemRefRankOf<[I64], [1]>:$result);
  let assemblyFormat = [{
    $sbp (`within` $within^)? `of` $of attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_HostSymbolsOp : Flow_HostOp<"symbols", [Pure]> {
  let summary = "this call's values of the function's size symbols";
  let description = [{
    `flow.symbols` on the host: one `i64` per size symbol of the function
    (its `flow.dims`, in order), which the runtime binds from the call's
    inputs and writes before the first command. Kernels over symbolic rows
    read their row count from it. A library GEMM or a copy over symbolic
    rows carries their extent in `flow.rows` instead.

    ```mlir
    %sizes = host.symbols : memref<2xi64>
    ```
  }];
  let results = (outs MemRefRankOf<[I64], [1]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flow_HostParameterConcatOp : Flow_HostOp<"parameter_concat", [Pure]> {
  let summary = "parameters joined along one axis, once, at bind";
  let description = [{
    The `host.parameter` buffers `parts` concatenated along `axis` (every
    other dimension equal), assembled once by the runtime when it binds the
    executable (after the parts) and read in place afterwards: the weight
    of products joined by `flow-fuse-sibling-matmuls`. Nothing writes to it.

    ```mlir
    %wq = host.parameter "q.weight" : memref<64x64xf32>
    %wk = host.parameter "k.weight" : memref<64x64xf32>
    %w = host.parameter_concat %wq, %wk axis = 1 : memref<64x64xf32>, memref<64x64xf32> -> memref<64x128xf32>
    ```
  }];
  let arguments = (ins Variadic<Flow_HostBuffer>:$parts, I64Attr:$axis);
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = [{
    $parts `axis` `=` $axis attr-dict `:` type($parts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_HostAllocOp : Flow_HostOp<"alloc", [
    MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "a transient buffer, not yet placed";
  let description = [{
    A buffer a command writes and later commands read. It lives from the
    first command that uses it (directly or through a `host.view`) to
    the last; `flow-plan-memory` gives it a slice of the function's arena.
    The executable writer refuses a schedule that still allocates.

    ```mlir
    %t = host.alloc : memref<8x32xf32>
    ```
  }];
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flow_HostArenaOp : Flow_HostOp<"arena", [Pure]> {
  let summary = "the function's arena, with its plan";
  let description = [{
    One per planned host schedule: the bytes every transient buffer is a
    slice of. `plan` records the size next to the lower bound and the
    unplanned total (see `#flow.arena_plan`); the result's length is the
    plan's `bytes`.

    ```mlir
    %arena = host.arena #flow.arena_plan<bytes = 2048,
        lower_bound = 2048, unplanned = 3072,
        heuristic = "size order, best fit"> : memref<2048xi8>
    ```
  }];
  let arguments = (ins Flow_ArenaPlanAttr:$plan);
  let results = (outs Flow_ArenaBuffer:$result);
  let assemblyFormat = "$plan attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flow_HostSliceOp : Flow_HostOp<"slice", [Pure]> {
  let summary = "a transient buffer placed in the arena";
  let description = [{
    The buffer at byte `offset` (a multiple of 64) of `arena`, alive from
    schedule position `first` to `last` (commands are numbered from 1 in
    order). `in_place` marks a buffer that took over the slice of an
    operand dying at the command writing it.

    ```mlir
    %t = host.slice %arena[1024] live [2, 3] : memref<2048xi8> -> memref<256xf32>
    ```
  }];
  let arguments = (ins Flow_ArenaBuffer:$arena, Flow_I64Attr:$offset,
                       Flow_I64Attr:$first, Flow_I64Attr:$last,
                       UnitAttr:$in_place);
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = [{
    $arena `[` $offset `]` `live` `[` $first `,` $last `]` (`in_place` $in_place^)?
    attr-dict `:` type($arena) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Flow_HostViewOp : Flow_HostOp<"view", [Pure]> {
  let summary = "the same bytes under another shape";
  let description = [{
    A reshape on the host: the result reads and writes `source`'s bytes
    (same element type, same number of elements). Commands may write
    through a view; the buffer stays alive while any view of it is used.

    ```mlir
    %v = host.view %t : memref<8x32xf32> -> memref<256xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$source);
  let results = (outs Flow_HostBuffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

def Flow_HostDispatchOp : Flow_HostOp<"dispatch", [
    AttrSizedOperandSegments]> {
  let summary = "runs a kernel over its workgroups";
  let description = [{
    Runs the kernel function `kernel` (outlined by `flow-outline-kernels`)
    on the buffers `inputs`, writing `outputs`; the runtime splits its work
    into workgroups on its thread pool. `in_place_operands` lists the inputs
    whose buffer the first output may share (the kernel is element-wise in
    them). `gemm_epilogue` marks a kernel that is an epilogue of the
    `host.gemm` just before it (set by `flow-fuse-gemm-epilogues`):
    element-wise in that GEMM's result, with one workgroup row per GEMM row,
    so the runtime runs its workgroups tile by tile right after the GEMM's
    pieces of the same rows.

    ```mlir
    host.dispatch @forward_k0(%m, %b) outs(%out)
        : (memref<8x32xf32>, memref<32xf32>) -> (memref<8x32xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       Variadic<Flow_HostBuffer>:$inputs,
                       Variadic<Flow_HostBuffer>:$outputs,
                       OptionalAttr<DenseI64ArrayAttr>:$in_place_operands,
                       UnitAttr:$gemm_epilogue);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` `outs` `(` $outputs `)` attr-dict
    `:` `(` type($inputs) `)` `->` `(` type($outputs) `)`
  }];
  let hasVerifier = 1;
}

def Flow_HostGemmOp : Flow_HostOp<"gemm"> {
  let summary = "a library GEMM: out = act(op(lhs) x op(rhs) + bias), batched";
  let description = [{
    Matrix products on the runtime's GEMM library. Both operands have one
    element type: f32, bf16 or f16; products are summed in f32 and written
    as f32 or as the operands' type (f16 and bf16 results only where the
    target's library runs them: `Target::hasNarrowGemmLibrary`).
    `allow_tf32` (f32 operands only) lets the library multiply in TF32
    (operands rounded to 10-bit mantissas). The last two
    dimensions are the matrices (transposed where `transpose_lhs` or
    `transpose_rhs` is set); leading dimensions are batch dimensions of
    `out`, which `lhs` and `rhs` broadcast to (size 1, or missing).

    An epilogue the library applies as it writes the result (set by
    `flow-library-gemm-epilogues`): the optional `bias` (of the result's
    type, one value per column of `out`) is added to every row, then
    `activation` (`relu`, or
    `gelu_tanh`: GELU's tanh approximation) is applied.

    ```mlir
    host.gemm %a, %w -> %out
        : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
    host.gemm %a, %w bias(%b : memref<32xf32>) -> %out activation = relu
        : memref<8x16xf32>, memref<16x32xf32> -> memref<8x32xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$lhs, Flow_HostBuffer:$rhs,
                       Flow_HostBuffer:$out, UnitAttr:$transpose_lhs,
                       UnitAttr:$transpose_rhs,
                       Optional<Flow_HostBuffer>:$bias,
                       DefaultValuedAttr<Flow_GemmActivationAttr,
                           "::mlir::flow::GemmActivation::none">:$activation,
                       UnitAttr:$allow_tf32);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` `(` $bias^ `:` type($bias) `)`)? `->` $out
    (`activation` `=` $activation^)? attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($out)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rows and columns of `out`'s matrices, and the contracted size.
    int64_t getM();
    int64_t getN();
    int64_t getK();
    /// Whether the library applies an epilogue (a bias or an activation).
    bool hasEpilogue() {
      return getBias() || getActivation() != GemmActivation::none;
    }
  }];
}

def Flow_HostConvOp : Flow_HostOp<"conv", [AttrSizedOperandSegments]> {
  let summary = "a library convolution with its epilogue";
  let description = [{
    A 2-D convolution (f32) on the runtime's convolution library, in the
    form of `flow.conv2d`: `input` `[N, C, H, W]`, `filter`
    `[O, C / groups, KH, KW]`, the optional `bias` `[O]`, written to `out`
    `[N, O, OH, OW]`. Epilogues fused into it (by
    `flow-fuse-conv-epilogues`): `residual` (the same shape as `out`) is
    added, then `relu` clamps at zero.

    `blocked_input`, `blocked_residual` and `blocked_output` (set by
    `flow-choose-conv-layouts`) mean that buffer holds the runtime's
    convolution layout (channels innermost: NHWC, or in blocks of 16 or 8,
    whichever the runtime's library prefers) instead of NCHW: only
    convolutions read and write such a buffer, so no kernel sees it.

    `bf16` (set by `flow-build-host-schedule{bf16-convs}`, for
    `--precision=bf16`) runs the convolution in mixed precision: the
    library reads `input` and `filter` rounded to bf16 and sums the
    products in f32; bias and residual are added in f32. Its blocked
    buffers may then hold bf16 elements (`flow-choose-conv-layouts` stores
    a buffer that only such convolutions touch in bf16, half the bytes);
    every other operand is f32.

    ```mlir
    host.conv %x, %w bias(%b : memref<256xf32>)
        residual(%r : memref<1x256x56x56xf32>) -> %out
        strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1]
        groups = 1 {relu}
        : memref<1x64x56x56xf32>, memref<256x64x1x1xf32>
        -> memref<1x256x56x56xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$input, Flow_HostBuffer:$filter,
                       Optional<Flow_HostBuffer>:$bias,
                       Optional<Flow_HostBuffer>:$residual,
                       Flow_HostBuffer:$out,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, Flow_I64Attr:$groups,
                       UnitAttr:$relu, UnitAttr:$blocked_input,
                       UnitAttr:$blocked_residual, UnitAttr:$blocked_output,
                       UnitAttr:$bf16);
  let assemblyFormat = [{
    $input `,` $filter (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    `->` $out `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations `groups` `=` $groups attr-dict
    `:` type($input) `,` type($filter) `->` type($out)
  }];
  let hasVerifier = 1;
}

def Flow_HostAttentionOp : Flow_HostOp<"attention"> {
  let summary = "fused attention on the runtime's attention library";
  let description = [{
    The host form of `flow.attention`: `out` `[..., Lq, Dv]` =
    `softmax(scale * query key^T + mask) value` for `query` `[..., Lq, D]`,
    `key` `[..., Lk, D]` and `value` `[..., Lk, Dv]` of one element type
    (f32, f16 or bf16; `out` has it too). The optional `mask` broadcasts to
    `[..., Lq, Lk]`: i1 keeps the scores where true, a float mask of the
    element type is added. `causal` hides from query `i` every key `j > i`. A query every key is
    hidden from gets zeros. The runtime never holds the scores whole: it
    walks blocks of keys with an online softmax, summing in f32.

    ```mlir
    host.attention %q, %k, %v mask(%m : memref<2x1x1x128xi1>) -> %o
        scale = 1.250000e-01
        : memref<2x12x128x64xf32>, memref<2x12x128x64xf32>,
          memref<2x12x128x64xf32> -> memref<2x12x128x64xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$query, Flow_HostBuffer:$key,
                       Flow_HostBuffer:$value, Optional<Flow_HostBuffer>:$mask,
                       Flow_HostBuffer:$out, F64Attr:$scale, UnitAttr:$causal);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    `->` $out `scale` `=` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($out)
  }];
  let hasVerifier = 1;
}

def Flow_HostMaxPoolOp : Flow_HostOp<"max_pool"> {
  let summary = "2-D max pooling next to the library convolutions";
  let description = [{
    The host form of `flow.max_pool2d` where it reads or writes a library
    convolution's buffer (made by `flow-library-pools`): the runtime takes
    the maximum over `kernel` windows of `input` `[N, C, H, W]` into `out`
    `[N, C, OH, OW]`, with `strides`, `dilations` (`[h, w]`) and `padding`
    (`[top, left, bottom, right]`; padded positions never win) as in
    `flow.max_pool2d`; `OH` and `OW` follow from them rounded down, or up
    (ceil mode). A NaN in a window wins.

    `blocked_input` and `blocked_output` (set by `flow-choose-conv-layouts`)
    mean that buffer holds the runtime's convolution layout, as for
    `host.conv`: a pool between convolutions keeps their layout, and
    such a buffer may hold bf16 (the maximum of bf16 values is one of
    them). Every other buffer is f32, NCHW.

    ```mlir
    host.max_pool %x -> %y kernel = [3, 3] strides = [2, 2]
        padding = [1, 1, 1, 1] dilations = [1, 1] {blocked_input}
        : memref<1x64x112x112xf32> -> memref<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$input, Flow_HostBuffer:$out,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$blocked_input,
                       UnitAttr:$blocked_output);
  let assemblyFormat = [{
    $input `->` $out `kernel` `=` $kernel `strides` `=` $strides
    `padding` `=` $padding `dilations` `=` $dilations attr-dict
    `:` type($input) `->` type($out)
  }];
  let hasVerifier = 1;
}

def Flow_HostAvgPoolOp : Flow_HostOp<"avg_pool"> {
  let summary = "2-D average pooling next to the library convolutions";
  let description = [{
    The host form of `flow.avg_pool2d` where it reads or writes a library
    convolution's buffer (made by `flow-library-pools`): the runtime
    averages `kernel` windows of `input` `[N, C, H, W]` into `out`
    `[N, C, OH, OW]`, with `strides` (`[h, w]`) and `padding`
    (`[top, left, bottom, right]`, zeros) as in `flow.avg_pool2d`, and its
    divisor: with `count_include_pad` the window's positions up to the end
    padding, else only the real ones; ceil mode's extra positions never
    count. `OH` and `OW` follow rounded down, or up (ceil mode).

    `blocked_input` and `blocked_output` as for `host.max_pool`; a
    blocked buffer may hold bf16 (sums in f32; an average written to bf16
    is rounded, as the bf16 convolution reading it would round it).

    ```mlir
    host.avg_pool %x -> %y kernel = [2, 2] strides = [2, 2]
        padding = [0, 0, 0, 0] {blocked_input, blocked_output}
        : memref<1x64x56x56xf32> -> memref<1x64x28x28xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$input, Flow_HostBuffer:$out,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding, UnitAttr:$count_include_pad,
                       UnitAttr:$blocked_input, UnitAttr:$blocked_output);
  let assemblyFormat = [{
    $input `->` $out `kernel` `=` $kernel `strides` `=` $strides
    `padding` `=` $padding attr-dict `:` type($input) `->` type($out)
  }];
  let hasVerifier = 1;
}

def Flow_HostCopyOp : Flow_HostOp<"copy"> {
  let summary = "copies one buffer's bytes into another";
  let description = [{
    Copies `source` into `target` (the same number of bytes): a function
    output that is an input, a constant, or returned twice.

    ```mlir
    host.copy %t -> %out : memref<256xf32> -> memref<256xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$source, Flow_HostBuffer:$target);
  let assemblyFormat = [{
    $source `->` $target attr-dict `:` type($source) `->` type($target)
  }];
  let hasVerifier = 1;
}

def Flow_HostCollectiveOp : Flow_HostOp<"collective", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a collective over a group of the mesh's devices";
  let description = [{
    The host form of `flow.all_reduce`, `flow.all_gather`,
    `flow.reduce_scatter` and `flow.all_to_all`: reads `input`, writes
    `output`, over the devices that share their coordinates outside
    `mesh_axes`. `reduction` is given for all_reduce and reduce_scatter,
    `dim` for all_gather and reduce_scatter, `split_dim` and `concat_dim`
    for all_to_all.

    An `async` collective only starts here: the commands after it run
    while it is in flight, up to its `host.wait` (set by
    `flow-overlap-collectives`). The runtime runs a process' collectives in
    program order, one at a time, so every device of a group meets them in
    the same order.

    ```mlir
    host.collective all_gather %x -> %out on @mesh axes = [0] {dim = 0 : i64}
        : memref<4x32xf32> -> memref<8x32xf32>
    ```
  }];
  let arguments = (ins Flow_CollectiveKindAttr:$kind, Flow_HostBuffer:$input,
                       Flow_HostBuffer:$output, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$mesh_axes,
                       OptionalAttr<Flow_ReductionKindAttr>:$reduction,
                       OptionalAttr<Flow_I64Attr>:$dim,
                       OptionalAttr<Flow_I64Attr>:$split_dim,
                       OptionalAttr<Flow_I64Attr>:$concat_dim,
                       UnitAttr:$async);
  let assemblyFormat = [{
    $kind $input `->` $output `on` $mesh `axes` `=` $mesh_axes
    (`async` $async^)? attr-dict `:` type($input) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Flow_HostWaitOp : Flow_HostOp<"wait"> {
  let summary = "waits for an asynchronous collective to finish";
  let description = [{
    Waits until the `async` `host.collective` before it in the same
    block that reads `input` and writes `output` has finished: after the
    wait, `output` holds the result and `input` may be written again. Until
    then both buffers are the collective's (no command between the two
    writes `input` or touches `output`; the memory plan keeps both alive
    up to here). Every asynchronous collective has exactly one wait.

    ```mlir
    host.collective all_reduce %g -> %r on @mesh axes = [0] async {reduction = 0 : i32}
        : memref<256xf32> -> memref<256xf32>
    host.dispatch @step_k3(%a) outs(%b) : (memref<64xf32>) -> (memref<64xf32>)
    host.wait %g -> %r : memref<256xf32> -> memref<256xf32>
    ```
  }];
  let arguments = (ins Flow_HostBuffer:$input, Flow_HostBuffer:$output);
  let assemblyFormat = [{
    $input `->` $output attr-dict `:` type($input) `->` type($output)
  }];
  let extraClassDeclaration = [{
    /// The asynchronous collective this waits for, or null.
    HostCollectiveOp getCollective();
  }];
  let hasVerifier = 1;
}

#endif // FLOW_DIALECT_HOST_IR_HOSTOPS_TD
