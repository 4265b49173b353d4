//===- Gemm.cpp - Flow's own f32 GEMM micro-kernels -----------------------===//
//
// Part of the Flow project.
//
// Blocking (per call, single-threaded):
//
//   for each block of kKc rows of op(B)          (pc)
//     for each block of kMc rows of op(A)        (ic)  A block: L2
//       for each panel of nr columns             (jp)  B panel: kKc x nr
//         for each group of up to mr rows of the block  micro-kernel
//
// The micro-kernel keeps up to mr x nr of C in registers and reads one
// broadcast of A and nr / (vector width) vectors of B per multiply-add
// step: AVX2 and FMA 6 x 16 (twelve ymm accumulators), AVX-512 8 x 48
// (twenty-four zmm accumulators, three B vectors, the broadcast folded into
// the multiply-add). A is read in place (a transposed A is copied block by
// block first). Rows past C's edge are a smaller instance of the kernel;
// columns past it are computed on the packing's zeros and only their valid
// part is written. Later blocks of k add to C.
//
// Chosen by measurement (docs/compile-and-run.md):
// - AVX2, on an AVX2 AMD EPYC (Zen 3): alone on one core, in cache, 76 to
//   89 GFLOP/s of the core's 89 measured FMA peak; in BERT-base b1 (C of
//   128 rows) about 10% faster than oneDNN 2.6.3's JIT SGEMM, which repacks
//   B at every call.
// - AVX-512, on an AMD EPYC with AVX-512 (Zen 5, 245 GFLOP/s FMA peak per
//   core): of the register blocks 4x64, 6x64, 8x32, 12x32, 14x32, 7x48,
//   8x48 and 9x48 (k-blocks of 128 to 768), 8x48 with k-blocks of 384 was
//   the fastest, 190 to 230 GFLOP/s on one core for BERT-base's shapes.
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "AlignedBuffer.h"
#include "flow/runtime/CpuFeatures.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

constexpr int64_t kKc = 384;
constexpr int64_t kMc = 144; // a multiple of every kernel's mr

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
kernelAvx2(int64_t kc, const float *a, int64_t lda, const float *b, float *c,
           int64_t ldc, bool accumulate) {
  constexpr int kNr = 16;
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, b += kNr) {
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

/// The AVX-512 kernel: C rows [0, R) x 48 columns, three zmm accumulators
/// per row.
template <int R>
__attribute__((target("avx512f,avx2,fma"))) void
kernelAvx512(int64_t kc, const float *a, int64_t lda, const float *b,
             float *c, int64_t ldc, bool accumulate) {
  constexpr int kNr = 48;
  __m512 acc[R][3];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = acc[r][2] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, b += kNr) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16),
           b2 = _mm512_load_ps(b + 32);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 x = _mm512_set1_ps(a[r * lda + p]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float *row = c + r * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) {
      if (accumulate)
        acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_loadu_ps(row + 16 * v));
      _mm512_storeu_ps(row + 16 * v, acc[r][v]);
    }
  }
}

using TileFn = void (*)(int64_t rows, int64_t kc, const float *a, int64_t lda,
                        const float *b, float *c, int64_t ldc,
                        bool accumulate);

/// A tile of \p rows (1 to R) x nr columns: the kernel instance for
/// exactly that many rows.
template <int R, template <int> class Kernel>
void tileOf(int64_t rows, int64_t kc, const float *a, int64_t lda,
            const float *b, float *c, int64_t ldc, bool accumulate) {
  if constexpr (R > 1)
    if (rows < R)
      return tileOf<R - 1, Kernel>(rows, kc, a, lda, b, c, ldc, accumulate);
  Kernel<R>::run(kc, a, lda, b, c, ldc, accumulate);
}

template <int R> struct Avx2 {
  static void run(int64_t kc, const float *a, int64_t lda, const float *b,
                  float *c, int64_t ldc, bool accumulate) {
    kernelAvx2<R>(kc, a, lda, b, c, ldc, accumulate);
  }
};
template <int R> struct Avx512 {
  static void run(int64_t kc, const float *a, int64_t lda, const float *b,
                  float *c, int64_t ldc, bool accumulate) {
    kernelAvx512<R>(kc, a, lda, b, c, ldc, accumulate);
  }
};

/// One instruction set's kernels.
struct KernelSet {
  int mr, nr;
  TileFn tile;
  const char *name;
};

constexpr int kMaxMr = 8, kMaxNr = 48;
const KernelSet kAvx2{6, 16, tileOf<6, Avx2>, "avx2+fma 6x16"};
const KernelSet kAvx512{8, 48, tileOf<8, Avx512>, "avx512f 8x48"};
static_assert(kMc % 6 == 0 && kMc % 8 == 0, "kMc: whole groups of rows");

const KernelSet &kernelsFor(GemmIsa isa) {
  return isa == GemmIsa::Avx512 ? kAvx512 : kAvx2;
}

/// A tile narrower than nr columns (C's last panel): computed into a
/// spare tile, then its first \p cols columns written (or added).
void narrowTile(const KernelSet &set, int64_t rows, int64_t cols, int64_t kc,
                const float *a, int64_t lda, const float *b, float *c,
                int64_t ldc, bool accumulate) {
  alignas(64) float spare[kMaxMr * kMaxNr];
  set.tile(rows, kc, a, lda, b, spare, set.nr, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + spare[r * set.nr + j]
                                  : spare[r * set.nr + j];
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

bool cpuRunsGemmIsa(GemmIsa isa) {
  if (isa == GemmIsa::Avx512)
    return cpuHasFeature("avx512f");
  return cpuHasFeature("avx2") && cpuHasFeature("fma");
}

int gemmPanelColumns(GemmIsa isa) { return kernelsFor(isa).nr; }

const char *gemmKernelName(GemmIsa isa) { return kernelsFor(isa).name; }

const GemmIsa *flowGemmIsa() {
  static const std::optional<GemmIsa> chosen = []() -> std::optional<GemmIsa> {
    const char *choice = std::getenv("FLOW_GEMM");
    if (choice && *choice && std::string(choice) != "flow")
      return std::nullopt; // FLOW_GEMM=onednn or openblas: the library only
    for (GemmIsa isa : {GemmIsa::Avx512, GemmIsa::Avx2})
      if (cpuRunsGemmIsa(isa))
        return isa;
    return std::nullopt;
  }();
  return chosen ? &*chosen : nullptr;
}

std::string flowGemmInfo() {
  if (const GemmIsa *isa = flowGemmIsa())
    return std::string("Flow's ") + gemmKernelName(*isa) +
           " kernel for constant B and C of 2 to " +
           std::to_string(kFlowGemmMaxRows) +
           " rows (B packed once per session)";
  if (!cpuRunsGemmIsa(GemmIsa::Avx2))
    return "off (Flow's kernels need AVX2 and FMA, or AVX-512)";
  return std::string("off (FLOW_GEMM=") + std::getenv("FLOW_GEMM") + ")";
}

size_t packedBFloats(GemmIsa isa, int64_t k, int64_t n) {
  const int64_t nr = gemmPanelColumns(isa);
  return static_cast<size_t>((n + nr - 1) / nr) * k * nr;
}

void packB(GemmIsa isa, bool transB, int64_t k, int64_t n, const float *b,
           int64_t ldb, float *out) {
  const int64_t nr = gemmPanelColumns(isa);
  const int64_t panels = (n + nr - 1) / nr;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    for (int64_t jp = 0; jp < panels; ++jp, out += kc * nr) {
      const int64_t j0 = jp * nr;
      const int64_t cols = std::min<int64_t>(nr, n - j0);
      if (!transB) {
        for (int64_t p = 0; p < kc; ++p) {
          const float *src = b + (pc + p) * ldb + j0;
          float *dst = out + p * nr;
          std::memcpy(dst, src, cols * sizeof(float));
          std::fill(dst + cols, dst + nr, 0.0f);
        }
        continue;
      }
      // op(B)[p][j] = B[j][p]: read each column's row of B contiguously.
      for (int64_t j = 0; j < nr; ++j) {
        if (j >= cols) {
          for (int64_t p = 0; p < kc; ++p)
            out[p * nr + j] = 0.0f;
          continue;
        }
        const float *src = b + (j0 + j) * ldb + pc;
        for (int64_t p = 0; p < kc; ++p)
          out[p * nr + j] = src[p];
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
  const KernelSet &set = kernelsFor(b.isa);
  const int64_t nr = set.nr;
  const int64_t panels = (n + nr - 1) / nr;
  const int64_t allPanels = (b.n + nr - 1) / nr;
  const int64_t firstPanel = firstColumn / nr;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = std::min(kKc, k - pc);
    const bool accumulate = pc > 0;
    // This block of k's panels, from the piece's first: one contiguous
    // stream the hardware prefetcher can run ahead of.
    const float *blockB =
        b.data + pc * allPanels * nr + firstPanel * kc * nr;
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
        const float *bp = blockB + jp * kc * nr;
        const int64_t cols = std::min<int64_t>(nr, n - jp * nr);
        float *cc = c + ic * ldc + jp * nr;
        for (int64_t r0 = 0; r0 < mc; r0 += set.mr) {
          const int64_t rows = std::min<int64_t>(set.mr, mc - r0);
          const float *ap = block + r0 * ldBlock;
          if (cols == nr)
            set.tile(rows, kc, ap, ldBlock, bp, cc + r0 * ldc, ldc,
                     accumulate);
          else
            narrowTile(set, rows, cols, kc, ap, ldBlock, bp, cc + r0 * ldc,
                       ldc, accumulate);
        }
      }
    }
  }
}

} // namespace detail
} // namespace runtime
} // namespace flow
