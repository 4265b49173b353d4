//===- Passes.td - Flow CPU codegen passes ------------------*- tablegen -*-===//
//
// Part of the Flow project.
//
// Kernel codegen for the CPU target: math for vector units and the entry
// points the CPU runtime calls.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_CODEGEN_CPU_PASSES_TD
#define FLOW_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApproximateMathPass : Pass<"flow-approximate-math", "ModuleOp"> {
  let summary = "Replaces libm calls with vectorizable polynomials";
  let description = [{
    Rewrites f32 `math.exp`, `math.log`, `math.tanh`, `math.erf` and their
    relatives into MLIR's polynomial approximations (a few ulp from the
    correctly rounded result), so that kernel loops containing them
    vectorize instead of calling libm once per element. `math.sin` and
    `math.cos` stay libm calls: the polynomial's argument reduction loses
    accuracy as the argument grows (5e-5 at |x| = 1000), and rotary
    position embeddings take them that far.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def EmitKernelEntriesPass : Pass<"flow-emit-kernel-entries", "ModuleOp"> {
  let summary = "Gives each lowered kernel the runtime's C entry point and "
                "the library its ABI table";
  let description = [{
    Runs on the LLVM dialect, after kernels were lowered with the bare-pointer
    memref convention. For kernel `@k` with buffer arguments `p0..pn-1` it
    adds `void @k_entry(ptr bindings, i64 wg, i64 nwg)`, which loads
    `bindings[i]` and calls `@k(p0, ..., wg, nwg)`; `@k` becomes internal so
    LLVM inlines it. The runtime calls every kernel through this one
    signature.

    It also adds the exported constant `@flow_kernel_abi` (layout in the
    runtime's `flow/runtime/KernelAbi.h`): per entry point its name, its
    address, and the `flow.binding_sizes` / `flow.num_outputs` recorded by
    `flow-record-kernel-abi`. The runtime checks the executable's metadata
    against this table after loading the library. A kernel without those
    attributes, or whose buffer count disagrees with them, is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // FLOW_CODEGEN_CPU_PASSES_TD
