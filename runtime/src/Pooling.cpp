//===- Pooling.cpp - Max pooling next to the convolution library ----------===//
//
// Part of the Flow project.
//
// Each task is one output row of one group of V channels: for each output
// column, the maximum over the window's taps that fall inside the input
// (padding never wins), or their average (padding adds zeros; the divisor
// as flow.avg_pool2d has it), V channels at a time. V is 16 (8 for nChw8c) when
// the channels are a multiple of 16, else 1 (then both buffers are plain).
// In a blocked buffer a group's V channels are adjacent (one vector); in a
// plain one they are a plane apart (correct, not fast: the compiler keeps a
// pool in a kernel unless a convolution's buffer is next to it).
//
//===----------------------------------------------------------------------===//

#include "Pooling.h"
#include "Bf16.h"
#include "flow/runtime/CpuFeatures.h"
#include "flow/runtime/ThreadPool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include <immintrin.h>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

/// Where element (n, group g, lane v, y, x) of a tensor lies: n * image +
/// g * group + v * lane + y * row + x * column, in elements.
struct Strides {
  int64_t image, group, lane, row, column;
};

/// The strides of an [n, c, h, w] tensor with groups of \p lanes channels,
/// held in the convolution layout of \p block (blocked) or NCHW.
Strides stridesOf(bool blocked, int block, int64_t c, int64_t h, int64_t w,
                  int lanes) {
  if (!blocked)
    return {c * h * w, lanes * h * w, h * w, w, 1};
  if (block == 0) // NHWC
    return {c * h * w, lanes, 1, w * c, c};
  // nChw{block}c: a group is one block (lanes == block).
  return {c * h * w, h * w * block, 1, w * block, block};
}

struct Job {
  const PoolCommand *cmd;
  const void *input;
  void *output;
  Strides in, out;
  int64_t groups;
};

/// V lanes of f32, u32 and u16 (GCC's vector extension: 16 f32 are one
/// zmm on AVX-512, two ymm on AVX2, four xmm on the baseline).
template <int V> struct Lanes;
#define FLOW_POOL_LANES(V)                                                     \
  template <> struct Lanes<V> {                                                \
    typedef float Floats __attribute__((vector_size(V * 4)));                  \
    typedef uint32_t Words __attribute__((vector_size(V * 4)));                \
    typedef uint16_t Halves __attribute__((vector_size(V * 2)));               \
  };
FLOW_POOL_LANES(16)
FLOW_POOL_LANES(8)
FLOW_POOL_LANES(1)
#undef FLOW_POOL_LANES
template <int V> using Floats = typename Lanes<V>::Floats;
template <int V> using Words = typename Lanes<V>::Words;
template <int V> using Halves = typename Lanes<V>::Halves;

using RowFn = void (*)(const Job &, int64_t);

// The row functions, compiled once per instruction set: the compiler lowers
// the vector types of each copy to its target's registers.
// (Clang takes the target as an attribute pushed onto every function.)
namespace avx512 {
#if defined(__clang__)
#pragma clang attribute push(                                                  \
    __attribute__((target("avx512f,avx512bw,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx2,fma")
#endif
constexpr bool kWiden16 = true;
// (The zero-masked forms: GCC 12 warns of the unmasked ones' undefined
// pass-through operand.)
inline Floats<16> widen16(const uint16_t *p) {
  __m512i w = _mm512_maskz_cvtepu16_epi32(
      0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return Floats<16>(
      _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, w, 16)));
}
inline void narrow16(uint16_t *p, Words<16> w) {
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(p),
                      _mm512_maskz_cvtepi32_epi16(0xffff, __m512i(w)));
}
#include "PoolingRows.inc"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
} // namespace avx512
namespace avx2 {
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))),             \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
constexpr bool kWiden16 = false;
[[maybe_unused]] inline Floats<16> widen16(const uint16_t *) {
  return Floats<16>{};
}
[[maybe_unused]] inline void narrow16(uint16_t *, Words<16>) {}
#include "PoolingRows.inc"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
} // namespace avx2
namespace baseline {
constexpr bool kWiden16 = false;
[[maybe_unused]] inline Floats<16> widen16(const uint16_t *) {
  return Floats<16>{};
}
[[maybe_unused]] inline void narrow16(uint16_t *, Words<16>) {}
#include "PoolingRows.inc"
} // namespace baseline

/// The widest set of row functions this CPU runs, asked once.
enum class RowTarget { Avx512, Avx2, Baseline };
RowTarget rowTarget() {
  static const RowTarget target =
      cpuHasFeature("avx512f") && cpuHasFeature("avx512bw") ? RowTarget::Avx512
      : cpuHasFeature("avx2") && cpuHasFeature("fma")       ? RowTarget::Avx2
                                                            : RowTarget::Baseline;
  return target;
}

/// The row function for a max (or \p Average) pool of lanes \p V and
/// element types In, Out, on the widest vectors this CPU has.
template <bool Average, int V, bool InDense, bool OutDense, typename In,
          typename Out>
RowFn rowFor() {
  switch (rowTarget()) {
  case RowTarget::Avx512:
    return avx512::poolRow<Average, V, InDense, OutDense, In, Out>;
  case RowTarget::Avx2:
    return avx2::poolRow<Average, V, InDense, OutDense, In, Out>;
  case RowTarget::Baseline:
    break;
  }
  return baseline::poolRow<Average, V, InDense, OutDense, In, Out>;
}

template <bool Average, int V, typename In, typename Out>
RowFn rowFor(bool inDense, bool outDense) {
  if (inDense && outDense)
    return rowFor<Average, V, true, true, In, Out>();
  if (inDense)
    return rowFor<Average, V, true, false, In, Out>();
  if (outDense)
    return rowFor<Average, V, false, true, In, Out>();
  return rowFor<Average, V, false, false, In, Out>();
}

template <bool Average, int V>
RowFn rowFor(const PoolCommand &c, bool inDense, bool outDense) {
  if (c.inputBf16)
    return c.outputBf16
               ? rowFor<Average, V, uint16_t, uint16_t>(inDense, outDense)
               : rowFor<Average, V, uint16_t, float>(inDense, outDense);
  return c.outputBf16 ? rowFor<Average, V, float, uint16_t>(inDense, outDense)
                      : rowFor<Average, V, float, float>(inDense, outDense);
}

template <int V>
RowFn rowFor(const PoolCommand &c, bool inDense, bool outDense) {
  return c.average ? rowFor<true, V>(c, inDense, outDense)
                   : rowFor<false, V>(c, inDense, outDense);
}

} // namespace

void detail::runPool(const PoolCommand &cmd, const void *input,
                        void *output, int block, ThreadPool &pool) {
  // A group's channels lie in one block of a blocked buffer.
  const int lanes = cmd.c % 16 ? 1 : block == 8 ? 8 : 16;
  Job job{&cmd,
          input,
          output,
          stridesOf(cmd.blockedInput, block, cmd.c, cmd.h, cmd.w, lanes),
          stridesOf(cmd.blockedOutput, block, cmd.c, cmd.oh, cmd.ow, lanes),
          cmd.c / lanes};
  const bool inDense = job.in.lane == 1, outDense = job.out.lane == 1;
  RowFn row = lanes == 16  ? rowFor<16>(cmd, inDense, outDense)
              : lanes == 8 ? rowFor<8>(cmd, inDense, outDense)
                           : rowFor<1>(cmd, inDense, outDense);
  pool.parallelFor(cmd.n * job.groups * cmd.oh,
                   [&](int64_t task) { row(job, task); });
}
