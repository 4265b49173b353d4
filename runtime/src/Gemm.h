//===- Gemm.h - Flow's own f32 GEMM micro-kernels ---------------*- C++ -*-===//
//
// Part of the Flow project.
//
// C = op(A) op(B) in f32, row-major, in the BLIS structure: op(B) packed in
// panels of kGemmNr columns (once per session when B is a constant), op(A)
// read in place (copied per block when transposed), and a register-blocked
// micro-kernel of 6 x kGemmNr (AVX2 and FMA: twelve accumulators) over
// them. Single-threaded: the session cuts a GEMM into pieces on its own
// pool (runGemm in Session.cpp), each a call here.
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

/// Columns per packed panel of B (a piece of a split GEMM starts at a
/// multiple of this).
constexpr int kGemmNr = 16;

/// Flow's kernels run GEMMs whose C has at most this many rows (in all
/// batches); the library runs larger ones.
constexpr int64_t kFlowGemmMaxRows = 256;

/// Whether Flow's kernels run (some) GEMMs on this CPU: they need AVX2
/// and FMA, and are chosen where they measured faster than the library (on
/// CPUs without AVX-512). FLOW_GEMM=onednn or openblas turns them off;
/// FLOW_GEMM=flow turns them on wherever AVX2 and FMA are present.
bool flowGemmEnabled();
/// What runs on Flow's kernels, or why nothing does (for the stats).
std::string flowGemmInfo();
/// "avx2+fma 6x16" (the kernel's instruction set and register block).
const char *flowGemmKernel();

/// Floats of op(B) (k x n) packed: ceil(n / kGemmNr) panels of kGemmNr
/// columns (the last one's missing columns zero) for each block of k.
size_t packedBFloats(int64_t k, int64_t n);
/// Packs op(B) (k x n; B is n x k when transposed) into \p out (64-byte
/// aligned, packedBFloats(k, n) floats): blocks of the GEMM's k-block rows,
/// each holding every panel's rows of that block, so that the panels one
/// piece of C reads in a block are one contiguous stream.
void packB(bool transB, int64_t k, int64_t n, const float *b, int64_t ldb,
           float *out);

/// op(B) as packB wrote it.
struct PackedB {
  const float *data;
  int64_t k, n;
};

/// C[m x n] = op(A) (m x k) times columns [firstColumn, firstColumn + n) of
/// \p b (firstColumn a multiple of kGemmNr).
void gemmPacked(bool transA, int64_t m, int64_t n, int64_t k, const float *a,
                int64_t lda, const PackedB &b, int64_t firstColumn, float *c,
                int64_t ldc);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_GEMM_H
