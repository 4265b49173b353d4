//===- Passes.td - Flow kernel codegen passes ---------------*- tablegen -*-===//
//
// Part of the Flow project.
//
// Kernel codegen that every target shares: after the kernels are lowered to
// linalg, on buffers and loops (the kernel ABI, copies, workgroups).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CODEGEN_COMMON_PASSES_TD
#define FLOW_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecordKernelAbiPass : Pass<"flow-record-kernel-abi", "ModuleOp"> {
  let summary = "Records each kernel's buffers before bufferization";
  let description = [{
    Runs on the outlined kernels (`func.func` with `flow.kernel`) while they
    still take and return tensors. Each gets `flow.binding_sizes`: the bytes
    of every buffer the runtime will pass it (operands, then results, which
    bufferization turns into trailing out-parameters; one byte per `i1`),
    and `flow.num_outputs`: how many of them it writes. The host schedule
    writer and `flow-emit-kernel-entries` read these, so the metadata in the
    executable and the table inside the kernel library come from one rule.
    Every operand is marked `bufferization.writable = false`: a kernel reads
    its operands and writes only its results, so a kernel that updates a
    tensor in place (a scatter) copies its operand first.

    ```mlir
    func.func @k(%a: tensor<4xf32>) -> tensor<4xf32>
        attributes {flow.kernel, flow.binding_sizes = array<i64: 16, 16>,
                    flow.num_outputs = 1 : i64}
    ```
  }];
}

def CopiesToLinalgPass : Pass<"flow-copies-to-linalg", "ModuleOp"> {
  let summary = "Turns memref.copy into linalg.copy";
  let description = [{
    `memref.copy` between non-contiguous views would lower to a call into
    MLIR's C runner library, which a Flow kernel library cannot depend on.
    As `linalg.copy` it becomes loops like every other linalg op (and is
    split over workgroups with them).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def DistributeWorkgroupsPass : Pass<"flow-distribute-workgroups", "ModuleOp"> {
  let summary = "Splits each kernel's loops over a grid of workgroups";
  let description = [{
    Runs on kernels (`flow.kernel` functions) after bufferization and
    conversion to `scf.parallel` loops. Every kernel gets two trailing
    `index` arguments, the workgroup id and the workgroup count, so all
    kernels share one calling convention. When the kernel's
    `flow.workgroup_extent` is N > 1 and every top-level `scf.parallel`
    starts with a dimension of N iterations, workgroup `w` of `n` runs rows
    `[w * N / n, (w + 1) * N / n)` of each; otherwise the kernel runs whole
    in every call and the runtime launches it once. The result is recorded
    in `flow.max_workgroups`. A buffer the kernel writes and reads back
    must stay with its rows: every access indexes its rows by the split
    loop's variable, directly or through a view of one row at that
    variable (a row tile's slice of the result); `flow.scratch` buffers
    are each workgroup's own.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c16) step (%c1, %c1) { ... }
    // becomes, with %wg and %nwg the new arguments
    %lo = arith.divui (%wg * 8), %nwg
    %hi = arith.divui ((%wg + 1) * 8), %nwg
    scf.parallel (%i, %j) = (%lo, %c0) to (%hi, %c16) step (%c1, %c1) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def FuseElementwisePass : Pass<"flow-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuses each kernel's element-wise linalg ops into as few "
                "loop nests as their iteration spaces allow";
  let description = [{
    Runs on kernels in linalg form. First the patterns of
    `linalg-fuse-elementwise-ops` (an element-wise producer with one reader
    fused into it; one with several is computed again in each, as
    upstream does; reshapes folded by expansion; constants folded). Then,
    in a kernel without reductions, element-wise ops left side by side over
    the same iteration space are merged into one multi-result
    `linalg.generic`, built where the later one is (so the earlier one's
    results must not be read before it): one pass over memory instead of
    one per op, and after `canonicalize` and `cse` a value both computed is
    computed once. An optimizer's update (the second moment read by the
    weight's update and written back as state) was three loop nests over
    the same rows. Kernels with reductions are left to `flow-tile-rows`.

    ```mlir
    %p = linalg.generic ... ins(%a, %c) { addf, mulf }   // 4x8
    %r = linalg.generic ... ins(%a, %b) { addf, subf }   // 4x8
    // becomes
    %f:2 = linalg.generic ... ins(%a, %c, %a, %b) { addf, mulf, addf, subf }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::affine::AffineDialect"];
}

def ReassociateReductionsPass
    : Pass<"flow-reassociate-reductions", "ModuleOp"> {
  let summary = "Lets floating-point reductions be summed in any order, so "
                "they vectorize";
  let description = [{
    Runs on kernels in linalg form. In every `linalg.generic` with a
    reduction iterator, the floating-point ops that combine an element into
    the accumulator (`arith.addf`, `arith.mulf`, `arith.maximumf`,
    `arith.minimumf`, `arith.maxnumf`, `arith.minnumf` with the output
    block argument as an operand) get the `reassoc` fast-math flag. Without
    it LLVM must add the elements of a row one after another, in scalar
    code; with it the loop vectorizer keeps one partial result per vector
    lane and combines them at the end, as every vectorized library
    reduction (PyTorch's, oneDNN's) does. The result may differ from the
    sequential sum in the last bits; maximum and minimum are unchanged
    (they are associative, NaN included). Integer reductions are exact
    either way and are left alone.

    ```mlir
    %s = linalg.generic {... iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<4x128xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %a = arith.addf %out, %in fastmath<reassoc> : f32
      linalg.yield %a : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileRowsPass : Pass<"flow-tile-rows", "ModuleOp"> {
  let summary = "Computes a kernel with a reduction one row at a time";
  let description = [{
    Runs on kernels in linalg form. A kernel with a reduction (a softmax, a
    norm, with their prologue and epilogue) is several loop nests, each over
    the whole tensor: the softmax of BERT's attention scores made five
    passes over 786 KB per workgroup, more than the cache holds. This pass
    tiles the kernel's last op (its one result, element-wise) into tiles of
    one row, where a row is the trailing dimensions its reductions combine,
    and fuses every producer into the tile (`scf.forall`): each row's
    maximum, sum and normalization then run while the row is in cache.
    Producers used by several ops of the tile are computed for each (an
    element-wise prologue is cheap; a reduction is never split). A kernel
    with several results is tiled when the others are computed on the way
    to the last (a layer norm and its bf16 copy for the next GEMM): the
    tile loop yields them all. Kernels whose reductions do not combine
    trailing dimensions of the result's shape, or whose results are apart,
    are left as they are.

    A kernel that pads its input (a pooling window, a convolution computed
    in a kernel) is tiled the same way by its leading dimensions that every
    op runs in parallel and indexes as itself, and that the pad leaves
    alone (batch and channels of an NCHW pooling): the padded copy is then
    one row's plane instead of a copy of the whole input (3.3 MB for
    ResNet-50's max pooling, made by every workgroup).

    After bufferization `flow-kernel-scratch` gives each tile's temporary
    buffers one place per workgroup, and `flow-distribute-workgroups`
    splits the tile loop's rows as it splits any other loop.

    ```mlir
    // before: %max, %sum over tensor<8x12x128x128xf32>, then %y
    %y = scf.forall (%i, %j, %k) in (8, 12, 128) shared_outs(%o = %init) {
      // the row's slice of x, its max and sum (1x1x1x1), its result
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numTiled", "kernels-tiled", "Number of kernels tiled by rows">
  ];
}

def KernelScratchPass : Pass<"flow-kernel-scratch", "ModuleOp"> {
  let summary = "One place per workgroup for the temporaries of tiled "
                "kernels";
  let description = [{
    Runs on bufferized kernels. An allocation inside a loop (a tile's
    temporary row, from `flow-tile-rows`) moves to the kernel's entry: on
    the stack when it has at most 64 KiB, else on the heap (freed by the
    deallocation pass). Each call of a kernel is one workgroup on one
    thread and runs its loops in order, and a buffer allocated inside a
    loop holds nothing from one iteration to the next, so one buffer per
    call serves every iteration. The moved allocation is marked
    `flow.scratch`: `flow-distribute-workgroups` knows each workgroup has
    its own.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ByteBooleansPass : Pass<"flow-byte-booleans", "ModuleOp"> {
  let summary = "Kernels read and write boolean buffers as bytes";
  let description = [{
    Runs on kernels in linalg form, before element-wise fusion. A boolean
    tensor argument or result (`i1`, one byte per element in Flow's
    buffers) becomes `i8` at the kernel's boundary, with an `arith.trunci`
    after each read and an `arith.extui` before each write, which fusion
    folds into the ops that use them. The buffers hold the same bytes
    either way; what changes is the code LLVM makes: a vector of `i1`
    loaded from memory is assembled one bit at a time (about five
    instructions per element, a third of the attention softmax's time
    with a mask), a vector of bytes is one load and one compare.

    ```mlir
    func.func private @k(%m: tensor<4x8xi1>, ...) attributes {flow.kernel}
    // becomes
    func.func private @k(%m: tensor<4x8xi8>, ...) attributes {flow.kernel} {
      %b = linalg.generic ... ins(%m : tensor<4x8xi8>) { arith.trunci ... }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // FLOW_CODEGEN_COMMON_PASSES_TD
