//===- Attention.cpp - Fused attention on the CPU -------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Bf16.h"
#include "BlasCalls.h"
#include "flow/runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

/// Query rows per task and keys per block: a block's scores (64 x 256 f32,
/// 64 KiB) and the rows' sums stay in a core's L2.
constexpr int64_t kQueryRows = 64;
constexpr int64_t kKeyBlock = 256;

constexpr float kInf = std::numeric_limits<float>::infinity();

/// exp(x) to about 1 ulp for x in [-87.3, 88]: a power of two times a
/// polynomial of the remainder (written for the compiler to vectorize).
/// Exactly 0 below -87.3 (so a hidden score's -inf gives 0), exp(88) above
/// 88 (attention only takes x <= 0); NaN stays NaN. The argument is clamped
/// before it becomes an integer, so no conversion or shift overflows.
inline float expApprox(float x) {
  const float hi = 88.0f, lo = -87.3365447504f;
  float clamped = x > lo ? x : lo; // NaN: lo
  clamped = clamped < hi ? clamped : hi;
  float n = std::floor(clamped * 1.44269504088896341f + 0.5f);
  float r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n is in [-126, 127]: a normal float's exponent.
  uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float e = x < lo ? 0.0f : p * scale;
  return x == x ? e : x;
}

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FLOW_ATTENTION_CLONES                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLOW_ATTENTION_CLONES
#endif

/// Partial results kept per lane, so that the loops below vectorize
/// without reassociating floating-point sums.
constexpr int kLanes = 16;

/// The largest of s[0, n), NaN ignored (-inf when there is none).
FLOW_ATTENTION_CLONES
float rowMax(const float *s, int64_t n) {
  float lanes[kLanes];
  for (float &lane : lanes)
    lane = -kInf;
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lanes[j] = s[c + j] > lanes[j] ? s[c + j] : lanes[j];
  float top = -kInf;
  for (; c < n; ++c)
    top = s[c] > top ? s[c] : top;
  for (float lane : lanes)
    top = lane > top ? lane : top;
  return top;
}

/// p[c] = exp(s[c] - peak) for c < n; returns their sum (NaN when one
/// is).
FLOW_ATTENTION_CLONES
float expRow(float *s, int64_t n, float peak) {
  for (int64_t c = 0; c < n; ++c)
    s[c] = expApprox(s[c] - peak);
  float lanes[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lanes[j] += s[c + j];
  float sum = 0.0f;
  for (; c < n; ++c)
    sum += s[c];
  for (float lane : lanes)
    sum += lane;
  return sum;
}

/// Reads element `i` of a buffer of `dtype` as f32.
inline float load(const void *base, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F16:
    return widenF16(static_cast<const uint16_t *>(base)[i]);
  case DType::BF16:
    return widenBf16(static_cast<const uint16_t *>(base)[i]);
  default:
    return static_cast<const float *>(base)[i];
  }
}

/// Rows [row, row + rows) of a [*, cols] matrix of `dtype` as f32: the
/// buffer itself for f32, else widened into `scratch`.
const float *rowsAsF32(const void *base, DType dtype, int64_t row, int64_t rows,
                       int64_t cols, std::vector<float> &scratch) {
  if (dtype == DType::F32)
    return static_cast<const float *>(base) + row * cols;
  scratch.resize(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i)
    scratch[i] = load(base, dtype, row * cols + i);
  return scratch.data();
}

struct Scratch {
  std::vector<float> query, keys, values, scores, sums, acc, peak, total;
};

/// Rows [q0, q0 + rows) of leading index `b`.
void attendBlock(const AttentionCommand &cmd, const void *query,
                 const void *key, const void *value, const void *mask,
                 void *output, int64_t b, int64_t q0, int64_t rows,
                 Scratch &w) {
  const int64_t d = cmd.d, dv = cmd.dv, lk = cmd.lk;
  // The query rows, scaled once (scale * q k^T = (scale * q) k^T).
  w.query.resize(rows * d);
  const float scale = static_cast<float>(cmd.scale);
  const int64_t first = (b * cmd.lq + q0) * d;
  if (cmd.dtype == DType::F32) {
    const float *q = static_cast<const float *>(query) + first;
    for (int64_t i = 0; i < rows * d; ++i)
      w.query[i] = scale * q[i];
  } else {
    for (int64_t i = 0; i < rows * d; ++i)
      w.query[i] = scale * load(query, cmd.dtype, first + i);
  }
  w.acc.assign(rows * dv, 0.0f);
  w.peak.assign(rows, -kInf);
  w.total.assign(rows, 0.0f);
  w.scores.resize(rows * std::min(lk, kKeyBlock));
  w.sums.resize(rows * dv);

  // The mask's offset for this leading index (strides 0 where it
  // broadcasts).
  int64_t maskBase = 0;
  size_t lead = cmd.leading.size();
  if (mask) {
    int64_t rest = b;
    for (size_t t = lead; t-- > 0;) {
      maskBase += (rest % cmd.leading[t]) * cmd.maskStrides[t];
      rest /= cmd.leading[t];
    }
  }
  const int64_t maskRow = mask ? cmd.maskStrides[lead] : 0;
  const int64_t maskCol = mask ? cmd.maskStrides[lead + 1] : 0;
  // Causal: no key after the block's last row is seen.
  const int64_t keys = cmd.causal ? std::min(lk, q0 + rows) : lk;

  for (int64_t k0 = 0; k0 < keys; k0 += kKeyBlock) {
    const int64_t n = std::min(kKeyBlock, keys - k0);
    const float *kb = rowsAsF32(key, cmd.dtype, b * lk + k0, n, d, w.keys);
    const float *vb = rowsAsF32(value, cmd.dtype, b * lk + k0, n, dv, w.values);
    float *s = w.scores.data();
    // One query row (decoding): matrix-vector products, several times
    // faster than a GEMM of one row.
    if (rows == 1)
      blasSgemv(false, static_cast<int>(n), static_cast<int>(d), kb,
                static_cast<int>(d), w.query.data(), s);
    else
      blasSgemm(false, true, static_cast<int>(rows), static_cast<int>(n),
                static_cast<int>(d), w.query.data(), static_cast<int>(d), kb,
                static_cast<int>(d), s, static_cast<int>(n));
    bool anyKept = false;
    for (int64_t r = 0; r < rows; ++r) {
      float *row = s + r * n;
      const int64_t i = q0 + r;
      if (mask) {
        int64_t at = maskBase + i * maskRow + k0 * maskCol;
        if (cmd.maskDtype == DType::I1) {
          const auto *keep = static_cast<const uint8_t *>(mask) + at;
          if (maskCol == 1) // a row of the mask: vectorizes
            for (int64_t c = 0; c < n; ++c)
              row[c] = keep[c] ? row[c] : -kInf;
          else
            for (int64_t c = 0; c < n; ++c)
              row[c] = keep[c * maskCol] ? row[c] : -kInf;
        } else if (cmd.maskDtype == DType::F32) {
          const float *add = static_cast<const float *>(mask) + at;
          for (int64_t c = 0; c < n; ++c)
            row[c] += add[c * maskCol];
        } else {
          for (int64_t c = 0; c < n; ++c)
            row[c] += load(mask, cmd.maskDtype, at + c * maskCol);
        }
      }
      if (cmd.causal)
        for (int64_t c = std::max<int64_t>(0, i + 1 - k0); c < n; ++c)
          row[c] = -kInf;
      float peak = std::max(w.peak[r], rowMax(row, n));
      if (peak == -kInf) {
        // Every key so far hidden, or NaN among them: a NaN score makes
        // the row NaN (as a softmax over it is).
        if (std::any_of(row, row + n, [](float x) { return x != x; })) {
          w.peak[r] = 0.0f;
          w.total[r] = std::numeric_limits<float>::quiet_NaN();
          anyKept = true;
          continue;
        }
        std::fill(row, row + n, 0.0f);
        continue;
      }
      anyKept = true;
      // Rescale what earlier blocks summed to the new maximum.
      float alpha = w.peak[r] == -kInf ? 0.0f : expApprox(w.peak[r] - peak);
      w.peak[r] = peak;
      w.total[r] = w.total[r] * alpha + expRow(row, n, peak);
      float *acc = w.acc.data() + r * dv;
      if (alpha != 1.0f)
        for (int64_t c = 0; c < dv; ++c)
          acc[c] *= alpha;
    }
    if (!anyKept)
      continue;
    if (rows == 1)
      blasSgemv(true, static_cast<int>(n), static_cast<int>(dv), vb,
                static_cast<int>(dv), s, w.sums.data());
    else
      blasSgemm(false, false, static_cast<int>(rows), static_cast<int>(dv),
                static_cast<int>(n), s, static_cast<int>(n), vb,
                static_cast<int>(dv), w.sums.data(), static_cast<int>(dv));
    for (int64_t i = 0; i < rows * dv; ++i)
      w.acc[i] += w.sums[i];
  }

  // Normalize; a row every key was hidden from is zeros.
  for (int64_t r = 0; r < rows; ++r) {
    float inverse = w.total[r] > 0.0f ? 1.0f / w.total[r] : 0.0f;
    if (w.total[r] != w.total[r])
      inverse = w.total[r];
    int64_t at = (b * cmd.lq + q0 + r) * dv;
    const float *acc = w.acc.data() + r * dv;
    switch (cmd.dtype) {
    case DType::F16:
      for (int64_t c = 0; c < dv; ++c)
        static_cast<uint16_t *>(output)[at + c] = roundToF16(acc[c] * inverse);
      break;
    case DType::BF16:
      for (int64_t c = 0; c < dv; ++c)
        static_cast<uint16_t *>(output)[at + c] = roundToBf16(acc[c] * inverse);
      break;
    default:
      for (int64_t c = 0; c < dv; ++c)
        static_cast<float *>(output)[at + c] = acc[c] * inverse;
    }
  }
}

} // namespace

void detail::runAttention(const AttentionCommand &cmd, const void *query,
                          const void *key, const void *value, const void *mask,
                          void *output, ThreadPool &pool) {
  if (cmd.batch == 0 || cmd.lq == 0 || cmd.dv == 0)
    return;
  const int64_t blocks = (cmd.lq + kQueryRows - 1) / kQueryRows;
  pool.parallelFor(cmd.batch * blocks, [&](int64_t task) {
    thread_local Scratch scratch;
    int64_t b = task / blocks, q0 = (task % blocks) * kQueryRows;
    attendBlock(cmd, query, key, value, mask, output, b, q0,
                std::min(kQueryRows, cmd.lq - q0), scratch);
  });
}
