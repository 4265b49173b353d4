//===- PoolTest.cpp - Tests for pool commands ------------------------------===//
//
// Part of the Flow project.
//
// Runs max and average pool commands on plain buffers and on the
// convolution layout (between two convolutions, f32 and bf16, with every
// window shape the commands allow: kernel, stride, padding, dilation, ceil
// mode, the average's divisor), against a loop nest written here. A maximum is exact, so a max pool is compared
// exactly (NaN wins as in flow.max_pool2d); an average within f32 rounding.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"
#include "TestValues.h"

#include "flow/runtime/Session.h"
#include "flow/runtime/rules/Window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

using namespace flow::runtime;
using namespace flow::test;

namespace {

struct Window {
  int64_t kh, kw, sh, sw;
  int64_t top, left, bottom, right;
  int64_t dh = 1, dw = 1;
  bool ceil = false;
  /// An average pool (dilations 1), its divisor with or without padding.
  bool average = false, includePad = false;
};

struct Dims {
  int64_t n, c, h, w;
  int64_t oh(const Window &p) const {
    return flow::rules::windowExtent(h, p.top, p.bottom, p.dh, p.kh, p.sh,
                                     p.ceil);
  }
  int64_t ow(const Window &p) const {
    return flow::rules::windowExtent(w, p.left, p.right, p.dw, p.kw, p.sw,
                                     p.ceil);
  }
};

/// A pool command of window \p p from \p d (NCHW f32, unplaced).
PoolSpec poolSpec(const Dims &d, const Window &p) {
  PoolSpec m;
  m.average = p.average;
  m.countIncludePad = p.includePad;
  m.inputShape = {d.n, d.c, d.h, d.w};
  m.outputShape = {d.n, d.c, d.oh(p), d.ow(p)};
  m.kernel = {p.kh, p.kw};
  m.strides = {p.sh, p.sw};
  m.padding = {p.top, p.left, p.bottom, p.right};
  m.dilations = {p.dh, p.dw};
  return m;
}

/// A function "main" of \p m alone, from its input to its output.
ExecutableSpec poolAlone(const PoolSpec &m) {
  FunctionSpec f;
  f.name = "main";
  f.inputs = {{DType::F32, m.inputShape}};
  f.outputs = {{DType::F32, m.outputShape}};
  f.commands = {m};
  ExecutableSpec spec;
  spec.functions = {f};
  return spec;
}

/// The maximum over each window of NCHW \p x (a NaN in a window wins), or
/// its average (PyTorch's divisor: the window clipped to the padded input,
/// or with count_include_pad off to the input), straight from the
/// definition.
std::vector<float> pool(const Dims &d, const Window &p,
                        const std::vector<float> &x) {
  int64_t oh = d.oh(p), ow = d.ow(p);
  std::vector<float> out(d.n * d.c * oh * ow);
  auto count = [&](int64_t o, int64_t stride, int64_t before, int64_t after,
                   int64_t k, int64_t size) {
    int64_t start = o * stride - before;
    int64_t end = std::min(start + k, size + after);
    if (!p.includePad) {
      start = std::max<int64_t>(start, 0);
      end = std::min(end, size);
    }
    return end - start;
  };
  for (int64_t b = 0; b < d.n * d.c; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        float m = -std::numeric_limits<float>::infinity();
        double sum = 0;
        for (int64_t i = 0; i < p.kh; ++i)
          for (int64_t j = 0; j < p.kw; ++j) {
            int64_t iy = y * p.sh - p.top + i * p.dh;
            int64_t ix = z * p.sw - p.left + j * p.dw;
            if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
              continue;
            float v = x[(b * d.h + iy) * d.w + ix];
            sum += v;
            if (std::isnan(v) || v > m)
              m = std::isnan(m) ? m : v;
          }
        out[(b * oh + y) * ow + z] =
            p.average
                ? float(sum / (count(y, p.sh, p.top, p.bottom, p.kh, d.h) *
                               count(z, p.sw, p.left, p.right, p.kw, d.w)))
                : m;
      }
  return out;
}

/// A 1x1 convolution (no bias) of NCHW \p x with \p f [o, c].
std::vector<float> pointwise(const Dims &d, int64_t o,
                             const std::vector<float> &x,
                             const std::vector<float> &f) {
  int64_t hw = d.h * d.w;
  std::vector<float> out(d.n * o * hw, 0.0f);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < hw; ++i) {
        double acc = 0;
        for (int64_t ci = 0; ci < d.c; ++ci)
          acc += double(x[(b * d.c + ci) * hw + i]) * f[oc * d.c + ci];
        out[(b * o + oc) * hw + i] = float(acc);
      }
  return out;
}

/// Runs "main" of \p spec on \p inputs with FLOW_CONV=\p path, twice, and
/// returns its first output of each call.
std::vector<std::vector<float>> run(const ExecutableSpec &spec,
                                    const std::vector<HostTensor> &inputs,
                                    int threads, const std::string &path) {
  if (!path.empty())
    setenv("FLOW_CONV", path.c_str(), 1);
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(build(spec));
  StatusOr<std::unique_ptr<Session>> session =
      exe ? Session::create(std::shared_ptr<const Executable>(std::move(*exe)),
                            RuntimeOptions{threads})
          : StatusOr<std::unique_ptr<Session>>(exe.status());
  unsetenv("FLOW_CONV");
  if (!session) {
    ADD_FAILURE() << session.status().message();
    return {};
  }
  std::vector<std::vector<float>> outs;
  for (int call = 0; call < 2; ++call) {
    StatusOr<std::vector<HostTensor>> out = (*session)->run("main", inputs);
    if (!out) {
      ADD_FAILURE() << out.status().message();
      return outs;
    }
    outs.push_back(floats((*out)[0]));
  }
  return outs;
}

/// One pool from the function's input to its output (plain NCHW f32).
void checkAlone(const Dims &d, const Window &p, int threads,
                bool withNaN = false) {
  std::vector<float> x = randoms(d.n * d.c * d.h * d.w, 7);
  if (withNaN)
    for (size_t i = 3; i < x.size(); i += 97)
      x[i] = std::nanf("");
  std::vector<float> want = pool(d, p, x);
  PoolSpec m = poolSpec(d, p);
  m.input = inputRef(0, x.size() * 4);
  m.output = outputRef(0, want.size() * 4);
  for (const std::vector<float> &got :
       run(poolAlone(m), {f32Tensor(m.inputShape, x)}, threads, "")) {
    ASSERT_EQ(got.size(), want.size());
    // A maximum is exact; an average of at most 15 values below 1 in
    // magnitude, summed in f32, is within 15 * 2^-24 (< 1e-6) of the
    // double sum.
    const float tolerance = p.average ? 2e-6f : 0.0f;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::isnan(want[i]) ? !std::isnan(got[i])
                              : std::fabs(got[i] - want[i]) > tolerance) {
        ADD_FAILURE() << "element " << i << ": " << got[i] << ", want "
                      << want[i];
        return;
      }
  }
}

/// conv (1x1, 8 -> c channels) -> pool -> conv (1x1, c -> 8), the pool's
/// buffers in the arena: blocked (in the convolution layout, bf16 with
/// \p bf16) where \p blocked says and c allows, plain otherwise. Run on
/// the library as a user gets it, without Winograd (on AVX-512: NHWC) and
/// on Flow's reference path (nChw16c).
void checkBetweenConvolutions(const Dims &d, const Window &p, bool bf16,
                              int threads, bool blocked = true) {
  const int64_t ci = 8, co = 8;
  const Dims in{d.n, ci, d.h, d.w};
  const Dims pooled{d.n, d.c, d.oh(p), d.ow(p)};
  std::vector<float> x = randoms(d.n * ci * d.h * d.w, 1),
                     f1 = randoms(d.c * ci, 2), f2 = randoms(co * d.c, 3);
  auto reads = [&](const std::vector<float> &v) {
    return bf16 ? roundedToBf16(v) : v;
  };
  bool block = blocked && d.c % 16 == 0;
  bool half = bf16 && block;
  std::vector<float> mid = pointwise(in, d.c, reads(x), reads(f1));
  std::vector<float> midHeld = half ? roundedToBf16(mid) : mid;
  std::vector<float> poolOut = pool(d, p, midHeld);
  std::vector<float> want = pointwise(pooled, co, reads(poolOut), reads(f2));
  // Tolerance: f32 rounding, and with a bf16 middle the one bf16 step
  // (2^-8) its rounding may land away when the library sums in another
  // order: at most 2^-8 of the second convolution's sum of magnitudes.
  std::vector<float> slack(want.size(), 0.0f);
  if (half) {
    std::vector<float> a = poolOut, b = f2;
    for (float &v : a)
      v = std::fabs(v) / 128;
    for (float &v : b)
      v = std::fabs(v);
    slack = pointwise(pooled, co, a, b);
  }
  const uint64_t es = half ? 2 : 4;
  const uint64_t midBytes = mid.size() * es, poolBytes = poolOut.size() * es;
  ConvSpec first;
  first.inputShape = {d.n, ci, d.h, d.w};
  first.filterShape = {d.c, ci, 1, 1};
  first.outputShape = {d.n, d.c, d.h, d.w};
  first.input = inputRef(0, x.size() * 4);
  first.filter = constantRef(0, f1.size() * 4);
  first.output = arenaRef(0, midBytes);
  first.blockedOutput = block;
  first.bf16 = bf16;
  first.outputDtype = half ? DType::BF16 : DType::F32;
  PoolSpec m = poolSpec(d, p);
  uint64_t poolOffset = (midBytes + 63) / 64 * 64;
  m.input = first.output;
  m.output = arenaRef(poolOffset, poolBytes);
  m.blockedInput = m.blockedOutput = block;
  m.inputDtype = m.outputDtype = first.outputDtype;
  ConvSpec second;
  second.inputShape = m.outputShape;
  second.filterShape = {co, d.c, 1, 1};
  second.outputShape = {d.n, co, pooled.h, pooled.w};
  second.input = m.output;
  second.filter = constantRef(1, f2.size() * 4);
  second.output = outputRef(0, want.size() * 4);
  second.blockedInput = block;
  second.bf16 = bf16;
  second.inputDtype = m.outputDtype;
  FunctionSpec f;
  f.name = "main";
  f.inputs = {{DType::F32, first.inputShape}};
  f.outputs = {{DType::F32, second.outputShape}};
  f.arenaSize = poolOffset + poolBytes;
  f.commands = {first, m, second};
  ExecutableSpec spec;
  spec.constants = {floatBytes(f1), floatBytes(f2)};
  spec.functions = {f};
  for (const char *path : {"", "direct", "reference"}) {
    SCOPED_TRACE(std::string("FLOW_CONV=") + path);
    for (const std::vector<float> &got :
         run(spec, {f32Tensor(first.inputShape, x)}, threads, path)) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        if (std::fabs(got[i] - want[i]) >
            1e-4f * (1 + std::fabs(want[i])) + slack[i]) {
          ADD_FAILURE() << "element " << i << ": " << got[i] << ", want "
                        << want[i];
          return;
        }
    }
  }
}

// ResNet's stem pool, and shapes whose windows reach past both edges.
const Window kStem{3, 3, 2, 2, 1, 1, 1, 1};
const Window kCeil{3, 3, 2, 2, 0, 0, 0, 0, 1, 1, /*ceil=*/true};
const Window kDilated{3, 2, 1, 3, 2, 1, 2, 1, 2, 2};
const Window kWide{2, 5, 2, 1, 1, 2, 1, 2};
// Average pools: DenseNet's transition, padding counted or not, ceil mode
// (its extra positions never count).
const Window kAvg{2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, /*average=*/true};
const Window kAvgPad{3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true,
                     /*includePad=*/true};
const Window kAvgCeil{3, 3, 2, 2, 1, 1, 1, 1, 1, 1, /*ceil=*/true, true,
                      false};
const Window kAvgCeilPad{3, 2, 2, 3, 1, 0, 1, 0, 1, 1, true, true, true};

TEST(PoolTest, AloneOnPlainBuffers) {
  for (const Window &p : {kStem, kCeil, kDilated, kWide}) {
    checkAlone({2, 5, 9, 11}, p, 2);   // one channel at a time
    checkAlone({1, 32, 13, 10}, p, 1); // sixteen, a plane apart
  }
}

TEST(PoolTest, AveragesOnPlainBuffers) {
  for (const Window &p : {kAvg, kAvgPad, kAvgCeil, kAvgCeilPad}) {
    checkAlone({2, 5, 9, 11}, p, 2);
    checkAlone({1, 32, 13, 10}, p, 1);
  }
}

TEST(PoolTest, NaNWins) {
  checkAlone({1, 3, 12, 12}, kStem, 2, /*withNaN=*/true);
  checkAlone({1, 16, 12, 12}, kCeil, 1, /*withNaN=*/true);
}

TEST(PoolConvTest, BetweenConvolutionsInTheirLayout) {
  for (const Window &p : {kStem, kCeil, kDilated, kWide})
    checkBetweenConvolutions({2, 32, 15, 14}, p, /*bf16=*/false, 2);
}

TEST(PoolConvTest, Bf16BetweenConvolutions) {
  for (const Window &p : {kStem, kCeil, kDilated, kAvgPad, kAvgCeil})
    checkBetweenConvolutions({1, 16, 17, 12}, p, /*bf16=*/true, 2);
}

TEST(PoolConvTest, AveragesBetweenConvolutions) {
  for (const Window &p : {kAvg, kAvgPad, kAvgCeil, kAvgCeilPad})
    checkBetweenConvolutions({2, 32, 15, 14}, p, /*bf16=*/false, 2);
}

TEST(PoolConvTest, PlainBetweenConvolutions) {
  // 24 channels: nothing is blocked; 32 channels left plain on request.
  checkBetweenConvolutions({1, 24, 9, 9}, kStem, /*bf16=*/false, 2);
  checkBetweenConvolutions({1, 32, 9, 9}, kCeil, /*bf16=*/true, 1,
                           /*blocked=*/false);
}

TEST(PoolTest, RefusesInconsistentCommands) {
  PoolSpec m;
  m.inputShape = {1, 16, 8, 8};
  m.outputShape = {1, 16, 4, 4};
  m.kernel = {3, 3};
  m.strides = {2, 2};
  m.padding = {1, 1, 1, 1};
  m.input = inputRef(0, 16 * 64 * 4);
  m.output = outputRef(0, 16 * 16 * 4);
  ExecutableSpec spec = poolAlone(m);
  auto &cmd = std::get<PoolSpec>(spec.functions[0].commands[0]);
  auto error = [&]() {
    StatusOr<std::unique_ptr<Executable>> exe =
        Executable::loadBytes(build(spec));
    return exe ? std::string() : exe.status().message();
  };
  EXPECT_EQ(error(), "");
  cmd.outputShape = {1, 16, 5, 4}; // ceil mode on one axis only
  EXPECT_NE(error().find("output_shape does not follow"), std::string::npos)
      << error();
  cmd.outputShape = {1, 16, 4, 4};
  cmd.padding = {3, 1, 1, 1};
  EXPECT_NE(error().find("padding 3 is not smaller than the window"),
            std::string::npos)
      << error();
  cmd.padding = {1, 1, 1, 1};
  cmd.kernel = {3};
  EXPECT_NE(error().find("kernel needs 2 entries"), std::string::npos)
      << error();
  cmd.kernel = {3, 3};
  cmd.blockedInput = true;
  EXPECT_NE(error().find("not a transient (arena) buffer"), std::string::npos)
      << error();
  cmd.blockedInput = false;
  cmd.inputDtype = DType::BF16;
  EXPECT_NE(error().find("the input holds BF16 elements; a pool's tensors "
                         "are F32, or BF16 when blocked"),
            std::string::npos)
      << error();
  cmd.inputDtype = DType::F32;
  cmd.output = outputRef(0, 16 * 16 * 4 - 4);
  EXPECT_NE(error().find("bytes but the shapes need"), std::string::npos)
      << error();
}

} // namespace
