//===- Blas.h - The BLAS library GEMMs run on -------------------*- C++ -*-===//
//
// Part of the Flow project.
//
// GEMM commands run on oneDNN's JIT SGEMM when libdnnl is installed (unless
// FLOW_GEMM=openblas), else on OpenBLAS; matrix-vector products (m = 1)
// always run on OpenBLAS. Both are loaded at the first session that needs
// them. OpenBLAS picks its kernels once, when it is loaded, from the processor's
// model; an OpenBLAS older than the processor falls back to its generic
// kernels (several times slower). So unless the user set
// OPENBLAS_CORETYPE, Flow chooses the kernels from the CPU's features
// (AVX-512 with BF16, AVX-512, AVX2 with FMA) and sets the variable for the
// load only. Which kernels run is always OpenBLAS's own answer
// (openblas_get_corename), reported by `flow-run --stats` and by Python's
// `flow.blas_info()`.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_BLAS_H
#define FLOW_RUNTIME_BLAS_H

#include "flow/runtime/Status.h"

#include <string>

namespace flow {
namespace runtime {

struct BlasInfo {
  /// What runs the GEMMs: "oneDNN 2.6.3" with its instruction set
  /// ("avx512_core_amx JIT"), or OpenBLAS (then the same as below).
  std::string gemmLibrary, gemmKernels;
  /// What runs bf16 x bf16 -> f32 GEMMs (--precision=bf16): oneDNN's bf16
  /// GEMM, or the f32 GEMM on operands widened to f32 where oneDNN has no
  /// bf16 GEMM for this CPU (it needs AVX-512).
  std::string bf16Gemm;
  /// What runs on Flow's own GEMM kernel ("Flow's avx2+fma 6x16 kernel for
  /// constant B and C of 2 to 256 rows ..."), or "off (why)".
  std::string flowGemm;
  /// What runs convolution commands, with the blocked layout it keeps
  /// activations in: "oneDNN 2.6.3, nhwc", or Flow's reference path.
  std::string convLibrary;
  /// OpenBLAS and its build ("OpenBLAS 0.3.21 DYNAMIC_ARCH ...").
  std::string library;
  /// The kernels it runs ("SkylakeX", "Haswell", "Prescott"...).
  std::string kernels;
  /// Why those: "chosen by Flow from the CPU's features (avx512f ...)",
  /// "OPENBLAS_CORETYPE=...", "OpenBLAS's own choice".
  std::string chosenBy;
  /// Set when the kernels are weaker than the CPU supports.
  std::string warning;
};

/// Loads the BLAS (once per process) and says what it runs; an error when
/// it cannot be loaded.
StatusOr<BlasInfo> loadBlas();

/// The OpenBLAS kernel set Flow picks for a CPU with these features, empty
/// when OpenBLAS's generic choice is the best (exposed for tests).
std::string chooseOpenBlasCore(bool avx2, bool fma, bool avx512f,
                               bool avx512bw, bool avx512vl, bool avx512dq,
                               bool avx512bf16);

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_BLAS_H
