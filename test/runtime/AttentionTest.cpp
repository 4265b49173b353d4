//===- AttentionTest.cpp - Tests for the attention command ----------------===//
//
// Part of the Flow project.
//
// Runs attention commands (f32, f16, bf16; boolean, additive and causal
// masks that broadcast; blocks of query rows and of keys larger than one)
// against the definition computed in double here, and checks that
// malformed commands are refused at load with the reason.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/src/Bf16.h"
#include "FbinBuilder.h"
#include "TestValues.h"

#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

using namespace flow::runtime;
using namespace flow::test;

namespace {

int64_t product(const std::vector<int64_t> &dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

struct Case {
  std::vector<int64_t> leading;
  int64_t lq, lk, d, dv;
  bool causal = false;
  /// No mask when empty; else its shape and whether it is boolean.
  std::vector<int64_t> maskShape;
  bool boolMask = true;
  DType dtype = DType::F32;
  double scale = 0.125;
};

std::vector<int64_t> shapeOf(const Case &c, int64_t rows, int64_t cols) {
  std::vector<int64_t> s = c.leading;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

/// softmax(scale q k^T + mask) v in double, straight from the definition;
/// a row every key is hidden from is zeros.
std::vector<float> reference(const Case &c, const std::vector<float> &q,
                             const std::vector<float> &k,
                             const std::vector<float> &v,
                             const std::vector<float> &mask) {
  int64_t batch = product(c.leading), rank = c.leading.size() + 2;
  std::vector<int64_t> scores = shapeOf(c, c.lq, c.lk);
  std::vector<float> out(batch * c.lq * c.dv);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < c.lq; ++i) {
      std::vector<double> s(c.lk);
      std::vector<bool> hidden(c.lk, false);
      double top = -INFINITY;
      for (int64_t j = 0; j < c.lk; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < c.d; ++x)
          dot +=
              double(q[(b * c.lq + i) * c.d + x]) * k[(b * c.lk + j) * c.d + x];
        s[j] = c.scale * dot;
        if (!c.maskShape.empty()) {
          // The mask's element for (b, i, j), broadcast from the right.
          std::vector<int64_t> index(rank);
          int64_t rest = b;
          for (int64_t t = rank - 3; t >= 0; --t) {
            index[t] = rest % scores[t];
            rest /= scores[t];
          }
          index[rank - 2] = i, index[rank - 1] = j;
          int64_t at = 0, mr = c.maskShape.size();
          for (int64_t t = 0; t < mr; ++t) {
            int64_t dim = c.maskShape[t];
            at = at * dim + (dim == 1 ? 0 : index[rank - mr + t]);
          }
          if (c.boolMask)
            hidden[j] = mask[at] == 0.0f;
          else
            s[j] += mask[at];
        }
        if (c.causal && j > i)
          hidden[j] = true;
        if (!hidden[j])
          top = std::max(top, s[j]);
      }
      for (int64_t y = 0; y < c.dv; ++y) {
        double num = 0, den = 0;
        for (int64_t j = 0; j < c.lk; ++j) {
          if (hidden[j] || top == -INFINITY)
            continue;
          double p = std::exp(s[j] - top);
          den += p;
          num += p * v[(b * c.lk + j) * c.dv + y];
        }
        out[(b * c.lq + i) * c.dv + y] = den > 0 ? float(num / den) : 0.0f;
      }
    }
  return out;
}

uint16_t narrowBits(float x, DType dtype) {
  return dtype == DType::F16 ? detail::roundToF16(x) : detail::roundToBf16(x);
}

float widen(uint16_t bits, DType dtype) {
  return dtype == DType::F16 ? detail::widenF16(bits) : detail::widenBf16(bits);
}

HostTensor tensorOf(const std::vector<int64_t> &shape,
                    const std::vector<float> &values, DType dtype) {
  if (dtype == DType::F32)
    return f32Tensor(shape, values);
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = narrowBits(values[i], dtype);
    std::memcpy(t.data.data() + 2 * i, &bits, 2);
  }
  return t;
}

/// \p values as the narrow type holds them.
std::vector<float> asHeld(std::vector<float> values, DType dtype) {
  if (dtype != DType::F32)
    for (float &x : values)
      x = widen(narrowBits(x, dtype), dtype);
  return values;
}

struct Built {
  ExecutableSpec spec;
  std::vector<HostTensor> inputs;
  std::vector<float> want;
};

/// "main" = the attention of \p c on random inputs (a mask of random
/// keeps, or values in [-2, 2), where \p c has one), and its reference.
Built build(const Case &c, unsigned seed) {
  std::vector<int64_t> qs = shapeOf(c, c.lq, c.d), ks = shapeOf(c, c.lk, c.d),
                       vs = shapeOf(c, c.lk, c.dv), os = shapeOf(c, c.lq, c.dv);
  std::vector<float> q = asHeld(randoms(product(qs), seed), c.dtype),
                     k = asHeld(randoms(product(ks), seed + 1), c.dtype),
                     v = asHeld(randoms(product(vs), seed + 2), c.dtype), mask;
  size_t size = c.dtype == DType::F32 ? 4 : 2;
  AttentionSpec a;
  a.queryShape = qs, a.keyShape = ks, a.valueShape = vs;
  a.dtype = c.dtype;
  a.scale = c.scale;
  a.causal = c.causal;
  a.query = inputRef(0, q.size() * size);
  a.key = inputRef(1, k.size() * size);
  a.value = inputRef(2, v.size() * size);
  Built out;
  out.inputs = {tensorOf(qs, q, c.dtype), tensorOf(ks, k, c.dtype),
                tensorOf(vs, v, c.dtype)};
  FunctionSpec f;
  f.name = "main";
  f.inputs = {{c.dtype, qs}, {c.dtype, ks}, {c.dtype, vs}};
  if (!c.maskShape.empty()) {
    mask = randoms(product(c.maskShape), seed + 3);
    if (c.boolMask) {
      // About a quarter hidden.
      for (float &x : mask)
        x = x < -0.5f ? 0.0f : 1.0f;
      HostTensor t;
      t.dtype = DType::I1;
      t.shape = c.maskShape;
      for (float x : mask)
        t.data.push_back(x != 0.0f);
      out.inputs.push_back(t);
    } else {
      for (float &x : mask)
        x *= 2.0f;
      mask = asHeld(mask, c.dtype);
      out.inputs.push_back(tensorOf(c.maskShape, mask, c.dtype));
    }
    a.maskShape = c.maskShape;
    a.maskDtype = c.boolMask ? DType::I1 : c.dtype;
    a.mask = inputRef(3, out.inputs.back().data.size());
    f.inputs.push_back({a.maskDtype, c.maskShape});
  }
  a.output = outputRef(0, product(os) * size);
  f.outputs = {{c.dtype, os}};
  f.commands = {a};
  out.spec.functions = {f};
  out.want = reference(c, q, k, v, mask);
  return out;
}

StatusOr<std::vector<HostTensor>> runOnce(const Built &b, int threads) {
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(flow::test::build(b.spec));
  if (!exe)
    return exe.status();
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(std::shared_ptr<const Executable>(std::move(*exe)),
                      RuntimeOptions{threads});
  if (!session)
    return session.status();
  return (*session)->run("main", b.inputs);
}

/// Runs \p c on 1 and 2 threads against the reference within \p tolerance
/// (absolute: every output is an average of values in [-1, 1]).
void check(const Case &c, float tolerance, unsigned seed = 11) {
  Built b = build(c, seed);
  for (int threads : {1, 2}) {
    StatusOr<std::vector<HostTensor>> out = runOnce(b, threads);
    ASSERT_TRUE(out) << out.status().message();
    const HostTensor &t = (*out)[0];
    ASSERT_EQ(t.dtype, c.dtype);
    for (size_t i = 0; i < b.want.size(); ++i) {
      float got =
          c.dtype == DType::F32
              ? floats(t)[i]
              : widen(reinterpret_cast<const uint16_t *>(t.data.data())[i],
                      c.dtype);
      if (!(std::fabs(got - b.want[i]) <= tolerance)) {
        ADD_FAILURE() << "element " << i << " on " << threads
                      << " threads: " << got << ", want " << b.want[i];
        return;
      }
    }
  }
}

// f32: scores are sums of at most 64 products of values below 1 and the
// weights are f32 exponentials (relative error near 1e-7); an output is a
// weighted average of values in [-1, 1], so f32 rounding keeps it within
// 1e-5 of the double result.
constexpr float kF32 = 1e-5f;

TEST(AttentionTest, OneBlock) { check({{2, 3}, 5, 7, 8, 8}, kF32); }

TEST(AttentionTest, RankTwoAndWideValues) { check({{}, 3, 4, 5, 9}, kF32); }

TEST(AttentionTest, ManyQueryAndKeyBlocks) {
  // 130 query rows (3 blocks of 64) over 600 keys (3 blocks of 256): the
  // online softmax rescales across key blocks.
  check({{1, 2}, 130, 600, 16, 24}, kF32);
}

TEST(AttentionTest, OneQueryOverManyKeys) {
  // Decoding: one query row per head.
  check({{2, 4}, 1, 700, 32, 32}, kF32);
}

TEST(AttentionTest, KeyPaddingMask) {
  Case c{{2, 3}, 9, 300, 8, 8};
  c.maskShape = {2, 1, 1, 300};
  check(c, kF32);
}

TEST(AttentionTest, FullBooleanMask) {
  // Some rows have every key hidden (zeros, not NaN).
  Case c{{2}, 40, 3, 8, 8};
  c.maskShape = {2, 40, 3};
  check(c, kF32);
}

TEST(AttentionTest, AdditiveMaskBroadcastOverHeads) {
  Case c{{2, 3}, 70, 90, 16, 16};
  c.maskShape = {2, 1, 70, 90};
  c.boolMask = false;
  check(c, kF32);
}

TEST(AttentionTest, Causal) {
  check({{1, 2}, 300, 300, 16, 16, true}, kF32);
  // More queries than keys, and fewer: PyTorch's top-left alignment.
  check({{1, 2}, 70, 20, 8, 8, true}, kF32);
  check({{1, 2}, 20, 70, 8, 8, true}, kF32);
}

TEST(AttentionTest, CausalWithKeyMask) {
  Case c{{2, 2}, 80, 80, 8, 8, true};
  c.maskShape = {80};
  check(c, kF32);
}

// Narrow types: inputs as the type holds them, sums in f32, the output
// rounded once: within half an ulp at 1 (bf16 2^-8, f16 2^-11) plus the
// f32 error.
TEST(AttentionTest, Bf16) {
  Case c{{2, 2}, 70, 300, 32, 32};
  c.dtype = DType::BF16;
  c.maskShape = {2, 1, 1, 300};
  check(c, 4e-3f);
}

TEST(AttentionTest, F16AdditiveMask) {
  Case c{{1, 2}, 20, 40, 16, 16, true};
  c.dtype = DType::F16;
  c.maskShape = {20, 40};
  c.boolMask = false;
  check(c, 6e-4f);
}

TEST(AttentionTest, NaNStaysInItsRow) {
  Case c{{1}, 3, 5, 4, 4};
  Built b = build(c, 5);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(b.inputs[0].data.data() + 4 * 4, &nan, 4); // row 1
  StatusOr<std::vector<HostTensor>> out = runOnce(b, 2);
  ASSERT_TRUE(out) << out.status().message();
  std::vector<float> got = floats((*out)[0]);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t y = 0; y < 4; ++y)
      EXPECT_EQ(std::isnan(got[r * 4 + y]), r == 1) << r << ", " << y;
}

/// The load error of \p c after \p edit changes its command.
template <typename Edit> std::string loadError(const Case &c, Edit edit) {
  Built b = build(c, 3);
  auto &f = b.spec.functions[0];
  edit(std::get<AttentionSpec>(f.commands[0]), f);
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(flow::test::build(b.spec));
  return exe ? std::string() : exe.status().message();
}

TEST(AttentionTest, RefusesMalformedCommands) {
  Case masked{{2, 3}, 5, 7, 8, 8};
  masked.maskShape = {2, 1, 5, 7};
  auto has = [](const std::string &error, const std::string &part) {
    return error.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(loadError(masked,
                            [](AttentionSpec &a, FunctionSpec &) {
                              a.keyShape = {2, 3, 7, 4};
                            }),
                  "key rows have 4 elements but query rows have 8"));
  EXPECT_TRUE(has(loadError(masked,
                            [](AttentionSpec &a, FunctionSpec &) {
                              a.maskShape = {3, 1, 5, 7};
                            }),
                  "does not broadcast to the scores [2, 3, 5, 7]"));
  EXPECT_TRUE(
      has(loadError(masked, [](AttentionSpec &a,
                               FunctionSpec &) { a.maskDtype = DType::I32; }),
          "a mask of I32 elements"));
  EXPECT_TRUE(
      has(loadError(masked, [](AttentionSpec &a,
                               FunctionSpec &) { a.dtype = DType::F64; }),
          "attention runs F32, F16 or BF16"));
  EXPECT_TRUE(has(loadError(masked,
                            [](AttentionSpec &a, FunctionSpec &) {
                              a.scale = std::numeric_limits<double>::infinity();
                            }),
                  "is not finite"));
  EXPECT_TRUE(
      has(loadError(masked, [](AttentionSpec &a,
                               FunctionSpec &) { a.output->size -= 4; }),
          "output has"));
  EXPECT_TRUE(has(loadError(masked, [](AttentionSpec &a,
                                       FunctionSpec &) { a.mask.reset(); }),
                  "mask_shape without a mask"));
  EXPECT_TRUE(has(loadError(masked,
                            [](AttentionSpec &a, FunctionSpec &f) {
                              // The output written over the query in the arena.
                              uint64_t bytes = a.query->size;
                              f.arenaSize = bytes;
                              a.query = arenaRef(0, bytes);
                              a.output = arenaRef(0, bytes);
                            }),
                  "the output overlaps the query"));
}

} // namespace
