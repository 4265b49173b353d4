//===- FlowRunTest.cpp - Tests for the flow-run tool ----------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/Blas.h"
#include "flow/runtime/CpuFeatures.h"
#include "flow/runtime/Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sys/wait.h>

using namespace flow::runtime;
using namespace flow::test;

namespace {

struct Result {
  int exitCode = -1;
  std::string output; // stdout and stderr together
};

/// The OPENBLAS_CORETYPE setting flow-run gets: the kernels Flow would
/// choose for this CPU. A machine that forces other kernels would get a
/// warning on stderr, which the tests' exact outputs do not hold; and an
/// OpenBLAS preloaded into the process (as the sanitized unit tests do)
/// picks its kernels at start, before Flow could choose them.
std::string openBlasCoreSetting() {
  auto has = [](const char *name) { return cpuHasFeature(name); };
  std::string core = chooseOpenBlasCore(has("avx2"), has("fma"), has("avx512f"),
                                        has("avx512bw"), has("avx512vl"),
                                        has("avx512dq"), has("avx512bf16"));
  return core.empty() ? "-u OPENBLAS_CORETYPE" : "OPENBLAS_CORETYPE=" + core;
}

/// Runs flow-run with \p args (already shell-quoted) in \p dir, with
/// openBlasCoreSetting().
Result flowRun(const std::string &dir, const std::string &args) {
  std::string command = "cd '" + dir + "' && env " + openBlasCoreSetting() +
                        " '" + std::string(FLOW_RUN) + "' " + args + " 2>&1";
  Result result;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
    result.output.append(buf, n);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class FlowRunTest : public testing::Test {
protected:
  void SetUp() override {
    char templ[] = "/tmp/flow-run-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir = templ;
    writeFile("sample.fbin", build(sampleSpec()));
    for (auto [name, offset] : {std::pair{"x.npy", 0.0f}, {"y.npy", 1.0f}}) {
      HostTensor t;
      t.shape = {4, 4};
      std::vector<float> values(16);
      for (int i = 0; i < 16; ++i)
        values[i] = offset + i;
      t.data = floatBytes(values);
      ASSERT_TRUE(writeNpy(dir + "/" + name, t));
    }
    HostTensor small;
    small.shape = {2, 2};
    small.data.resize(16);
    ASSERT_TRUE(writeNpy(dir + "/small.npy", small));
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
  void writeFile(const std::string &name, const std::vector<uint8_t> &bytes) {
    FILE *f = fopen((dir + "/" + name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  void expectError(const std::string &args, int exitCode,
                   const std::string &text) {
    Result r = flowRun(dir, args);
    EXPECT_EQ(r.exitCode, exitCode) << r.output;
    EXPECT_EQ(r.output.rfind("flow-run: error: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << r.output;
  }

  std::string dir;
};

TEST_F(FlowRunTest, WritesResults) {
  Result r = flowRun(dir, "sample.fbin --input=x.npy --input=y.npy "
                          "--output-dir=out --threads=2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "");
  StatusOr<HostTensor> out0 = readNpy(dir + "/out/result_0.npy");
  StatusOr<HostTensor> out1 = readNpy(dir + "/out/result_1.npy");
  ASSERT_TRUE(out0) << out0.status().message();
  ASSERT_TRUE(out1) << out1.status().message();
  EXPECT_EQ(out0->shape, (std::vector<int64_t>{4, 4}));
  std::vector<float> w = sampleWeights();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      float want = 0;
      for (int p = 0; p < 4; ++p)
        want += (2.0f * (i * 4 + p) + 1) * w[p * 4 + j];
      float got0, got1;
      std::memcpy(&got0, out0->data.data() + 4 * (i * 4 + j), 4);
      std::memcpy(&got1, out1->data.data() + 4 * (i * 4 + j), 4);
      EXPECT_NEAR(got0, want, 1e-3);
      EXPECT_NEAR(got1, 2 * want, 1e-3);
    }
}

TEST_F(FlowRunTest, PrintsAndTimes) {
  Result r = flowRun(dir, "sample.fbin --input=x.npy --input=y.npy "
                          "--iterations=3 --warmup=2 --function=forward");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("forward: 3 iterations"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("min "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("median "), std::string::npos) << r.output;
  // Without --output-dir, results are printed.
  EXPECT_NE(r.output.find("result 0: f32[4,4] = "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result 1: f32[4,4] = "), std::string::npos)
      << r.output;
  r = flowRun(dir, "--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.output.find("usage: flow-run"), std::string::npos);
}

TEST_F(FlowRunTest, ReportsErrors) {
  expectError("missing.fbin --input=x.npy", 1, "cannot open 'missing.fbin'");
  expectError("sample.fbin --input=x.npy --input=nope.npy", 1,
              "cannot read 'nope.npy'");
  expectError("sample.fbin --input=x.npy", 1,
              "function 'forward' takes 2 inputs, got 1 --input flags");
  expectError("sample.fbin --input=x.npy --input=small.npy", 1,
              "input 1: expected f32[4,4], got f32[2,2]");
  expectError("sample.fbin --input=x.npy --input=sample.fbin", 1,
              "sample.fbin: not a .npy file");
  expectError("sample.fbin --input=x.npy --input=y.npy --function=train", 1,
              "no function named 'train' (the executable has: forward)");
  expectError("x.npy", 1, "x.npy: not a Flow executable");

  std::vector<uint8_t> corrupt = build(sampleSpec());
  corrupt[corrupt.size() / 2] ^= 0x10;
  writeFile("corrupt.fbin", corrupt);
  expectError("corrupt.fbin --input=x.npy --input=y.npy", 1, "corrupt.fbin: ");

  ExecutableSpec two = sampleSpec();
  two.functions.push_back(two.functions[0]);
  two.functions[1].name = "again";
  writeFile("two.fbin", build(two));
  expectError("two.fbin --input=x.npy --input=y.npy", 1,
              "the executable has 2 functions (forward, again); choose one "
              "with --function");
  Result r = flowRun(dir, "two.fbin --input=x.npy --input=y.npy "
                          "--function=again --print");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(FlowRunTest, ReportsUsageErrors) {
  expectError("", 2, "no executable given");
  expectError("sample.fbin --bogus=1", 2, "unknown option '--bogus'");
  expectError("sample.fbin -x", 2, "unknown option '-x'");
  expectError("sample.fbin --input", 2, "option '--input' needs a value");
  expectError("sample.fbin --iterations=abc", 2,
              "--iterations needs a non-negative integer, got 'abc'");
  expectError("sample.fbin --threads=-1", 2, "--threads needs an integer");
  expectError("sample.fbin --warmup=3", 2, "--warmup needs --iterations");
  expectError("sample.fbin other.fbin", 2, "more than one executable given");
}

} // namespace
