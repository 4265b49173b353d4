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

def ExpandBf16Pass : Pass<"flow-expand-bf16", "ModuleOp"> {
  let summary = "Computes bf16 in f32 and converts with integer operations, "
                "for CPUs without bf16 conversion instructions";
  let description = [{
    Without AVX-512 BF16 (or AVX-NE-CONVERT), LLVM turns every f32-to-bf16
    rounding into a call to compiler-rt's `__truncsfbf2`, which a kernel
    library has no way to resolve, and which stops its loop from
    vectorizing. This pass leaves no such rounding for LLVM:

    - arith and math ops, `vector.reduction` and `vector.fma` on bf16
      compute in f32: their bf16 operands are widened, their results
      rounded back (what LLVM's own promotion of bf16 does);
    - `arith.truncf` from f64 to bf16 goes through f32;
    - f32-to-bf16 `arith.truncf` (round to nearest even, NaN kept a quiet
      NaN) and bf16-to-f32 `arith.extf` become integer shifts and adds on
      the bits, which vectorize.

    The CPU pipeline runs it when the target CPU converts bf16 in
    software (`flow-kernel-cpu-llvm-pipeline{expand-bf16}`), and
    `flow-hold-bf16-as-i16` after the conversion to LLVM.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def HoldBf16AsI16Pass : Pass<"flow-hold-bf16-as-i16", "ModuleOp"> {
  let summary = "Gives bf16 values of the LLVM dialect the type i16";
  let description = [{
    After `flow-expand-bf16` and the conversion to LLVM, bf16 values are
    only loaded, stored, selected and carried from block to block. LLVM's
    x86 backend without bf16 instructions still promotes such a value to
    f32 where it crosses blocks or is a constant, and rounds it back with a
    call to compiler-rt's `__truncsfbf2`. This pass retypes every bf16
    (scalar, vector, array element) as i16: constants keep their bits,
    bitcasts between bf16 and i16 disappear, address computations keep
    their element size. An op that still computes on bf16 (arithmetic,
    comparisons, conversions) is an error naming it.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
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
