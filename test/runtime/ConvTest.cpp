//===- ConvTest.cpp - Tests for convolution commands ----------------------===//
//
// Part of the Flow project.
//
// Runs convolution commands (plain and blocked buffers, groups, dilation,
// stride, padding, bias, residual, relu) on the library the runtime finds
// and on Flow's reference path (FLOW_CONV=reference), against a direct
// loop nest written here.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/Blas.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

using namespace flow::runtime;
using namespace flow::test;

namespace {

struct Shape {
  int64_t n, c, h, w, o, kh, kw;
  int64_t stride, pad, dilation, groups;
  int64_t oh() const { return (h + 2 * pad - dilation * (kh - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (kw - 1) - 1) / stride + 1; }
};

/// relu?(conv(x, f) + bias + residual), straight from the definition.
std::vector<float> direct(const Shape &s, const std::vector<float> &x,
                          const std::vector<float> &f,
                          const std::vector<float> &bias,
                          const std::vector<float> *residual, bool relu) {
  int64_t oh = s.oh(), ow = s.ow(), cg = s.c / s.groups, og = s.o / s.groups;
  std::vector<float> out(s.n * s.o * oh * ow);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = bias[o];
          int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < s.kh; ++ky)
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                int64_t iy = y * s.stride - s.pad + ky * s.dilation;
                int64_t ix = xo * s.stride - s.pad + kx * s.dilation;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w)
                  continue;
                acc += double(x[((b * s.c + g * cg + ci) * s.h + iy) * s.w +
                                ix]) *
                       f[((o * cg + ci) * s.kh + ky) * s.kw + kx];
              }
          size_t i = ((b * s.o + o) * oh + y) * ow + xo;
          if (residual)
            acc += (*residual)[i];
          out[i] = relu ? std::max(float(acc), 0.0f) : float(acc);
        }
  return out;
}

std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// Two convolutions through a blocked arena buffer: the first (relu) from
/// the plain input into the arena, the second from there with the plain
/// residual input, into the plain output. Compares with `direct` on the
/// library path and on the reference path.
void checkChain(const Shape &a, const Shape &b, int threads) {
  ASSERT_EQ(a.o, b.c);
  std::vector<float> x = randoms(a.n * a.c * a.h * a.w, 1),
                     fa = randoms(a.o * (a.c / a.groups) * a.kh * a.kw, 2),
                     ba = randoms(a.o, 3),
                     fb = randoms(b.o * (b.c / b.groups) * b.kh * b.kw, 4),
                     bb = randoms(b.o, 5),
                     r = randoms(b.n * b.o * b.oh() * b.ow(), 6);
  std::vector<float> mid = direct(a, x, fa, ba, nullptr, true);
  std::vector<float> want = direct(b, mid, fb, bb, &r, false);

  uint64_t xBytes = x.size() * 4, midBytes = mid.size() * 4,
           outBytes = want.size() * 4;
  ExecutableSpec spec;
  spec.constants = {floatBytes(fa), floatBytes(ba), floatBytes(fb),
                    floatBytes(bb)};
  FunctionSpec f;
  f.name = "main";
  f.inputs = {{DType::F32, {a.n, a.c, a.h, a.w}},
              {DType::F32, {b.n, b.o, b.oh(), b.ow()}}};
  f.outputs = {{DType::F32, {b.n, b.o, b.oh(), b.ow()}}};
  f.arenaSize = midBytes;
  auto conv = [](const Shape &s) {
    ConvSpec c;
    c.inputShape = {s.n, s.c, s.h, s.w};
    c.filterShape = {s.o, s.c / s.groups, s.kh, s.kw};
    c.outputShape = {s.n, s.o, s.oh(), s.ow()};
    c.strides = {s.stride, s.stride};
    c.padding = {s.pad, s.pad, s.pad, s.pad};
    c.dilations = {s.dilation, s.dilation};
    c.groups = s.groups;
    return c;
  };
  ConvSpec first = conv(a);
  first.relu = true;
  first.input = inputRef(0, xBytes);
  first.filter = constantRef(0, fa.size() * 4);
  first.bias = constantRef(1, ba.size() * 4);
  first.output = arenaRef(0, midBytes);
  first.blockedOutput = a.o % 16 == 0;
  ConvSpec second = conv(b);
  second.input = arenaRef(0, midBytes);
  second.filter = constantRef(2, fb.size() * 4);
  second.bias = constantRef(3, bb.size() * 4);
  second.residual = inputRef(1, outBytes);
  second.output = outputRef(0, outBytes);
  second.blockedInput = first.blockedOutput;
  f.commands = {first, second};
  spec.functions = {f};

  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference path" : "library path");
    if (reference)
      setenv("FLOW_CONV", "reference", 1);
    StatusOr<std::unique_ptr<Executable>> exe =
        Executable::loadBytes(build(spec));
    ASSERT_TRUE(exe) << exe.status().message();
    StatusOr<std::unique_ptr<Session>> session = Session::create(
        std::shared_ptr<const Executable>(std::move(*exe)),
        RuntimeOptions{threads});
    unsetenv("FLOW_CONV");
    ASSERT_TRUE(session) << session.status().message();
    // Twice: the second call reuses the primitives and reordered weights.
    for (int call = 0; call < 2; ++call) {
      StatusOr<std::vector<HostTensor>> out = (*session)->run(
          "main", {f32Tensor({a.n, a.c, a.h, a.w}, x),
                   f32Tensor({b.n, b.o, b.oh(), b.ow()}, r)});
      ASSERT_TRUE(out) << out.status().message();
      std::vector<float> got = floats((*out)[0]);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
            << "element " << i << ", call " << call;
    }
  }
}

TEST(ConvTest, PointwiseThroughBlockedBuffer) {
  checkChain({2, 8, 7, 9, 32, 1, 1, 1, 0, 1, 1},
             {2, 32, 7, 9, 16, 1, 1, 1, 0, 1, 1}, 2);
}

TEST(ConvTest, StridedPaddedDilatedGrouped) {
  checkChain({1, 3, 13, 11, 32, 3, 3, 2, 1, 1, 1},
             {1, 32, 7, 6, 48, 3, 3, 1, 2, 2, 4}, 2);
}

TEST(ConvTest, PlainWhenChannelsAreNotBlockable) {
  // 24 channels: the middle buffer stays plain.
  checkChain({1, 5, 6, 6, 24, 3, 3, 1, 1, 1, 1},
             {1, 24, 6, 6, 8, 3, 3, 1, 1, 1, 4}, 1);
}

TEST(ConvTest, DepthwiseOnOneThread) {
  checkChain({1, 16, 10, 10, 16, 3, 3, 1, 1, 1, 16},
             {1, 16, 10, 10, 16, 1, 1, 1, 0, 1, 1}, 1);
}

TEST(ConvTest, ReportsWhatRunsConvolutions) {
  StatusOr<BlasInfo> info = loadBlas();
  ASSERT_TRUE(info) << info.status().message();
  // The library (or Flow's reference path) and the layout of blocked
  // buffers.
  const std::string &text = info->convLibrary;
  EXPECT_TRUE(text.rfind("oneDNN ", 0) == 0 ||
              text.rfind("Flow reference", 0) == 0)
      << text;
  EXPECT_TRUE(text.find(", nhwc") != std::string::npos ||
              text.find(", nChw16c") != std::string::npos ||
              text.find(", nChw8c") != std::string::npos)
      << text;
}

TEST(ConvTest, RefusesInconsistentShapes) {
  ExecutableSpec spec;
  spec.constants = {floatBytes(std::vector<float>(16 * 3 * 9))};
  FunctionSpec f;
  f.name = "main";
  f.inputs = {{DType::F32, {1, 3, 8, 8}}};
  f.outputs = {{DType::F32, {1, 16, 8, 8}}};
  ConvSpec c;
  c.inputShape = {1, 3, 8, 8};
  c.filterShape = {16, 3, 3, 3};
  c.outputShape = {1, 16, 7, 8}; // padding 1 gives 8x8
  c.padding = {1, 1, 1, 1};
  c.input = inputRef(0, 3 * 64 * 4);
  c.filter = constantRef(0, 16 * 27 * 4);
  c.output = outputRef(0, 16 * 56 * 4);
  f.commands = {c};
  spec.functions = {f};
  auto error = [&]() {
    StatusOr<std::unique_ptr<Executable>> exe =
        Executable::loadBytes(build(spec));
    return exe ? std::string() : exe.status().message();
  };
  EXPECT_NE(error().find("output_shape does not follow"), std::string::npos)
      << error();
  // Blocked input with 3 channels.
  auto &cmd = std::get<ConvSpec>(spec.functions[0].commands[0]);
  cmd.outputShape = {1, 16, 8, 8};
  cmd.output = outputRef(0, 16 * 64 * 4);
  spec.functions[0].outputs = {{DType::F32, {1, 16, 8, 8}}};
  EXPECT_EQ(error(), "");
  cmd.blockedOutput = true;
  EXPECT_NE(error().find("not a transient (arena) buffer"), std::string::npos)
      << error();
  cmd.blockedOutput = false;
  cmd.blockedInput = true;
  EXPECT_NE(error().find("multiple of 16 channels"), std::string::npos)
      << error();
  cmd.blockedInput = false;
  cmd.groups = 2;
  EXPECT_NE(error().find("groups do not divide"), std::string::npos)
      << error();
  cmd.groups = 1;
  cmd.filter = constantRef(0, 16 * 27 * 4 - 4);
  EXPECT_NE(error().find("filter has"), std::string::npos) << error();
}

} // namespace
