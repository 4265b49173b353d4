//===- Passes.td - Flow CUDA codegen passes -----------------*- tablegen -*-===//
//
// Part of the Flow project.
//
// Kernel codegen for the CUDA target: bufferized kernels mapped onto a grid
// of thread blocks, as gpu.func kernels NVVM lowers to PTX.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CODEGEN_CUDA_PASSES_TD
#define FLOW_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def MapKernelsToGpuPass : Pass<"flow-map-kernels-to-gpu", "ModuleOp"> {
  let summary = "Maps each bufferized kernel onto thread blocks, as a "
                "gpu.func in one gpu.module";
  let description = [{
    Runs on a module of bufferized kernels (`flow.kernel` functions whose
    `linalg.generic` ops read and write memrefs), before they are lowered
    to loops. Each kernel becomes a `gpu.func` kernel in the `gpu.module`
    `@flow_kernels`, with the same bindings (operands, then results), and
    records its launch: `flow.grid` and `flow.block` (3-D), and
    `flow.shared_bytes` (the static shared memory its blocks use).

    Two shapes of kernel are mapped:

    - A kernel tiled into rows (`flow-tile-rows`: one `scf.forall` over the
      rows) runs one row per block. Inside the row, every op spreads its
      elements over the block's threads, each thread taking `v` adjacent
      elements at a time (16-byte vector loads and stores where every
      buffer it touches allows). A reduction of the whole row to one value
      (a softmax's maximum and sum, a norm's mean) keeps one partial value
      per thread and combines them with `gpu.all_reduce` (warp shuffles,
      then shared memory). The row's temporaries live in shared memory,
      and a barrier separates each op from the next. Temporaries beyond
      48 KiB (up to `max-shared-bytes`, the architecture's opt-in limit)
      are views of the block's dynamic shared memory
      (`gpu.dynamic_shared_memory`, its size in
      `flow.dynamic_shared_bytes`); beyond that, global memory.
    - Any other kernel is a sequence of independent ops over whole
      buffers: each op's parallel elements are spread over the whole grid
      (`v` adjacent elements per thread, as above), and its reduction
      dimensions, if any, are loops inside each thread.

    A kernel neither shape fits (a temporary buffer outside a row, a row
    whose temporaries exceed a block's 48 KiB of shared memory, an op that
    is not a `linalg.generic`) is refused with an error naming it and the
    reason.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Widest load or store a thread makes (bytes; 1 turns vector "
           "accesses off)">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t",
           /*default=*/"49152",
           "Shared memory a block may use (bytes): beyond 48 KiB, up to "
           "the architecture's opt-in limit, a row's temporaries are "
           "dynamic shared memory">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SplitGpuReductionsPass : Pass<"flow-split-gpu-reductions", "ModuleOp"> {
  let summary = "Reshapes a kernel's whole-buffer reductions so that they "
                "fill a GPU: rows per block, partial results over the grid";
  let description = [{
    Runs on bufferized kernels, before `flow-map-kernels-to-gpu`. That pass
    gives every output element of a top-level reduction one thread, which
    loops over the reduced elements: a reduction to a few values (a total,
    a bias gradient summed over the batch) runs on a few threads of one
    block and leaves the rest of the GPU idle. This pass rewrites each
    top-level `linalg.generic` reduction whose inputs are contiguous
    buffers read in loop order and whose body combines with an
    associative operation (sum, product, maximum, minimum, bitwise):

    - Reduced dimensions innermost (`[P, R]`, reduced over `R`): rows of
      at least 128 elements become a row tile (`scf.forall` over `P`), a
      row per block, its threads combining their partial values. When the
      rows are too few to fill the GPU (fewer than 264, and at least 4096
      elements each), a first kernel stage computes `S` partial results
      per row over the whole grid, thread `s` combining elements
      `s, s + S, ...` (adjacent threads read adjacent addresses), in a
      scratch buffer `[P, S]`; the row tile then combines each row's `S`
      partials.
    - Reduced dimensions outermost (`[R, P]`, reduced over `R`): threads
      already read adjacent elements; when fewer than 16384 output
      elements leave the GPU idle, `R` is cut into `S` blocks of rows
      whose partial results (`[S, P]`, one thread each) a second stage
      combines.

    `S` is the largest divisor of `R` that keeps the first stage within
    `target-threads` threads and gives each thread at least 16 elements
    (no first stage when no divisor does). The kernel's stages are then separate launches
    (`flow-map-kernels-to-gpu` cuts a kernel at a scratch buffer one op
    writes and a later one reads). Reductions in other shapes are left as
    they are.
  }];
  let options = [
    Option<"targetThreads", "target-threads", "int64_t", /*default=*/"65536",
           "Threads a split reduction's first stage aims for">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def EmulateGpuKernelsPass : Pass<"flow-emulate-gpu-kernels", "ModuleOp"> {
  let summary = "Runs GPU kernels on the CPU: blocks as workgroups, a "
                "block's threads one after another between barriers";
  let description = [{
    Runs on the module `flow-map-kernels-to-gpu` produced. Each kernel of
    `@flow_kernels` becomes a CPU kernel (`func.func` with the CPU's
    calling convention: its bindings, then the workgroup id and count) that
    runs the blocks of its grid, split over workgroups (blocks never wait
    for each other, so any split is valid). Within a block the kernel's
    top-level ops are cut at each `gpu.barrier` and `gpu.all_reduce`: each
    piece runs for thread 0, 1, ... in turn; an all-reduce combines the
    threads' values, in thread order, once all have run the piece before
    it. Values a later piece needs of a thread are computed again there.
    Shared memory is one stack buffer per call.

    This is how the CUDA target's thread mapping is tested on machines
    without a GPU (`--target=cuda-emulated`): a missing barrier, a wrong
    index, a lost element or a reduction combined twice gives wrong
    numbers here as on a GPU. It is slow (every thread runs alone) and
    says nothing about speed.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // FLOW_CODEGEN_CUDA_PASSES_TD
