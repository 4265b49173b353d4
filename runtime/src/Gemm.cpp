//===- Gemm.cpp - Flow's own GEMM micro-kernels ---------------------------===//
//
// Part of the Flow project.
//
// Blocking (per call, single-threaded):
//
//   for each block of kc rows of op(B)           (pc)
//     for each block of kMc rows of op(A)        (ic)  A block: L2
//       for each panel of nr columns             (jp)  B panel: kc x nr
//         for each group of up to mr rows of the block  micro-kernel
//
// The micro-kernel keeps up to mr x nr of C in registers and reads one
// broadcast of A and nr / (vector width) vectors of B per multiply-add
// step: AVX2 and FMA 6 x 16 (twelve ymm accumulators), AVX-512 8 x 48
// (twenty-four zmm accumulators, three B vectors, the broadcast folded into
// the multiply-add), AVX-512 BF16 8 x 48 on bf16 operands (the same
// registers; each step takes two rows of k: a broadcast of two consecutive
// bf16 of A, and B's panel rows packed in interleaved pairs, into one
// vdpbf16ps per accumulator). A is read in place (a transposed A is copied
// block by block first). Rows past C's edge are a smaller instance of the kernel;
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
// - AVX-512 BF16, on the same CPU (482 GFLOP/s vdpbf16ps peak per core):
//   the f32 kernel's block and k-blocks, B packed once per session where
//   oneDNN 2.6.3's gemm_bf16bf16f32 packs it at every call.
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "AlignedBuffer.h"
#include "flow/runtime/CpuFeatures.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

constexpr int64_t kMc = 144; // a multiple of every kernel's mr

/// Copies rows [ic, ic + mc) and columns [pc, pc + kc) of op(A) for
/// A = transposed: row-major, kc elements per row.
template <typename T>
void packTransposedA(const T *a, int64_t lda, int64_t ic, int64_t pc,
                     int64_t mc, int64_t kc, T *out) {
  // op(A)[i][p] = A[p][i]: read A's rows, write the block's columns.
  for (int64_t p = 0; p < kc; ++p) {
    const T *src = a + (pc + p) * lda + ic;
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

/// Writes (or, \p accumulate, adds) R rows x 48 columns of accumulators
/// to C: the AVX-512 kernels' last step.
template <int R>
__attribute__((target("avx512f"), always_inline)) inline void
storeTile(__m512 (&acc)[R][3], float *c, int64_t ldc, bool accumulate) {
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
  storeTile<R>(acc, c, ldc, accumulate);
}

/// One step of the AVX-512 BF16 kernel: columns p and p + 1 of A's rows
/// (\p Lone: column p alone, the second of the pair zero) times a packed
/// row of pairs of B.
template <int R, bool Lone>
__attribute__((target("avx512f,avx512bf16,avx2,fma"), always_inline)) inline void
bf16Step(__m512 (&acc)[R][3], const uint16_t *a, int64_t lda, int64_t p,
         const uint16_t *b) {
  __m512bh b0 = (__m512bh)_mm512_load_si512(b),
           b1 = (__m512bh)_mm512_load_si512(b + 32),
           b2 = (__m512bh)_mm512_load_si512(b + 64);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    int32_t two;
    if constexpr (Lone)
      two = a[r * lda + p];
    else
      std::memcpy(&two, a + r * lda + p, sizeof(two));
    __m512bh x = (__m512bh)_mm512_set1_epi32(two);
    acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
    acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
    acc[r][2] = _mm512_dpbf16_ps(acc[r][2], x, b2);
  }
}

/// The AVX-512 BF16 kernel: C rows [0, R) x 48 columns in f32 from bf16 A
/// (rows of stride lda) and a bf16 panel of ceil(kc / 2) rows of pairs,
/// three zmm accumulators per row. An odd kc's last column of A is read
/// alone (the bf16 after it may be another row's, or past the buffer), and
/// multiplies the panel's last pair, whose second row is zero.
template <int R>
__attribute__((target("avx512f,avx512bf16,avx2,fma"))) void
kernelAvx512Bf16(int64_t kc, const uint16_t *a, int64_t lda,
                 const uint16_t *b, float *c, int64_t ldc, bool accumulate) {
  constexpr int kNr = 48;
  __m512 acc[R][3];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = acc[r][2] = _mm512_setzero_ps();
  // Pairs of k, then (for an odd kc) the last column of A alone.
  const int64_t pairs = kc / 2;
  for (int64_t p = 0; p < pairs; ++p, b += 2 * kNr)
    bf16Step<R, false>(acc, a, lda, 2 * p, b);
  if (kc % 2)
    bf16Step<R, true>(acc, a, lda, kc - 1, b);
  storeTile<R>(acc, c, ldc, accumulate);
}

/// \p a and \p b are the kernel set's elements (f32, or bf16 bits).
using TileFn = void (*)(int64_t rows, int64_t kc, const void *a, int64_t lda,
                        const void *b, float *c, int64_t ldc,
                        bool accumulate);

/// A tile of \p rows (1 to R) x nr columns: the kernel instance for
/// exactly that many rows.
template <int R, template <int> class Kernel>
void tileOf(int64_t rows, int64_t kc, const void *a, int64_t lda,
            const void *b, float *c, int64_t ldc, bool accumulate) {
  if constexpr (R > 1)
    if (rows < R)
      return tileOf<R - 1, Kernel>(rows, kc, a, lda, b, c, ldc, accumulate);
  Kernel<R>::run(kc, a, lda, b, c, ldc, accumulate);
}

template <int R> struct Avx2 {
  static void run(int64_t kc, const void *a, int64_t lda, const void *b,
                  float *c, int64_t ldc, bool accumulate) {
    kernelAvx2<R>(kc, static_cast<const float *>(a), lda,
                  static_cast<const float *>(b), c, ldc, accumulate);
  }
};
template <int R> struct Avx512 {
  static void run(int64_t kc, const void *a, int64_t lda, const void *b,
                  float *c, int64_t ldc, bool accumulate) {
    kernelAvx512<R>(kc, static_cast<const float *>(a), lda,
                    static_cast<const float *>(b), c, ldc, accumulate);
  }
};
template <int R> struct Avx512Bf16 {
  static void run(int64_t kc, const void *a, int64_t lda, const void *b,
                  float *c, int64_t ldc, bool accumulate) {
    kernelAvx512Bf16<R>(kc, static_cast<const uint16_t *>(a), lda,
                        static_cast<const uint16_t *>(b), c, ldc, accumulate);
  }
};

/// One instruction set's kernels.
struct KernelSet {
  int mr, nr;
  TileFn tile;
  const char *name;
  int elementBytes; // of A and B: 4 (f32) or 2 (bf16)
  int kStep;        // rows of op(B) per packed row: 1, or 2 (bf16 pairs)
  int64_t kc;       // rows of op(B) per k-block (a multiple of kStep)
  /// Rows a block of \p kc rows of op(B) takes in a packed panel.
  int64_t packedRows(int64_t kc) const { return (kc + kStep - 1) / kStep * kStep; }
};

constexpr int kMaxMr = 8, kMaxNr = 48;
// k-blocks of 384 f32 rows, 768 bf16 rows: the same bytes of B per panel
// (72 KB); the bf16 kernel measured 2 to 4% faster with 768 than with 384.
const KernelSet kAvx2{6, 16, tileOf<6, Avx2>, "avx2+fma 6x16", 4, 1, 384};
const KernelSet kAvx512{8, 48, tileOf<8, Avx512>, "avx512f 8x48", 4, 1, 384};
const KernelSet kAvx512Bf16{
    8, 48, tileOf<8, Avx512Bf16>, "avx512bf16 8x48", 2, 2, 768};
static_assert(kMc % 6 == 0 && kMc % 8 == 0, "kMc: whole groups of rows");

const KernelSet &kernelsFor(GemmIsa isa) {
  switch (isa) {
  case GemmIsa::Avx2:
    return kAvx2;
  case GemmIsa::Avx512:
    return kAvx512;
  case GemmIsa::Avx512Bf16:
    return kAvx512Bf16;
  }
  return kAvx2;
}

/// A tile narrower than nr columns (C's last panel): computed into a
/// spare tile, then its first \p cols columns written (or added).
void narrowTile(const KernelSet &set, int64_t rows, int64_t cols, int64_t kc,
                const void *a, int64_t lda, const void *b, float *c,
                int64_t ldc, bool accumulate) {
  alignas(64) float spare[kMaxMr * kMaxNr];
  set.tile(rows, kc, a, lda, b, spare, set.nr, false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + spare[r * set.nr + j]
                                  : spare[r * set.nr + j];
}

/// This thread's scratch memory, grown on demand (never shrunk).
void *scratch(AlignedBuffer &buffer, size_t bytes) {
  if (buffer.size() < bytes) {
    if (!buffer.allocate(bytes))
      std::abort(); // out of memory for a few hundred kilobytes
  }
  return buffer.data();
}

/// Packs one k-block (kc rows from pc) of op(B)'s panels for \p set,
/// element type T, into \p out.
template <typename T>
void packBlock(const KernelSet &set, bool transB, int64_t pc, int64_t kc,
               int64_t n, const T *b, int64_t ldb, T *out) {
  const int64_t nr = set.nr, step = set.kStep;
  const int64_t rows = set.packedRows(kc);
  const int64_t panels = (n + nr - 1) / nr;
  // op(B)[p][j] of this block, zero past its edges.
  auto at = [&](int64_t p, int64_t j) -> T {
    if (p >= kc || j >= n)
      return T(0);
    return transB ? b[j * ldb + pc + p] : b[(pc + p) * ldb + j];
  };
  for (int64_t jp = 0; jp < panels; ++jp, out += rows * nr) {
    const int64_t j0 = jp * nr;
    // Element (p, j) of the panel sits at (p / step) * nr * step + j * step
    // + p % step: rows of pairs, interleaved, for bf16; plain rows for f32.
    if (transB) {
      // Read each column's row of B contiguously.
      for (int64_t j = 0; j < nr; ++j)
        for (int64_t p = 0; p < rows; ++p)
          out[(p / step) * nr * step + j * step + p % step] = at(p, j0 + j);
      continue;
    }
    for (int64_t p = 0; p < rows; ++p)
      for (int64_t j = 0; j < nr; ++j)
        out[(p / step) * nr * step + j * step + p % step] = at(p, j0 + j);
  }
}

} // namespace

namespace flow {
namespace runtime {
namespace detail {

bool cpuRunsGemmIsa(GemmIsa isa) {
  switch (isa) {
  case GemmIsa::Avx512Bf16:
    return cpuHasFeature("avx512f") && cpuHasFeature("avx512bf16");
  case GemmIsa::Avx512:
    return cpuHasFeature("avx512f");
  case GemmIsa::Avx2:
    return cpuHasFeature("avx2") && cpuHasFeature("fma");
  }
  return false;
}

int gemmPanelColumns(GemmIsa isa) { return kernelsFor(isa).nr; }

const char *gemmKernelName(GemmIsa isa) { return kernelsFor(isa).name; }

const GemmIsa *flowGemmIsa(bool bf16) {
  static const auto pick = [](std::initializer_list<GemmIsa> widestFirst)
      -> std::optional<GemmIsa> {
    const char *choice = std::getenv("FLOW_GEMM");
    if (choice && *choice && std::string(choice) != "flow")
      return std::nullopt; // FLOW_GEMM=onednn or openblas: the library only
    for (GemmIsa isa : widestFirst)
      if (cpuRunsGemmIsa(isa))
        return isa;
    return std::nullopt;
  };
  static const std::optional<GemmIsa> f32 =
      pick({GemmIsa::Avx512, GemmIsa::Avx2});
  static const std::optional<GemmIsa> bf16Operands =
      pick({GemmIsa::Avx512Bf16});
  const std::optional<GemmIsa> &chosen = bf16 ? bf16Operands : f32;
  return chosen ? &*chosen : nullptr;
}

std::string flowGemmInfo() {
  if (const GemmIsa *isa = flowGemmIsa()) {
    std::string info = std::string("Flow's ") + gemmKernelName(*isa) +
                       " kernel for constant B and C of 2 to " +
                       std::to_string(kFlowGemmMaxRows) + " rows";
    if (const GemmIsa *bf16 = flowGemmIsa(true))
      info += std::string(", ") + gemmKernelName(*bf16) +
              " for bf16 operands, constant B and C of 2 or more rows";
    return info + " (B packed once per session)";
  }
  if (!cpuRunsGemmIsa(GemmIsa::Avx2))
    return "off (Flow's kernels need AVX2 and FMA, or AVX-512)";
  return std::string("off (FLOW_GEMM=") + std::getenv("FLOW_GEMM") + ")";
}

size_t packedBBytes(GemmIsa isa, int64_t k, int64_t n) {
  const KernelSet &set = kernelsFor(isa);
  // Every k-block but the last is a whole number of pairs (kc is even).
  return static_cast<size_t>((n + set.nr - 1) / set.nr) * set.nr *
         set.packedRows(k) * set.elementBytes;
}

void packB(GemmIsa isa, bool transB, int64_t k, int64_t n, const void *b,
           int64_t ldb, void *out) {
  const KernelSet &set = kernelsFor(isa);
  const int64_t panels = (n + set.nr - 1) / set.nr;
  for (int64_t pc = 0; pc < k; pc += set.kc) {
    const int64_t kc = std::min(set.kc, k - pc);
    const int64_t elements = panels * set.nr * set.packedRows(kc);
    if (set.elementBytes == 2) {
      auto *dst = static_cast<uint16_t *>(out);
      packBlock(set, transB, pc, kc, n, static_cast<const uint16_t *>(b), ldb,
                dst);
      out = dst + elements;
    } else {
      auto *dst = static_cast<float *>(out);
      packBlock(set, transB, pc, kc, n, static_cast<const float *>(b), ldb,
                dst);
      out = dst + elements;
    }
  }
}

void gemmPacked(bool transA, int64_t m, int64_t n, int64_t k, const void *a,
                int64_t lda, const PackedB &b, int64_t firstColumn, float *c,
                int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const KernelSet &set = kernelsFor(b.isa);
  const int64_t es = set.elementBytes;
  static thread_local AlignedBuffer aScratch;
  void *packedA = transA ? scratch(aScratch, size_t(kMc) * set.kc * es) : nullptr;
  const auto *bytesA = static_cast<const uint8_t *>(a);
  const int64_t nr = set.nr;
  const int64_t panels = (n + nr - 1) / nr;
  const int64_t allPanels = (b.n + nr - 1) / nr;
  const int64_t firstPanel = firstColumn / nr;
  for (int64_t pc = 0; pc < k; pc += set.kc) {
    const int64_t kc = std::min(set.kc, k - pc);
    const int64_t rowsB = set.packedRows(kc);
    const bool accumulate = pc > 0;
    // This block of k's panels, from the piece's first: one contiguous
    // stream the hardware prefetcher can run ahead of. (Blocks before it
    // have set.kc rows, a multiple of kStep.)
    const auto *blockB = static_cast<const uint8_t *>(b.data) +
                         (pc * allPanels * nr + firstPanel * rowsB * nr) * es;
    for (int64_t ic = 0; ic < m; ic += kMc) {
      const int64_t mc = std::min(kMc, m - ic);
      // Row-major A is read in place; a transposed one is copied first.
      const uint8_t *block = bytesA + (ic * lda + pc) * es;
      int64_t ldBlock = lda;
      if (transA) {
        if (es == 2)
          packTransposedA(static_cast<const uint16_t *>(a), lda, ic, pc, mc,
                          kc, static_cast<uint16_t *>(packedA));
        else
          packTransposedA(static_cast<const float *>(a), lda, ic, pc, mc, kc,
                          static_cast<float *>(packedA));
        block = static_cast<const uint8_t *>(packedA);
        ldBlock = kc;
      }
      for (int64_t jp = 0; jp < panels; ++jp) {
        const uint8_t *bp = blockB + jp * rowsB * nr * es;
        const int64_t cols = std::min<int64_t>(nr, n - jp * nr);
        float *cc = c + ic * ldc + jp * nr;
        for (int64_t r0 = 0; r0 < mc; r0 += set.mr) {
          const int64_t rows = std::min<int64_t>(set.mr, mc - r0);
          const uint8_t *ap = block + r0 * ldBlock * es;
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
