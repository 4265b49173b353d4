//===- ConformanceTest.cpp - One suite every device passes ----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The programs in test/runtime/conformance are compiled for each target at
// build time; each configuration runs them on its device and compares with
// references computed here, in plain loops:
//
//   cpu             the CPU target on the CPU device
//   cuda-emulated   the CUDA target's kernels, compiled for the CPU, on the
//                   CPU device
//   cuda            the CUDA target on the CUDA device (skipped where no
//                   CUDA driver can be opened)
//
// Every command kind a device runs goes through its CommandSink
// (runtime/src/CommandLoop.h); a device added to Flow is added here.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Device.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace flow::runtime;

namespace {

struct Config {
  const char *name;
  /// The target the programs were compiled for (their file suffix).
  const char *target;
  /// The device running them.
  const char *device;
};

std::ostream &operator<<(std::ostream &os, const Config &c) {
  return os << c.name;
}

/// Deterministic inputs in about [-scale, scale].
std::vector<float> values(size_t n, float seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(seed + 0.37f * static_cast<float>(i));
  return v;
}

HostTensor tensor(const std::vector<float> &v, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * sizeof(float));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> floats(const HostTensor &t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

/// Each element within `atol + rtol * |expected|`: f32 arithmetic summed in
/// another order (a library GEMM's blocking, a GPU's reduction tree) or
/// exp computed otherwise (libm, the kernels' polynomial, libdevice).
void expectClose(const std::vector<float> &got,
                 const std::vector<float> &expected, float rtol, float atol) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], atol + rtol * std::fabs(expected[i]))
        << "element " << i;
}

class Conformance : public ::testing::TestWithParam<Config> {
protected:
  void SetUp() override {
    if (std::string(GetParam().target) == "cuda" && !FLOW_CONFORMANCE_CUDA)
      GTEST_SKIP() << "the programs were not compiled for CUDA: no CUDA "
                      "toolkit (libdevice) at configure time";
    StatusOr<std::shared_ptr<Device>> opened = openDevice(GetParam().device);
    if (!opened)
      GTEST_SKIP() << "no " << GetParam().device
                   << " device here: " << opened.status().message();
    device = *opened;
  }

  /// Runs program `name` (compiled for the configuration's target) on the
  /// device.
  std::vector<HostTensor> run(const std::string &name,
                              const std::vector<HostTensor> &inputs) {
    std::string path = std::string(FLOW_CONFORMANCE_DIR) + "/" + name + "-" +
                       GetParam().target + ".fbin";
    StatusOr<std::unique_ptr<Executable>> exe = Executable::loadFile(path);
    EXPECT_TRUE(exe) << exe.status().message();
    if (!exe)
      return {};
    RuntimeOptions options;
    options.threads = 2;
    options.device = device;
    StatusOr<std::unique_ptr<Session>> session =
        Session::create(std::move(*exe), options);
    EXPECT_TRUE(session) << session.status().message();
    if (!session)
      return {};
    // Twice: a second call reuses what the first set up (arenas, packed
    // weights, device copies) and must give the same result.
    StatusOr<std::vector<HostTensor>> first = (*session)->run("main", inputs);
    EXPECT_TRUE(first) << first.status().message();
    StatusOr<std::vector<HostTensor>> second = (*session)->run("main", inputs);
    EXPECT_TRUE(second) << second.status().message();
    if (!first || !second)
      return {};
    for (size_t i = 0; i < first->size(); ++i)
      EXPECT_EQ((*first)[i].data, (*second)[i].data) << "output " << i;
    return std::move(*first);
  }

  std::shared_ptr<Device> device;
};

TEST_P(Conformance, ElementwiseKernels) {
  const int64_t rows = 64, cols = 33;
  std::vector<float> a = values(rows * cols, 0.1f, 2.0f);
  std::vector<float> b = values(cols, 1.3f);
  std::vector<HostTensor> out =
      run("elementwise", {tensor(a, {rows, cols}), tensor(b, {cols})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{rows, cols}));
  std::vector<float> expected(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float s = a[i * cols + j] + b[j];
      expected[i * cols + j] = std::exp(-std::max(s, 0.0f)) * a[i * cols + j];
    }
  expectClose(floats(out[0]), expected, 1e-5f, 1e-6f);
}

TEST_P(Conformance, LibraryGemm) {
  const int64_t m = 24, k = 40, n = 56;
  std::vector<float> x = values(m * k, 0.2f), w = values(k * n, 0.7f),
                     bias = values(n, 2.1f);
  std::vector<HostTensor> out =
      run("matmul", {tensor(x, {m, k}), tensor(w, {k, n}), tensor(bias, {n})});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> expected(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[j];
      for (int64_t p = 0; p < k; ++p)
        sum += double(x[i * k + p]) * double(w[p * n + j]);
      expected[i * n + j] = static_cast<float>(sum);
    }
  // k = 40 products of values in [-1, 1]: f32 sums in any order stay
  // within 1e-5 of the exact one.
  expectClose(floats(out[0]), expected, 1e-5f, 1e-5f);
}

TEST_P(Conformance, ConvolutionAndPool) {
  const int64_t n = 2, c = 3, h = 10, w = 10, f = 8;
  std::vector<float> x = values(n * c * h * w, 0.4f),
                     k = values(f * c * 3 * 3, 1.9f, 0.5f);
  std::vector<HostTensor> out =
      run("conv", {tensor(x, {n, c, h, w}), tensor(k, {f, c, 3, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{n, f, 5, 5}));
  // Convolution (padding 1), ReLU, 2x2 max pooling.
  std::vector<float> conv(n * f * h * w);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < f; ++o)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z) {
          double sum = 0;
          for (int64_t i = 0; i < c; ++i)
            for (int64_t dy = 0; dy < 3; ++dy)
              for (int64_t dz = 0; dz < 3; ++dz) {
                int64_t yy = y + dy - 1, zz = z + dz - 1;
                if (yy < 0 || yy >= h || zz < 0 || zz >= w)
                  continue;
                sum += double(x[((b * c + i) * h + yy) * w + zz]) *
                       double(k[((o * c + i) * 3 + dy) * 3 + dz]);
              }
          conv[((b * f + o) * h + y) * w + z] =
              std::max(static_cast<float>(sum), 0.0f);
        }
  std::vector<float> expected(n * f * 5 * 5);
  for (int64_t b = 0; b < n * f; ++b)
    for (int64_t y = 0; y < 5; ++y)
      for (int64_t z = 0; z < 5; ++z) {
        float m = -INFINITY;
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dz = 0; dz < 2; ++dz)
            m = std::max(m, conv[(b * h + 2 * y + dy) * w + 2 * z + dz]);
        expected[(b * 5 + y) * 5 + z] = m;
      }
  expectClose(floats(out[0]), expected, 1e-5f, 1e-5f);
}

TEST_P(Conformance, Reductions) {
  const int64_t rows = 16, cols = 100;
  std::vector<float> x = values(rows * cols, 0.9f, 3.0f);
  std::vector<HostTensor> out = run("softmax", {tensor(x, {rows, cols})});
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> softmax(x.size());
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    float m =
        *std::max_element(x.begin() + i * cols, x.begin() + (i + 1) * cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += std::exp(double(x[i * cols + j]) - m);
    for (int64_t j = 0; j < cols; ++j) {
      softmax[i * cols + j] =
          static_cast<float>(std::exp(double(x[i * cols + j]) - m) / sum);
      total += x[i * cols + j];
    }
  }
  expectClose(floats(out[0]), softmax, 1e-5f, 1e-7f);
  EXPECT_TRUE(out[1].shape.empty());
  // 1600 values of magnitude <= 3 summed in f32 in any order.
  expectClose(floats(out[1]), {static_cast<float>(total)}, 0.0f, 2e-3f);
}

TEST_P(Conformance, RowsWiderThanStaticSharedMemory) {
  // softmax(exp(x) * x) over rows of 20000.
  const int64_t rows = 4, cols = 20000;
  std::vector<float> x = values(rows * cols, 0.3f, 2.0f);
  std::vector<HostTensor> out = run("wide-rows", {tensor(x, {rows, cols})});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> m(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    m[i] = std::exp(double(x[i])) * double(x[i]);
  std::vector<float> softmax(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    double top =
        *std::max_element(m.begin() + i * cols, m.begin() + (i + 1) * cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += std::exp(m[i * cols + j] - top);
    for (int64_t j = 0; j < cols; ++j)
      softmax[i * cols + j] =
          static_cast<float>(std::exp(m[i * cols + j] - top) / sum);
  }
  // exp in f32 (relative error ~1e-7, amplified by up to |m| <= 15 in the
  // second exp) and a sum of 20000 terms in another order.
  expectClose(floats(out[0]), softmax, 1e-5f, 1e-9f);
}

TEST_P(Conformance, Copies) {
  std::vector<float> a = values(60, 0.5f);
  std::vector<HostTensor> out = run("copy", {tensor(a, {6, 10})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{6, 10}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{60}));
  EXPECT_EQ(floats(out[0]), a);
  EXPECT_EQ(floats(out[1]), a);
}

INSTANTIATE_TEST_SUITE_P(Devices, Conformance,
                         ::testing::Values(Config{"cpu", "cpu", "cpu"},
                                           Config{"cuda_emulated",
                                                  "cuda-emulated", "cpu"},
                                           Config{"cuda", "cuda", "cuda"}),
                         [](const ::testing::TestParamInfo<Config> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
