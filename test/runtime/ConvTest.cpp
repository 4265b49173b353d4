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
#include "TestValues.h"

#include "flow/runtime/Blas.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

std::vector<float> magnitudes(std::vector<float> v) {
  for (float &x : v)
    x = std::fabs(x);
  return v;
}

/// The process's threads after the last expectPaths run, while its
/// session still lived.
int threadsWhileSessionLived = 0;

/// Runs "main" of \p spec on \p inputs with each FLOW_CONV value of
/// \p paths ("": the library path as a user gets it; "direct": without
/// Winograd; "reference": Flow's reference path), twice each (the second
/// call reuses the primitives and reordered weights), and compares its
/// output with \p want: element i within 1e-4 (1 + |want[i]|) + slack[i].
/// Returns, per path, what ran each convolution command ("jit:avx512_core",
/// "reference").
std::vector<std::vector<std::string>>
expectPaths(const ExecutableSpec &spec, const std::vector<HostTensor> &inputs,
            int threads, const std::vector<float> &want,
            const std::vector<float> &slack,
            const std::vector<std::string> &paths = {"", "reference"}) {
  std::vector<std::vector<std::string>> kernels(paths.size());
  for (size_t p = 0; p < paths.size(); ++p) {
    SCOPED_TRACE("FLOW_CONV=" + paths[p]);
    if (!paths[p].empty())
      setenv("FLOW_CONV", paths[p].c_str(), 1);
    StatusOr<std::unique_ptr<Executable>> exe =
        Executable::loadBytes(build(spec));
    if (!exe) {
      ADD_FAILURE() << exe.status().message();
      unsetenv("FLOW_CONV");
      return kernels;
    }
    StatusOr<std::unique_ptr<Session>> session = Session::create(
        std::shared_ptr<const Executable>(std::move(*exe)),
        RuntimeOptions{threads});
    unsetenv("FLOW_CONV");
    if (!session) {
      ADD_FAILURE() << session.status().message();
      return kernels;
    }
    (*session)->setProfiling(true);
    for (int call = 0; call < 2; ++call) {
      StatusOr<std::vector<HostTensor>> out = (*session)->run("main", inputs);
      if (!out) {
        ADD_FAILURE() << out.status().message();
        return kernels;
      }
      std::vector<float> got = floats((*out)[0]);
      EXPECT_EQ(got.size(), want.size());
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        if (std::fabs(got[i] - want[i]) >
            1e-4f * (1 + std::fabs(want[i])) + slack[i]) {
          ADD_FAILURE() << "element " << i << ", call " << call << ": "
                        << got[i] << ", want " << want[i];
          return kernels;
        }
    }
    threadsWhileSessionLived = threadCount();
    for (const Session::CommandProfile &command : (*session)->profile())
      if (command.kind == "conv") {
        // "1x32x12x12 * 32x32x3x3, relu [jit_wino_4x3:avx512_core]"
        size_t open = command.what.rfind('[');
        kernels[p].push_back(open == std::string::npos
                                 ? command.what
                                 : command.what.substr(open + 1,
                                                       command.what.size() -
                                                           open - 2));
      }
  }
  return kernels;
}

void expectBothPaths(const ExecutableSpec &spec,
                     const std::vector<HostTensor> &inputs, int threads,
                     const std::vector<float> &want,
                     const std::vector<float> &slack) {
  expectPaths(spec, inputs, threads, want, slack);
}

/// Two convolutions through a blocked arena buffer: the first (relu) from
/// the plain input into the arena, the second from there with the plain
/// residual input, into the plain output. Compares with `direct` on the
/// library path and on the reference path. With \p bf16 both commands
/// read their input and filter rounded to bf16, and the blocked buffer
/// holds bf16. \p paths and \p kernels as for expectPaths.
void checkChain(const Shape &a, const Shape &b, int threads, bool bf16 = false,
                const std::vector<std::string> &paths = {"", "reference"},
                std::vector<std::vector<std::string>> *kernels = nullptr) {
  ASSERT_EQ(a.o, b.c);
  std::vector<float> x = randoms(a.n * a.c * a.h * a.w, 1),
                     fa = randoms(a.o * (a.c / a.groups) * a.kh * a.kw, 2),
                     ba = randoms(a.o, 3),
                     fb = randoms(b.o * (b.c / b.groups) * b.kh * b.kw, 4),
                     bb = randoms(b.o, 5),
                     r = randoms(b.n * b.o * b.oh() * b.ow(), 6);
  auto reads = [&](const std::vector<float> &v) {
    return bf16 ? roundedToBf16(v) : v;
  };
  std::vector<float> mid = direct(a, reads(x), reads(fa), ba, nullptr, true);
  std::vector<float> want = direct(b, reads(mid), reads(fb), bb, &r, false);
  // Each element's tolerance: f32 rounding (1e-4), and in bf16 the middle
  // tensor's rounding, which may land one bf16 step (2^-8 of it) away
  // when the library summed it in another order: at most 2^-8 of the
  // second convolution's sum of magnitudes.
  std::vector<float> slack(want.size(), 0.0f);
  if (bf16)
    slack = direct(b, magnitudes(mid), magnitudes(fb),
                   std::vector<float>(b.o, 0.0f), nullptr, false);
  bool blockedMid = a.o % 16 == 0;
  bool bf16Mid = bf16 && blockedMid;

  uint64_t xBytes = x.size() * 4, midBytes = mid.size() * (bf16Mid ? 2 : 4),
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
  first.blockedOutput = blockedMid;
  first.bf16 = bf16;
  first.outputDtype = bf16Mid ? DType::BF16 : DType::F32;
  ConvSpec second = conv(b);
  second.input = arenaRef(0, midBytes);
  second.filter = constantRef(2, fb.size() * 4);
  second.bias = constantRef(3, bb.size() * 4);
  second.residual = inputRef(1, outBytes);
  second.output = outputRef(0, outBytes);
  second.blockedInput = first.blockedOutput;
  second.bf16 = bf16;
  second.inputDtype = first.outputDtype;
  f.commands = {first, second};
  spec.functions = {f};

  for (float &s : slack)
    s /= 256;
  std::vector<std::vector<std::string>> ran =
      expectPaths(spec,
                  {f32Tensor({a.n, a.c, a.h, a.w}, x),
                   f32Tensor({b.n, b.o, b.oh(), b.ow()}, r)},
                  threads, want, slack, paths);
  if (kernels)
    *kernels = ran;
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

TEST(ConvTest, Bf16ThroughBlockedBf16Buffer) {
  checkChain({2, 8, 7, 9, 32, 1, 1, 1, 0, 1, 1},
             {2, 32, 7, 9, 16, 3, 3, 1, 1, 1, 1}, 2, /*bf16=*/true);
}

TEST(ConvTest, Bf16StridedGroupedAndPlain) {
  checkChain({1, 3, 13, 11, 32, 3, 3, 2, 1, 1, 1},
             {1, 32, 7, 6, 48, 3, 3, 1, 2, 2, 4}, 2, /*bf16=*/true);
  // 24 channels: the middle buffer stays plain f32.
  checkChain({1, 5, 6, 6, 24, 3, 3, 1, 1, 1, 1},
             {1, 24, 6, 6, 8, 3, 3, 1, 1, 1, 4}, 1, /*bf16=*/true);
}

/// A residual add written over its residual (the compiler's in-place
/// plan: the output's buffer is the residual's, which dies there):
/// a = relu(conv(x)), b = conv(x), b = relu(conv(a) + b), out = conv(b),
/// with a and b blocked arena buffers (bf16 ones with \p bf16).
void checkResidualInPlace(bool bf16) {
  Shape first{1, 8, 6, 7, 16, 3, 3, 1, 1, 1, 1};
  Shape mid{1, 16, 6, 7, 16, 1, 1, 1, 0, 1, 1};
  Shape last{1, 16, 6, 7, 8, 1, 1, 1, 0, 1, 1};
  std::vector<float> x = randoms(8 * 42, 21), f1 = randoms(16 * 72, 22),
                     f2 = randoms(16 * 72, 23), f3 = randoms(16 * 16, 24),
                     f4 = randoms(8 * 16, 25), zero16(16, 0.0f),
                     zero8(8, 0.0f);
  auto reads = [&](const std::vector<float> &v) {
    return bf16 ? roundedToBf16(v) : v;
  };
  auto held = [&](const std::vector<float> &v) {
    return bf16 ? roundedToBf16(v) : v;
  };
  std::vector<float> a = held(direct(first, reads(x), reads(f1), zero16,
                                     nullptr, true));
  std::vector<float> b = held(direct(first, reads(x), reads(f2), zero16,
                                     nullptr, false));
  std::vector<float> c =
      held(direct(mid, reads(a), reads(f3), zero16, &b, true));
  std::vector<float> want = direct(last, reads(c), reads(f4), zero8, nullptr,
                                   false);
  // In bf16, a rounding of the held tensors one bf16 step away (another
  // summation order) moves the sums that read them: bounded by 2^-8 of
  // the magnitudes through the last two convolutions.
  std::vector<float> slack(want.size(), 0.0f);
  if (bf16) {
    std::vector<float> spread =
        direct(mid, magnitudes(a), magnitudes(f3), zero16, nullptr, false);
    for (size_t i = 0; i < spread.size(); ++i)
      spread[i] += std::fabs(b[i]) + std::fabs(c[i]);
    slack = direct(last, spread, magnitudes(f4), zero8, nullptr, false);
  }
  uint64_t bytes = 16 * 42 * (bf16 ? 2 : 4);
  ExecutableSpec spec;
  spec.constants = {floatBytes(f1), floatBytes(f2), floatBytes(f3),
                    floatBytes(f4)};
  FunctionSpec fn;
  fn.name = "main";
  fn.inputs = {{DType::F32, {1, 8, 6, 7}}};
  fn.outputs = {{DType::F32, {1, 8, 6, 7}}};
  fn.arenaSize = 2 * bytes;
  DType blocked = bf16 ? DType::BF16 : DType::F32;
  auto conv = [&](const Shape &s, int filter) {
    ConvSpec c;
    c.inputShape = {s.n, s.c, s.h, s.w};
    c.filterShape = {s.o, s.c, s.kh, s.kw};
    c.outputShape = {s.n, s.o, s.oh(), s.ow()};
    c.padding = {s.pad, s.pad, s.pad, s.pad};
    c.filter = constantRef(filter, s.o * s.c * s.kh * s.kw * 4);
    c.bf16 = bf16;
    return c;
  };
  ConvSpec c1 = conv(first, 0), c2 = conv(first, 1), c3 = conv(mid, 2),
           c4 = conv(last, 3);
  c1.relu = c3.relu = true;
  c1.input = c2.input = inputRef(0, x.size() * 4);
  c1.output = c3.input = arenaRef(0, bytes);
  c2.output = c3.residual = c3.output = c4.input = arenaRef(bytes, bytes);
  c1.blockedOutput = c2.blockedOutput = c3.blockedInput =
      c3.blockedResidual = c3.blockedOutput = c4.blockedInput = true;
  c1.outputDtype = c2.outputDtype = c3.inputDtype = c3.residualDtype =
      c3.outputDtype = c4.inputDtype = blocked;
  c4.output = outputRef(0, want.size() * 4);
  fn.commands = {c1, c2, c3, c4};
  spec.functions = {fn};
  for (float &s : slack)
    s /= 256;
  expectBothPaths(spec, {f32Tensor({1, 8, 6, 7}, x)}, 2, want, slack);
}

TEST(ConvTest, ResidualInPlace) { checkResidualInPlace(false); }

TEST(ConvTest, Bf16ResidualInPlace) { checkResidualInPlace(true); }

TEST(ConvTest, Bf16OneConvolutionExactly) {
  // One bf16 convolution between plain f32 tensors: only the f32 summation
  // order differs from the products of the rounded operands, so 1e-4
  // holds; the f32 products differ by more than 1e-3 (checked), so a
  // library that ignored `bf16` fails.
  Shape a{2, 16, 9, 7, 32, 3, 3, 1, 1, 1, 1};
  std::vector<float> x = randoms(a.n * a.c * a.h * a.w, 11),
                     f = randoms(a.o * a.c * a.kh * a.kw, 12),
                     bias = randoms(a.o, 13),
                     r = randoms(a.n * a.o * a.oh() * a.ow(), 14);
  std::vector<float> want =
      direct(a, roundedToBf16(x), roundedToBf16(f), bias, &r, true);
  std::vector<float> exact = direct(a, x, f, bias, &r, true);
  double apart = 0;
  for (size_t i = 0; i < want.size(); ++i)
    apart = std::max(apart, double(std::fabs(exact[i] - want[i])) /
                                (1 + std::fabs(want[i])));
  EXPECT_GT(apart, 1e-3);

  ExecutableSpec spec;
  spec.constants = {floatBytes(f), floatBytes(bias)};
  FunctionSpec fn;
  fn.name = "main";
  std::vector<int64_t> inShape = {a.n, a.c, a.h, a.w},
                       outShape = {a.n, a.o, a.oh(), a.ow()};
  fn.inputs = {{DType::F32, inShape}, {DType::F32, outShape}};
  fn.outputs = {{DType::F32, outShape}};
  ConvSpec c;
  c.inputShape = inShape;
  c.filterShape = {a.o, a.c, a.kh, a.kw};
  c.outputShape = outShape;
  c.padding = {1, 1, 1, 1};
  c.relu = true;
  c.bf16 = true;
  c.input = inputRef(0, x.size() * 4);
  c.filter = constantRef(0, f.size() * 4);
  c.bias = constantRef(1, bias.size() * 4);
  c.residual = inputRef(1, r.size() * 4);
  c.output = outputRef(0, want.size() * 4);
  fn.commands = {c};
  spec.functions = {fn};
  expectBothPaths(spec, {f32Tensor(inShape, x), f32Tensor(outShape, r)}, 2,
                  want, std::vector<float>(want.size(), 0.0f));
}

/// True when this process's convolutions run on oneDNN's Winograd kernel
/// by default (as the runtime reports it).
bool winogradOffered() {
  StatusOr<BlasInfo> info = loadBlas();
  return info && info->convLibrary.find("Winograd") != std::string::npos;
}

TEST(ConvTest, WinogradWhereOfferedAndDirectOnRequest) {
  // Two f32 3x3 stride-1 convolutions through a blocked buffer (the second
  // with a residual), then a strided one and a bf16 one, which Winograd
  // does not take.
  std::vector<std::vector<std::string>> kernels;
  checkChain({2, 16, 12, 10, 32, 3, 3, 1, 1, 1, 1},
             {2, 32, 12, 10, 48, 3, 3, 1, 1, 1, 1}, 2, false,
             {"", "direct", "reference"}, &kernels);
  ASSERT_EQ(kernels.size(), 3u);
  for (const std::vector<std::string> &path : kernels)
    ASSERT_EQ(path.size(), 2u);
  // The first runs on Winograd where oneDNN offers it; the second may not
  // (oneDNN 2.6's Winograd kernels take no residual operand), but never
  // when Winograd is turned off.
  bool offered = winogradOffered();
  EXPECT_EQ(kernels[0][0].find("wino") != std::string::npos, offered)
      << kernels[0][0];
  for (const std::string &k : kernels[1])
    EXPECT_EQ(k.find("wino"), std::string::npos) << k;
  for (const std::string &k : kernels[2])
    EXPECT_EQ(k, "reference");

  checkChain({1, 16, 11, 9, 32, 3, 3, 2, 1, 1, 1},
             {1, 32, 6, 5, 16, 3, 3, 1, 1, 1, 1}, 2, /*bf16=*/true, {""},
             &kernels);
  ASSERT_EQ(kernels.size(), 1u);
  for (const std::string &k : kernels[0])
    EXPECT_EQ(k.find("wino"), std::string::npos) << k;
  if (!offered)
    GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU: the default "
                    "path was checked to run direct convolutions";
}

TEST(ConvTest, OneSetOfThreadsRunsEveryKernel) {
  // A session with convolutions on oneDNN runs its loops on OpenMP's
  // team: with two threads, one thread beside the caller's, where a pool
  // of Flow's own beside oneDNN's OpenMP threads would have two.
  StatusOr<BlasInfo> info = loadBlas();
  ASSERT_TRUE(info) << info.status().message();
  if (info->convLibrary.rfind("oneDNN ", 0) != 0)
    GTEST_SKIP() << "no oneDNN: convolutions run on Flow's reference path";
  int before = threadCount();
  ASSERT_GT(before, 0);
  checkChain({2, 8, 7, 9, 32, 1, 1, 1, 0, 1, 1},
             {2, 32, 7, 9, 16, 3, 3, 1, 1, 1, 1}, 2, false, {""});
  EXPECT_EQ(threadsWhileSessionLived, before + 1);
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
  cmd.filter = constantRef(0, 16 * 27 * 4);
  // bf16 elements: only in a blocked tensor of a bf16 command.
  cmd.outputDtype = DType::BF16;
  EXPECT_NE(error().find("the output holds BF16 elements; a convolution's "
                         "tensors are F32, or BF16 when blocked in a bf16 "
                         "convolution"),
            std::string::npos)
      << error();
  cmd.bf16 = true;
  EXPECT_NE(error().find("the output holds BF16"), std::string::npos)
      << error();
  cmd.outputDtype = DType::I64;
  EXPECT_NE(error().find("the output holds I64"), std::string::npos)
      << error();
  cmd.outputDtype = DType::F32;
  cmd.inputDtype = DType::BF16;
  EXPECT_NE(error().find("the input holds BF16"), std::string::npos)
      << error();
  cmd.inputDtype = DType::F32;
  EXPECT_EQ(error(), "");
  cmd.bf16 = false;
  // A narrow convolution: every tensor of its element type, 2 bytes each.
  cmd.element = DType::F16;
  EXPECT_NE(error().find("the input holds F32 elements in an F16 "
                         "convolution"),
            std::string::npos)
      << error();
  cmd.inputDtype = cmd.residualDtype = cmd.outputDtype = DType::F16;
  EXPECT_NE(error().find("input has 768 bytes but its shape needs 384"),
            std::string::npos)
      << error();
  cmd.input = inputRef(0, 3 * 64 * 2);
  cmd.filter = constantRef(0, 16 * 27 * 2);
  cmd.output = outputRef(0, 16 * 64 * 2);
  EXPECT_EQ(error(), "");
  cmd.blockedOutput = true;
  EXPECT_NE(error().find("an F16 convolution is neither blocked nor bf16"),
            std::string::npos)
      << error();
  cmd.blockedOutput = false;
  cmd.element = DType::I64;
  EXPECT_NE(error().find("element type I64; a convolution runs F32, F16 or "
                         "BF16"),
            std::string::npos)
      << error();
}

} // namespace
