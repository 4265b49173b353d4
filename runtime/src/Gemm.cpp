//===- Gemm.cpp - Flow's own f32 GEMM micro-kernels -----------------------===//
//
// Part of the Flow project.
//
// Blocking (per call, single-threaded):
//
//   for each block of kKc rows of op(B)          (pc)
//     for each block of kMc rows of op(A)        (ic)  A block: L2
//       for each panel of kGemmNr columns        (jp)  B panel: kKc x 16, L1
//         for each group of up to 6 rows of the block  micro-kernel
//
// The micro-kernel keeps up to 6 x 16 of C in twelve ymm registers and
// reads one broadcast of A and two vectors of B per multiply-add step. A
// is read in place (a transposed A is copied block by block first). Rows
// past C's edge are a smaller instance of the kernel; columns past it are
// computed on the packing's zeros and only their valid part is written.
// Later blocks of k add to C.
//
// Chosen by measurement on an AVX2 AMD EPYC (docs/compile-and-run.md):
// alone on one core, in cache, 76 to 89 GFLOP/s of the core's 89 measured
// FMA peak; in BERT-base b1 (C of 128 rows) about 10% faster than oneDNN
// 2.6.3's JIT SGEMM, which repacks B at every call.
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "AlignedBuffer.h"
#include "flow/runtime/CpuFeatures.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

constexpr int kMr = 6;
constexpr int64_t kKc = 384;
constexpr int64_t kMc = 144; // a multiple of kMr

bool cpuHasAvx2Fma() { return cpuHasFeature("avx2") && cpuHasFeature("fma"); }

/// Copies rows [ic, ic + mc) and columns [pc, pc + kc) of op(A) for
/// A = transposed: row-major, kc floats per row.
void packTransposedA(const float *a, int64_t lda, int64_t ic, int64_t pc,
                     int64_t mc, int64_t kc, float *out) {
  // op(A)[i][p] = A[p][i]: read A's rows, write the block's columns.
  for (int64_t p = 0; p < kc; ++p) {
    const float *src = a + (pc + p) * lda + ic;
    for (int64_t i = 0; i < mc; ++i)
      out[i * kc + p] = src[i];
  }
}

/// C rows [0, R) x 16 columns (row stride ldc) = or += A rows [0, R) (row
/// stride lda) x a packed B panel, over kc. R accumulator pairs stay in
/// registers; A is read in place, one broadcast per row and step.
template <int R>
__attribute__((target("avx2,fma"))) void
kernel(int64_t kc, const float *a, int64_t lda, const float *b, float *c,
       int64_t ldc, bool accumulate) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, b += kGemmNr) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      __m256 x = _mm256_broadcast_ss(a + r * lda + p);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float *row = c + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(row));
      acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(row + 8));
    }
    _mm256_storeu_ps(row, acc[r][0]);
    _mm256_storeu_ps(row + 8, acc[r][1]);
  }
}

/// A tile of \p rows (1 to kMr) x 16 columns.
void tile(int64_t rows, int64_t kc, const float *a, int64_t lda, const float *b,
          float *c, int64_t ldc, bool accumulate) {
  switch (rows) {
  case 1:
    return kernel<1>(kc, a, lda, b, c, ldc, accumulate);
  case 2:
    return kernel<2>(kc, a, lda, b, c, ldc, accumulate);
  case 3:
    return kernel<3>(kc, a, lda, b, c, ldc, accumulate);
  case 4:
    return kernel<4>(kc, a, lda, b, c, ldc, accumulate);
  case 5:
    return kernel<5>(kc, a, lda, b, c, ldc, accumulate);
  default:
    return kernel<6>(kc, a, lda, b, c, ldc, accumulate);
  }
}

/// A tile narrower than 16 columns (C's last panel): computed into a
/// spare tile, then its first \p cols columns written (or added).
void narrowTile(int64_t rows, int64_t cols, int64_t kc, const float *a,
                int64_t lda, const float *b, float *c, int64_t ldc,
                bool accumulate) {
  alignas(64) float spare[kMr * kGemmNr];
  tile(rows, kc, a, lda, b, spare, kGemmNr, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + spare[r * kGemmNr + j]
                                  : spare[r * kGemmNr + j];
}

/// This thread's scratch memory, grown on demand (never shrunk).
float *scratch(AlignedBuffer &buffer, size_t floats) {
  if (buffer.size() < floats * sizeof(float)) {
    if (!buffer.allocate(floats * sizeof(float)))
      std::abort(); // out of memory for a few hundred kilobytes
  }
  return reinterpret_cast<float *>(buffer.data());
}

} // namespace

namespace flow {
namespace runtime {
namespace detail {

bool flowGemmEnabled() {
  static const bool enabled = [] {
    if (!cpuHasAvx2Fma())
      return false;
    const std::string choice =
        std::getenv("FLOW_GEMM") ? std::getenv("FLOW_GEMM") : "";
    if (choice == "flow")
      return true;
    if (!choice.empty()) // FLOW_GEMM=onednn or openblas: the library only
      return false;
    // Where AVX-512 is present the library's AVX-512 kernels were measured
    // and kept; on an AVX2 CPU Flow's kernel measured faster for C of up
    // to kFlowGemmMaxRows rows (docs/compile-and-run.md).
    return !cpuHasFeature("avx512f");
  }();
  return enabled;
}

std::string flowGemmInfo() {
  if (flowGemmEnabled())
    return std::string("Flow's ") + flowGemmKernel() +
           " kernel for constant B and C of 2 to " +
           std::to_string(kFlowGemmMaxRows) +
           " rows (B packed once per session)";
  if (!cpuHasAvx2Fma())
    return "off (Flow's kernel needs AVX2 and FMA)";
  if (const char *choice = std::getenv("FLOW_GEMM"))
    return std::string("off (FLOW_GEMM=") + choice + ")";
  return "off (the library's AVX-512 kernels run instead)";
}

const char *flowGemmKernel() { return "avx2+fma 6x16"; }

size_t packedBFloats(int64_t k, int64_t n) {
  return static_cast<size_t>((n + kGemmNr - 1) / kGemmNr) * k * kGemmNr;
}

void packB(bool transB, int64_t k, int64_t n, const float *b, int64_t ldb,
           float *out) {
  const int64_t panels = (n + kGemmNr - 1) / kGemmNr;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    for (int64_t jp = 0; jp < panels; ++jp, out += kc * kGemmNr) {
      const int64_t j0 = jp * kGemmNr;
      const int64_t cols = std::min<int64_t>(kGemmNr, n - j0);
      if (!transB) {
        for (int64_t p = 0; p < kc; ++p) {
          const float *src = b + (pc + p) * ldb + j0;
          float *dst = out + p * kGemmNr;
          std::memcpy(dst, src, cols * sizeof(float));
          std::fill(dst + cols, dst + kGemmNr, 0.0f);
        }
        continue;
      }
      // op(B)[p][j] = B[j][p]: read each column's row of B contiguously.
      for (int64_t j = 0; j < kGemmNr; ++j) {
        if (j >= cols) {
          for (int64_t p = 0; p < kc; ++p)
            out[p * kGemmNr + j] = 0.0f;
          continue;
        }
        const float *src = b + (j0 + j) * ldb + pc;
        for (int64_t p = 0; p < kc; ++p)
          out[p * kGemmNr + j] = src[p];
      }
    }
  }
}

void gemmPacked(bool transA, int64_t m, int64_t n, int64_t k, const float *a,
                int64_t lda, const PackedB &b, int64_t firstColumn, float *c,
                int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  static thread_local AlignedBuffer aScratch;
  float *packedA = transA ? scratch(aScratch, size_t(kMc) * kKc) : nullptr;
  const int64_t panels = (n + kGemmNr - 1) / kGemmNr;
  const int64_t allPanels = (b.n + kGemmNr - 1) / kGemmNr;
  const int64_t firstPanel = firstColumn / kGemmNr;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    const bool accumulate = pc > 0;
    // This block of k's panels, from the piece's first: one contiguous
    // stream the hardware prefetcher can run ahead of.
    const float *blockB =
        b.data + pc * allPanels * kGemmNr + firstPanel * kc * kGemmNr;
    for (int64_t ic = 0; ic < m; ic += kMc) {
      const int64_t mc = std::min(kMc, m - ic);
      // Row-major A is read in place; a transposed one is copied first.
      const float *block = a + ic * lda + pc;
      int64_t ldBlock = lda;
      if (transA) {
        packTransposedA(a, lda, ic, pc, mc, kc, packedA);
        block = packedA;
        ldBlock = kc;
      }
      for (int64_t jp = 0; jp < panels; ++jp) {
        const float *bp = blockB + jp * kc * kGemmNr;
        const int64_t cols = std::min<int64_t>(kGemmNr, n - jp * kGemmNr);
        float *cc = c + ic * ldc + jp * kGemmNr;
        for (int64_t r0 = 0; r0 < mc; r0 += kMr) {
          const int64_t rows = std::min<int64_t>(kMr, mc - r0);
          const float *ap = block + r0 * ldBlock;
          if (cols == kGemmNr)
            tile(rows, kc, ap, ldBlock, bp, cc + r0 * ldc, ldc, accumulate);
          else
            narrowTile(rows, cols, kc, ap, ldBlock, bp, cc + r0 * ldc, ldc,
                       accumulate);
        }
      }
    }
  }
}

} // namespace detail
} // namespace runtime
} // namespace flow
