//===- Gemm.h - Flow's own f32 GEMM micro-kernels ---------------*- C++ -*-===//
//
// Part of the Flow project.
//
// C = op(A) op(B) in f32, row-major, in the BLIS structure: op(B) packed in
// panels (once per session when B is a constant), op(A) read in place
// (copied per block when transposed), and a register-blocked micro-kernel
// over them. Two kernel sets: AVX2 and FMA (6 x 16, twelve ymm
// accumulators) and AVX-512 (8 x 48, twenty-four zmm accumulators); the
// panel width is the kernel's. Single-threaded: the session cuts a GEMM
// into pieces on its own pool (runGemm in Session.cpp), each a call here.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_GEMM_H
#define FLOW_RUNTIME_SRC_GEMM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace flow {
namespace runtime {
namespace detail {

/// The instruction sets Flow's kernels are written for.
enum class GemmIsa { Avx2, Avx512 };

/// Whether this CPU (and its OS) runs \p isa's kernels: AVX2 and FMA, or
/// AVX-512F.
bool cpuRunsGemmIsa(GemmIsa isa);
/// Columns per packed panel of B for \p isa's kernels (a piece of a split
/// GEMM starts at a multiple of this): 16 or 48.
int gemmPanelColumns(GemmIsa isa);
/// "avx2+fma 6x16" or "avx512f 8x48": the instruction set and register
/// block.
const char *gemmKernelName(GemmIsa isa);

/// The kernels Flow runs (some) GEMMs on here, or null when the library
/// runs them all: AVX-512 where present, else AVX2 and FMA (each measured
/// faster than the library for constant B and few rows of C,
/// docs/compile-and-run.md). FLOW_GEMM=onednn or openblas turns them off;
/// FLOW_GEMM=flow keeps them on.
const GemmIsa *flowGemmIsa();
inline bool flowGemmEnabled() { return flowGemmIsa() != nullptr; }
/// Flow's kernels run GEMMs whose C has at most this many rows (in all
/// batches); the library runs larger ones. Measured at BERT-base b8's 1024
/// rows: on AVX2 the library was 13% faster; on AVX-512 (Zen 5) the two
/// were level, and the packed copy of B is memory the library does not
/// take.
constexpr int64_t kFlowGemmMaxRows = 256;
/// What runs on Flow's kernels, or why nothing does (for the stats).
std::string flowGemmInfo();

/// Floats of op(B) (k x n) packed for \p isa: ceil(n / panel) panels (the
/// last one's missing columns zero) for each block of k.
size_t packedBFloats(GemmIsa isa, int64_t k, int64_t n);
/// Packs op(B) (k x n; B is n x k when transposed) for \p isa into \p out
/// (64-byte aligned, packedBFloats(isa, k, n) floats): blocks of the GEMM's
/// k-block rows, each holding every panel's rows of that block, so that the
/// panels one piece of C reads in a block are one contiguous stream.
void packB(GemmIsa isa, bool transB, int64_t k, int64_t n, const float *b,
           int64_t ldb, float *out);

/// op(B) as packB wrote it for \p isa.
struct PackedB {
  const float *data;
  int64_t k, n;
  GemmIsa isa;
};

/// C[m x n] = op(A) (m x k) times columns [firstColumn, firstColumn + n) of
/// \p b (firstColumn a multiple of gemmPanelColumns(b.isa)), on b.isa's
/// kernels.
void gemmPacked(bool transA, int64_t m, int64_t n, int64_t k, const float *a,
                int64_t lda, const PackedB &b, int64_t firstColumn, float *c,
                int64_t ldc);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_GEMM_H
