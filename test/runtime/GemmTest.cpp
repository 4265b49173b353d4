//===- GemmTest.cpp - Tests for Flow's own GEMM kernels -------------------===//
//
// Part of the Flow project.
//
// Every shape class the kernels treat apart, for each instruction set this
// CPU runs (AVX2 and FMA: 6 x 16; AVX-512: 8 x 48; AVX-512 BF16 on bf16
// operands: 8 x 48 over pairs of k): rows past a multiple of 6 and 8,
// columns past a multiple of 16 and 48, k past a block of 384 and odd k,
// transposed A and B, and pieces of C's columns read from a larger packed B
// (as the session's pieces do), against a double-precision reference.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/src/Bf16.h"
#include "../../runtime/src/Gemm.h"
#include "flow/runtime/CpuFeatures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

/// The instruction sets this CPU runs Flow's kernels in.
std::vector<GemmIsa> isas() {
  std::vector<GemmIsa> result;
  for (GemmIsa isa : {GemmIsa::Avx2, GemmIsa::Avx512, GemmIsa::Avx512Bf16})
    if (cpuRunsGemmIsa(isa))
      result.push_back(isa);
  return result;
}


/// A GEMM's operands: values in [-1, 1], and (for a bf16 kernel set)
/// rounded to bf16, their bits in a16 and b16.
struct Problem {
  int64_t m, n, k;
  bool transA, transB;
  std::vector<float> a, b;
  std::vector<uint16_t> a16, b16;
  const void *opA() const {
    return a16.empty() ? static_cast<const void *>(a.data()) : a16.data();
  }
  const void *opB() const {
    return b16.empty() ? static_cast<const void *>(b.data()) : b16.data();
  }
  int64_t lda() const { return transA ? m : k; }
  int64_t ldb() const { return transB ? k : n; }
  float atA(int64_t i, int64_t p) const {
    return transA ? a[p * m + i] : a[i * k + p];
  }
  float atB(int64_t p, int64_t j) const {
    return transB ? b[j * k + p] : b[p * n + j];
  }
};

/// packB's output for \p isa, in 64-byte aligned memory.
struct Packed {
  void *data;
  Packed(GemmIsa isa, const Problem &p)
      : data(std::aligned_alloc(64,
                                (packedBBytes(isa, p.k, p.n) + 63) / 64 * 64)) {
    packB(isa, p.transB, p.k, p.n, p.opB(), p.ldb(), data);
  }
  Packed(const Packed &) = delete;
  Packed &operator=(const Packed &) = delete;
  ~Packed() { std::free(data); }
};

Problem make(std::mt19937 &rng, GemmIsa isa, int64_t m, int64_t n,
             int64_t k, bool transA, bool transB) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  Problem p{m, n, k, transA, transB, {}, {}, {}, {}};
  p.a.resize(m * k);
  p.b.resize(k * n);
  for (float &x : p.a)
    x = value(rng);
  for (float &x : p.b)
    x = value(rng);
  if (gemmIsaReadsBf16(isa)) {
    // The reference multiplies the values the kernels read.
    for (auto [values, bits] : {std::pair{&p.a, &p.a16}, {&p.b, &p.b16}})
      for (float &x : *values) {
        bits->push_back(roundToBf16(x));
        x = widenBf16(bits->back());
      }
  }
  return p;
}

/// Checks C (m x n, row stride ldc, holding columns [j0, j0 + n) of the
/// product) against a double-precision sum. Sums of k products of values
/// in [-1, 1] in f32 (in another order) are within k * 2^-22 of it; for
/// bf16 operands too, since the product of two bf16 is exact in f32.
void expectProduct(const Problem &p, const float *c, int64_t ldc, int64_t j0,
                   int64_t n) {
  const double tolerance = 1e-6 * (p.k + 1) * 4;
  int64_t wrong = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < p.k; ++q)
        sum += double(p.atA(i, q)) * p.atB(q, j0 + j);
      wrong += std::fabs(sum - c[i * ldc + j]) > tolerance;
    }
  EXPECT_EQ(wrong, 0) << p.m << "x" << p.n << "x" << p.k << " transA "
                      << p.transA << " transB " << p.transB << " columns " << j0
                      << "+" << n;
}

TEST(GemmTest, EveryEdgeAgainstAReference) {
  if (isas().empty())
    GTEST_SKIP() << "Flow's GEMM kernels need AVX2 and FMA";
  std::mt19937 rng(7);
  const int64_t sizes[][3] = {{1, 1, 1},      {6, 16, 8},     {7, 17, 3},
                              {5, 15, 385},   {13, 33, 768},  {128, 64, 100},
                              {150, 40, 800}, {2, 300, 1},    {8, 48, 5},
                              {9, 49, 400},   {17, 97, 50},   {145, 150, 70},
                              {3, 50, 769},   {10, 20, 391}};
  for (GemmIsa isa : isas())
    for (const auto &size : sizes)
      for (bool transA : {false, true})
        for (bool transB : {false, true}) {
          SCOPED_TRACE(gemmKernelName(isa));
          Problem p =
              make(rng, isa, size[0], size[1], size[2], transA, transB);
          std::vector<float> c(p.m * p.n, NAN);
          Packed packed(isa, p);
          gemmPacked(transA, p.m, p.n, p.k, p.opA(), p.lda(),
                     PackedB{packed.data, p.k, p.n, isa}, 0, c.data(), p.n);
          expectProduct(p, c.data(), p.n, 0, p.n);
        }
}

TEST(GemmTest, PiecesOfAPackedB) {
  if (isas().empty())
    GTEST_SKIP() << "Flow's GEMM kernels need AVX2 and FMA";
  std::mt19937 rng(11);
  for (GemmIsa isa : isas())
    for (bool transB : {false, true}) {
      SCOPED_TRACE(gemmKernelName(isa));
      Problem p = make(rng, isa, 20, 250, 901, false, transB);
      Packed packed(isa, p);
      // Pieces of C's columns, as the session cuts them: each starts at a
      // panel; the last is narrower than one.
      const int64_t step = 2 * gemmPanelColumns(isa);
      std::vector<float> c(p.m * p.n, NAN);
      for (int64_t j0 = 0; j0 < p.n; j0 += step) {
        int64_t width = std::min<int64_t>(step, p.n - j0);
        gemmPacked(false, p.m, width, p.k, p.opA(), p.lda(),
                   PackedB{packed.data, p.k, p.n, isa}, j0, c.data() + j0,
                   p.n);
      }
      expectProduct(p, c.data(), p.n, 0, p.n);
    }
}

TEST(GemmTest, EmptyProductIsZeros) {
  if (isas().empty())
    GTEST_SKIP() << "Flow's GEMM kernels need AVX2 and FMA";
  for (GemmIsa isa : isas()) {
    std::vector<float> c(12, NAN);
    gemmPacked(false, 3, 4, 0, nullptr, 1, PackedB{nullptr, 0, 4, isa}, 0,
               c.data(), 4);
    for (float x : c)
      EXPECT_EQ(x, 0.0f);
  }
}

TEST(GemmTest, KernelsNameTheirInstructionSet) {
  EXPECT_STREQ(gemmKernelName(GemmIsa::Avx2), "avx2+fma 6x16");
  EXPECT_STREQ(gemmKernelName(GemmIsa::Avx512), "avx512f 8x48");
  EXPECT_STREQ(gemmKernelName(GemmIsa::Avx512Bf16), "avx512bf16 8x48");
  EXPECT_EQ(gemmPanelColumns(GemmIsa::Avx2), 16);
  EXPECT_EQ(gemmPanelColumns(GemmIsa::Avx512), 48);
  EXPECT_EQ(gemmPanelColumns(GemmIsa::Avx512Bf16), 48);
  // The kernels chosen here are the widest this CPU runs.
  const GemmIsa *chosen = flowGemmIsa();
  if (std::getenv("FLOW_GEMM") && std::string(std::getenv("FLOW_GEMM")) != "flow")
    EXPECT_EQ(chosen, nullptr);
  else if (cpuRunsGemmIsa(GemmIsa::Avx512))
    ASSERT_TRUE(chosen && *chosen == GemmIsa::Avx512);
  else if (cpuRunsGemmIsa(GemmIsa::Avx2))
    ASSERT_TRUE(chosen && *chosen == GemmIsa::Avx2);
  else
    EXPECT_EQ(chosen, nullptr);
  // bf16 operands: on AVX-512 BF16 where present, else the library.
  const GemmIsa *bf16 = flowGemmIsa(/*bf16=*/true);
  if (chosen && cpuRunsGemmIsa(GemmIsa::Avx512Bf16))
    ASSERT_TRUE(bf16 && *bf16 == GemmIsa::Avx512Bf16);
  else
    EXPECT_EQ(bf16, nullptr);
}

} // namespace

TEST(HalfTest, F16RoundsToNearestEven) {
  // Every f16 value (NaNs aside) widens exactly and rounds back to itself.
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float f = flow::runtime::detail::widenF16(static_cast<uint16_t>(h));
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(flow::runtime::detail::roundToF16(f) & 0x7e00u, 0x7e00u) << h;
      continue;
    }
    ASSERT_EQ(flow::runtime::detail::roundToF16(f), h) << h;
  }
  using flow::runtime::detail::roundToF16;
  EXPECT_EQ(roundToF16(1.0f), 0x3c00);
  EXPECT_EQ(roundToF16(1.0f + 0x1p-11f), 0x3c00); // a tie: to even
  EXPECT_EQ(roundToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(roundToF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(roundToF16(65504.0f), 0x7bff);
  EXPECT_EQ(roundToF16(65519.0f), 0x7bff);
  EXPECT_EQ(roundToF16(65520.0f), 0x7c00); // a tie past the largest: inf
  EXPECT_EQ(roundToF16(-1e10f), 0xfc00);
  EXPECT_EQ(roundToF16(0x1p-25f), 0x0000);     // half the smallest: to even
  EXPECT_EQ(roundToF16(3 * 0x1p-25f), 0x0002); // 1.5 of it: to even
  EXPECT_EQ(roundToF16(0x1p-26f), 0x0000);
  EXPECT_EQ(roundToF16(-0x1p-24f), 0x8001);
  EXPECT_EQ(roundToF16(1023.5f * 0x1p-24f), 0x0400); // up into the normals
  EXPECT_EQ(roundToF16(-0.0f), 0x8000);
}

TEST(HalfTest, Tf32KeepsTenMantissaBits) {
  using flow::runtime::detail::roundToTf32;
  EXPECT_EQ(roundToTf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(roundToTf32(1.0f + 0x1p-11f), 1.0f + 0x1p-10f); // ties away
  EXPECT_EQ(roundToTf32(-(1.0f + 0x1p-11f)), -(1.0f + 0x1p-10f));
  EXPECT_EQ(roundToTf32(3.0f + 0x1p-9f), 3.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(roundToTf32(INFINITY)));
  EXPECT_TRUE(std::isnan(roundToTf32(NAN)));
}
