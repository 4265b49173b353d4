//===- SessionTest.cpp - Tests for running executables --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/src/Bf16.h"
#include "../../runtime/src/StagedBuffers.h"
#include "FbinBuilder.h"

#include "flow/runtime/Session.h"
#include "flow/runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

using namespace flow::runtime;
using namespace flow::test;

namespace {

std::shared_ptr<const Executable> load(const ExecutableSpec &spec) {
  StatusOr<std::unique_ptr<Executable>> exe =
      Executable::loadBytes(build(spec));
  EXPECT_TRUE(exe) << exe.status().message();
  return exe ? std::shared_ptr<const Executable>(std::move(*exe)) : nullptr;
}

std::unique_ptr<Session> makeSession(std::shared_ptr<const Executable> exe,
                                     int threads = 0) {
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(std::move(exe), RuntimeOptions{threads});
  EXPECT_TRUE(session) << session.status().message();
  return session ? std::move(*session) : nullptr;
}

template <typename T> T scalarAt(const HostTensor &t, size_t i) {
  T v;
  std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
  return v;
}

/// Row-major m x k times k x n.
std::vector<float> matmul(const std::vector<float> &a,
                          const std::vector<float> &b, int m, int n, int k) {
  std::vector<float> c(m * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p)
        c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
        << "at element " << i;
}

bool allNear(const std::vector<float> &got, const std::vector<float> &want) {
  if (got.size() != want.size())
    return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i]))))
      return false;
  return true;
}

/// The sample's inputs and its expected outputs.
struct SampleCase {
  std::vector<float> x, y, out0, out1;
  explicit SampleCase(float seed) : x(16), y(16) {
    for (int i = 0; i < 16; ++i) {
      x[i] = seed + i;
      y[i] = 1.0f - 0.25f * i;
    }
    std::vector<float> sum(16);
    for (int i = 0; i < 16; ++i)
      sum[i] = x[i] + y[i];
    out0 = matmul(sum, sampleWeights(), 4, 4, 4);
    for (float v : out0)
      out1.push_back(2 * v);
  }
  std::vector<HostTensor> inputs() const {
    return {f32Tensor({4, 4}, x), f32Tensor({4, 4}, y)};
  }
};

TEST(SessionTest, RunsSample) {
  std::shared_ptr<const Executable> exe = load(sampleSpec());
  ASSERT_TRUE(exe);
  for (int threads : {1, 4}) {
    std::unique_ptr<Session> session = makeSession(exe, threads);
    ASSERT_TRUE(session);
    EXPECT_EQ(session->threads(), threads);
    // Repeated calls reuse the arena and give fresh results.
    for (float seed : {0.0f, 3.5f, -2.0f}) {
      SampleCase c(seed);
      StatusOr<std::vector<HostTensor>> out =
          session->run("forward", c.inputs());
      ASSERT_TRUE(out) << out.status().message();
      ASSERT_EQ(out->size(), 2u);
      EXPECT_EQ((*out)[0].dtype, DType::F32);
      EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{4, 4}));
      expectNear(floats((*out)[0]), c.out0);
      expectNear(floats((*out)[1]), c.out1);
    }
  }
}

TEST(SessionTest, RunsWithCallerBuffers) {
  std::shared_ptr<const Executable> exe = load(sampleSpec());
  std::unique_ptr<Session> session = makeSession(exe, 2);
  SampleCase c(1.0f);
  std::vector<float> out0(16, NAN), out1(16, NAN);
  Status s = session->run(0, {{c.x.data(), 64}, {c.y.data(), 64}},
                          {{out0.data(), 64}, {out1.data(), 64}});
  ASSERT_TRUE(s) << s.message();
  expectNear(out0, c.out0);
  expectNear(out1, c.out1);

  auto error = [&](std::vector<ConstBuffer> in,
                   std::vector<MutableBuffer> out) {
    Status status = session->run(0, in, out);
    return status ? "" : status.message();
  };
  EXPECT_EQ(error({{c.x.data(), 64}}, {}),
            "function 'forward' takes 2 inputs and 2 outputs, got 1 and 0");
  EXPECT_EQ(error({{c.x.data(), 64}, {c.y.data(), 60}},
                  {{out0.data(), 64}, {out1.data(), 64}}),
            "input 1: f32[4,4] needs 64 bytes, got 60");
  EXPECT_EQ(error({{c.x.data(), 64}, {c.y.data(), 64}},
                  {{out0.data(), 64}, {nullptr, 64}}),
            "output 1: data pointer is null");
  EXPECT_EQ(session->run(5, {}, {}).message(),
            "no function number 5 (the executable has 1)");
}

TEST(SessionTest, ChecksInputs) {
  std::shared_ptr<const Executable> exe = load(sampleSpec());
  std::unique_ptr<Session> session = makeSession(exe, 1);
  auto error = [&](const std::vector<HostTensor> &inputs,
                   const std::string &function = "forward") {
    StatusOr<std::vector<HostTensor>> out = session->run(function, inputs);
    return out ? "" : out.status().message();
  };
  SampleCase c(0.0f);
  std::vector<HostTensor> inputs = c.inputs();
  EXPECT_EQ(error(inputs), "");
  EXPECT_EQ(error({inputs[0]}), "function 'forward' takes 2 inputs, got 1");
  EXPECT_EQ(error(inputs, "backward"),
            "no function named 'backward' (the executable has: forward)");
  std::vector<HostTensor> bad = inputs;
  bad[1].dtype = DType::I32;
  EXPECT_EQ(error(bad), "input 1: expected f32[4,4], got i32[4,4]");
  bad = inputs;
  bad[1].shape = {4, 3};
  bad[1].data.resize(48);
  EXPECT_EQ(error(bad), "input 1: expected f32[4,4], got f32[4,3]");
  bad = inputs;
  bad[0].shape = {16};
  EXPECT_EQ(error(bad), "input 0: expected f32[4,4], got f32[16]");
  bad = inputs;
  bad[0].data.resize(60);
  EXPECT_EQ(error(bad),
            "input 0: f32[4,4] needs 64 data bytes, the tensor has 60");
}

TEST(SessionTest, RejectsBadOptions) {
  std::shared_ptr<const Executable> exe = load(sampleSpec());
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(exe, RuntimeOptions{-1});
  ASSERT_FALSE(session);
  EXPECT_NE(session.status().message().find("thread count must be >= 0"),
            std::string::npos);
  session = Session::create(nullptr);
  ASSERT_FALSE(session);
  std::unique_ptr<Session> defaults = makeSession(exe, 0);
  EXPECT_EQ(defaults->threads(), ThreadPool::hardwareThreads());
}

/// One function per buffer space: returns the address that a kernel sees for
/// byte \p offset of it, as an i64.
ExecutableSpec addressSpec(bool align) {
  ExecutableSpec spec;
  spec.kernels = testKernelSpecs();
  spec.library = testKernels();
  spec.align = align;
  spec.constants = {std::vector<uint8_t>(8, 1), std::vector<uint8_t>(24, 2)};
  for (auto [name, ref, arena] :
       {std::tuple{"arena", arenaRef(0, 8), uint64_t(256)},
        std::tuple{"arena2", arenaRef(64, 8), uint64_t(1024)},
        std::tuple{"constant0", constantRef(0, 8), uint64_t(0)},
        std::tuple{"constant1", constantRef(1, 8), uint64_t(0)}}) {
    FunctionSpec f;
    f.name = name;
    f.outputs = {{DType::I64, {}}};
    f.arenaSize = arena;
    f.commands = {DispatchSpec{kAddressOf, 1, 0, {ref, outputRef(0, 8)}}};
    spec.functions.push_back(f);
  }
  return spec;
}

int64_t addressOf(Session &session, const std::string &function) {
  StatusOr<std::vector<HostTensor>> out = session.run(function, {});
  EXPECT_TRUE(out) << out.status().message();
  return out ? scalarAt<int64_t>((*out)[0], 0) : 0;
}

TEST(SessionTest, ArenaIsAlignedAndReused) {
  std::shared_ptr<const Executable> exe = load(addressSpec(true));
  std::unique_ptr<Session> session = makeSession(exe, 2);
  int64_t first = addressOf(*session, "arena");
  EXPECT_NE(first, 0);
  EXPECT_EQ(first % 64, 0);
  EXPECT_EQ(addressOf(*session, "arena"), first);
  int64_t other = addressOf(*session, "arena2");
  EXPECT_EQ((other - 64) % 64, 0);
  EXPECT_NE(other - 64, first) << "each function has its own arena";
  EXPECT_EQ(addressOf(*session, "arena2"), other);
  EXPECT_EQ(addressOf(*session, "arena"), first);
  // Another session has its own arenas.
  std::unique_ptr<Session> second = makeSession(exe, 1);
  EXPECT_NE(addressOf(*second, "arena"), first);
}

TEST(SessionTest, ConstantsAreAligned) {
  for (bool align : {true, false}) {
    std::shared_ptr<const Executable> exe = load(addressSpec(align));
    ASSERT_TRUE(exe);
    std::unique_ptr<Session> session = makeSession(exe, 1);
    EXPECT_EQ(addressOf(*session, "constant0") % 64, 0) << align;
    EXPECT_EQ(addressOf(*session, "constant1") % 64, 0) << align;
  }
}

/// A function that runs workgroups_entry with the given work and limit.
ExecutableSpec workgroupsSpec(uint64_t work, uint32_t maxWorkgroups) {
  ExecutableSpec spec;
  spec.kernels = testKernelSpecs();
  spec.library = testKernels();
  FunctionSpec f;
  f.name = "f";
  f.outputs = {{DType::I64, {64}}};
  f.commands = {
      DispatchSpec{kWorkgroups, maxWorkgroups, work, {outputRef(0, 512)}}};
  spec.functions = {f};
  return spec;
}

TEST(SessionTest, ChoosesWorkgroupCount) {
  struct Case {
    uint64_t work;
    uint32_t maxWorkgroups;
    int threads;
    int64_t expected;
  } cases[] = {{0, 8, 4, 1},          {100, 8, 4, 1},       {32767, 64, 4, 1},
               {32768, 8, 4, 4},      {1 << 20, 2, 4, 2},   {1 << 20, 16, 3, 3},
               {1 << 20, 64, 64, 64}, {UINT64_MAX, 1, 8, 1}};
  for (const Case &c : cases) {
    std::unique_ptr<Session> session =
        makeSession(load(workgroupsSpec(c.work, c.maxWorkgroups)), c.threads);
    StatusOr<std::vector<HostTensor>> out = session->run("f", {});
    ASSERT_TRUE(out) << out.status().message();
    for (int64_t wg = 0; wg < 64; ++wg)
      EXPECT_EQ(scalarAt<int64_t>((*out)[0], wg),
                wg < c.expected ? c.expected : 0)
          << "work " << c.work << ", max " << c.maxWorkgroups << ", threads "
          << c.threads << ", workgroup " << wg;
  }
}

TEST(SessionTest, ParallelDispatchIsCorrect) {
  ExecutableSpec spec = sampleSpec();
  for (CommandSpec &command : spec.functions[0].commands)
    if (auto *d = std::get_if<DispatchSpec>(&command)) {
      d->work = 1 << 20;
      d->maxWorkgroups = 16;
    }
  std::shared_ptr<const Executable> exe = load(spec);
  for (int threads : {1, 2, 5, 16, 32}) {
    std::unique_ptr<Session> session = makeSession(exe, threads);
    for (int i = 0; i < 20; ++i) {
      SampleCase c(static_cast<float>(i));
      StatusOr<std::vector<HostTensor>> out =
          session->run("forward", c.inputs());
      ASSERT_TRUE(out) << out.status().message();
      expectNear(floats((*out)[0]), c.out0);
      expectNear(floats((*out)[1]), c.out1);
    }
  }
}

TEST(SessionTest, SessionsShareAnExecutable) {
  std::shared_ptr<const Executable> exe = load(sampleSpec());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<Session> session = makeSession(exe, 2);
      for (int i = 0; i < 50; ++i) {
        SampleCase c(static_cast<float>(t * 100 + i));
        StatusOr<std::vector<HostTensor>> out =
            session->run("forward", c.inputs());
        if (!out || !allNear(floats((*out)[1]), c.out1))
          ++failures[t];
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

struct GemmCase {
  int m, n, k;
  bool transposeA, transposeB;
  std::vector<int64_t> batchShape, aStrides, bStrides;
  /// Elements before A's and B's first element in their inputs.
  int64_t aPad = 0, bPad = 0;
};

/// Elements an operand needs: the last batch offset plus one matrix.
int64_t extent(const std::vector<int64_t> &shape,
               const std::vector<int64_t> &strides, int64_t matrix) {
  int64_t last = 0, count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    last += (shape[d] - 1) * strides[d];
    count *= shape[d];
  }
  return count == 0 || matrix == 0 ? 0 : last + matrix;
}

/// A GEMM's element types: A and B's, C's (and the bias').
struct GemmTypes {
  DType ab = DType::F32, c = DType::F32;
};

/// \p values stored as \p dtype (f32, f16 or bf16), rounded to nearest.
std::vector<uint8_t> encode(const std::vector<float> &values, DType dtype) {
  size_t size = dtypeSize(dtype);
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&bytes[4 * i], &values[i], 4);
      continue;
    }
    uint16_t bits = dtype == DType::F16 ? detail::roundToF16(values[i])
                                        : detail::roundToBf16(values[i]);
    std::memcpy(&bytes[2 * i], &bits, 2);
  }
  return bytes;
}

std::vector<float> decode(const std::vector<uint8_t> &bytes, DType dtype) {
  size_t size = dtypeSize(dtype);
  std::vector<float> values(bytes.size() / size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&values[i], &bytes[4 * i], 4);
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[2 * i], 2);
    values[i] = dtype == DType::F16 ? detail::widenF16(bits)
                                    : detail::widenBf16(bits);
  }
  return values;
}

/// Runs one gemm through the runtime and compares it to a naive loop; with
/// \p bias and \p activation, the library epilogue too. Operands of
/// \p types other than f32 hold the same values (small multiples of 1/4,
/// exact in f16 and bf16), so the f32 sums are the reference's and only
/// C's one rounding differs.
void checkGemm(const GemmCase &g, int threads, bool bias = false,
               fbs::GemmActivation activation = fbs::GemmActivation::None,
               GemmTypes types = {}) {
  SCOPED_TRACE(testing::Message()
               << "m=" << g.m << " n=" << g.n << " k=" << g.k << " tA="
               << g.transposeA << " tB=" << g.transposeB << " batch rank "
               << g.batchShape.size() << " threads " << threads << " bias "
               << bias << " activation " << int(activation) << " types "
               << int(types.ab) << " -> " << int(types.c));
  const int64_t abSize = dtypeSize(types.ab), cSize = dtypeSize(types.c);
  auto fbsType = [](DType t) { return static_cast<fbs::DType>(t); };
  int64_t batch = 1;
  for (int64_t d : g.batchShape)
    batch *= d;
  int64_t aElems = g.aPad + extent(g.batchShape, g.aStrides, g.m * g.k);
  int64_t bElems = g.bPad + extent(g.batchShape, g.bStrides, g.k * g.n);
  std::vector<int64_t> cShape = g.batchShape;
  cShape.push_back(g.m);
  cShape.push_back(g.n);

  ExecutableSpec spec;
  FunctionSpec f;
  f.name = "gemm";
  f.inputs = {{types.ab, {aElems}}, {types.ab, {bElems}}};
  if (bias)
    f.inputs.push_back({types.c, {g.n}});
  f.outputs = {{types.c, cShape}};
  GemmSpec cmd;
  cmd.m = g.m;
  cmd.n = g.n;
  cmd.k = g.k;
  cmd.transposeA = g.transposeA;
  cmd.transposeB = g.transposeB;
  cmd.batchShape = g.batchShape;
  cmd.aBatchStrides = g.aStrides;
  cmd.bBatchStrides = g.bStrides;
  cmd.a = inputRef(0, abSize * (aElems - g.aPad), abSize * g.aPad);
  cmd.b = inputRef(1, abSize * (bElems - g.bPad), abSize * g.bPad);
  cmd.c = outputRef(0, cSize * batch * g.m * g.n);
  if (bias)
    cmd.bias = inputRef(2, cSize * g.n);
  cmd.activation = activation;
  cmd.abDtype = fbsType(types.ab);
  cmd.cDtype = fbsType(types.c);
  f.commands = {cmd};
  spec.functions = {f};
  std::shared_ptr<const Executable> exe = load(spec);
  ASSERT_TRUE(exe);
  std::unique_ptr<Session> session = makeSession(exe, threads);

  std::vector<float> a(aElems), b(bElems);
  for (int64_t i = 0; i < aElems; ++i)
    a[i] = static_cast<float>((i * 7) % 13) - 6;
  for (int64_t i = 0; i < bElems; ++i)
    b[i] = static_cast<float>((i * 5) % 11) * 0.5f - 2;
  std::vector<float> biases(g.n);
  for (int j = 0; j < g.n; ++j)
    biases[j] = 0.25f * static_cast<float>(j % 9) - 1.0f;
  // Prefill the output with NaN (all ones, in every type): every element
  // must be written.
  std::vector<uint8_t> cBytes(batch * g.m * g.n * cSize, 0xff);
  std::vector<uint8_t> aBytes = encode(a, types.ab), bBytes = encode(b, types.ab),
                       biasBytes = encode(biases, types.c);
  std::vector<ConstBuffer> inputs = {{aBytes.data(), aBytes.size()},
                                     {bBytes.data(), bBytes.size()}};
  if (bias)
    inputs.push_back({biasBytes.data(), biasBytes.size()});
  Status s = session->run(0, inputs, {{cBytes.data(), cBytes.size()}});
  ASSERT_TRUE(s) << s.message();
  std::vector<float> c = decode(cBytes, types.c);

  std::vector<float> want(c.size(), 0.0f);
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t rest = bi, aOff = g.aPad, bOff = g.bPad;
    for (size_t d = g.batchShape.size(); d-- > 0;) {
      aOff += (rest % g.batchShape[d]) * g.aStrides[d];
      bOff += (rest % g.batchShape[d]) * g.bStrides[d];
      rest /= g.batchShape[d];
    }
    for (int i = 0; i < g.m; ++i)
      for (int j = 0; j < g.n; ++j) {
        float sum = 0;
        for (int p = 0; p < g.k; ++p) {
          float av =
              g.transposeA ? a[aOff + p * g.m + i] : a[aOff + i * g.k + p];
          float bv =
              g.transposeB ? b[bOff + j * g.k + p] : b[bOff + p * g.n + j];
          sum += av * bv;
        }
        if (bias)
          sum += biases[j];
        if (activation == fbs::GemmActivation::Relu)
          sum = std::max(sum, 0.0f);
        else if (activation == fbs::GemmActivation::GeluTanh)
          sum = 0.5f * sum *
                (1 + std::tanh(std::sqrt(2 / float(M_PI)) *
                               (sum + 0.044715f * sum * sum * sum)));
        want[(bi * g.m + i) * g.n + j] = sum;
      }
  }
  if (types.c == DType::F32) {
    expectNear(c, want);
    return;
  }
  // One rounding of the f32 result (GELU's tanh may differ in its last f32
  // bits, which can move a tie): at most one unit in the last place.
  const float ulp = types.c == DType::F16 ? 1.0f / 1024 : 1.0f / 128;
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_NEAR(c[i], want[i], ulp * std::fabs(want[i]) + 1e-6f)
        << "at element " << i;
}

TEST(SessionTest, Gemm) {
  std::vector<GemmCase> cases = {
      {3, 5, 4, false, false, {}, {}, {}},
      {3, 5, 4, true, false, {}, {}, {}},
      {3, 5, 4, false, true, {}, {}, {}},
      {3, 5, 4, true, true, {}, {}, {}},
      {1, 1, 1, false, false, {}, {}, {}},
      {17, 33, 65, false, true, {}, {}, {}, 3, 5},
      // Batched: A per batch, B broadcast over the batch.
      {4, 6, 5, false, false, {3}, {20}, {0}},
      // Batch [2, 3]: A broadcast over dim 1, B over dim 0, transposed.
      {4, 6, 5, true, true, {2, 3}, {20, 0}, {0, 30}, 1, 2},
      // Both broadcast entirely.
      {2, 3, 4, false, false, {2, 2}, {0, 0}, {0, 0}},
      // Overlapping batches (stride smaller than a matrix).
      {2, 2, 2, false, false, {3}, {1}, {2}},
      // Empty shapes.
      {0, 4, 3, false, false, {}, {}, {}},
      {4, 0, 3, false, false, {}, {}, {}},
      {4, 3, 0, false, false, {}, {}, {}},
      {4, 3, 0, true, true, {2}, {0}, {0}},
      {4, 3, 2, false, false, {0}, {8}, {6}},
      // Large enough (2^18 multiply-adds and more) to be cut into pieces
      // for the pool: blocks of rows, of columns (C wider than tall), of a
      // single row's columns (GEMV), and pieces of two batches.
      {100, 37, 80, false, false, {}, {}, {}, 3, 1},
      {100, 37, 80, true, true, {}, {}, {}},
      {20, 200, 70, false, true, {}, {}, {}, 0, 7},
      {20, 200, 70, true, false, {}, {}, {}},
      {1, 2000, 150, false, false, {}, {}, {}, 1, 0},
      {1, 2000, 150, true, true, {}, {}, {}},
      {70, 40, 50, false, false, {2}, {3500}, {2000}},
      {70, 40, 50, true, true, {2}, {3500}, {0}},
  };
  for (const GemmCase &g : cases)
    for (int threads : {1, 2, 3})
      checkGemm(g, threads);
}

TEST(SessionTest, GemmLibraryEpilogues) {
  // The bias (one per column) and activation the CUDA target folds into
  // its GEMMs; the CPU runtime applies them after the GEMM, also on
  // batches and on the pool's pieces.
  std::vector<GemmCase> cases = {
      {3, 5, 4, false, false, {}, {}, {}},
      {4, 6, 5, true, true, {2, 3}, {20, 0}, {0, 30}, 1, 2},
      {100, 37, 80, false, false, {}, {}, {}, 3, 1},
      {1, 2000, 150, false, false, {}, {}, {}, 1, 0},
  };
  for (const GemmCase &g : cases)
    for (int threads : {1, 2}) {
      checkGemm(g, threads, true);
      checkGemm(g, threads, true, fbs::GemmActivation::Relu);
      checkGemm(g, threads, false, fbs::GemmActivation::Relu);
      checkGemm(g, threads, true, fbs::GemmActivation::GeluTanh);
    }
}

TEST(SessionTest, NarrowGemms) {
  // f16 and bf16 products summed in f32, into f32 or their own type, with
  // the library epilogue in f32 before C's one rounding (the CUDA targets'
  // cuBLASLt GEMMs, run by the CPU runtime for the emulation).
  std::vector<GemmCase> cases = {
      {3, 5, 4, false, false, {}, {}, {}},
      {4, 6, 5, true, true, {2, 3}, {20, 0}, {0, 30}, 1, 2},
      {100, 37, 80, false, true, {}, {}, {}, 3, 1},
      {4, 3, 0, false, false, {}, {}, {}},
  };
  for (GemmTypes types : {GemmTypes{DType::F16, DType::F16},
                          GemmTypes{DType::F16, DType::F32},
                          GemmTypes{DType::BF16, DType::BF16},
                          GemmTypes{DType::BF16, DType::F32}})
    for (const GemmCase &g : cases)
      for (int threads : {1, 2}) {
        checkGemm(g, threads, false, fbs::GemmActivation::None, types);
        checkGemm(g, threads, true, fbs::GemmActivation::Relu, types);
        checkGemm(g, threads, true, fbs::GemmActivation::GeluTanh, types);
      }
}

TEST(SessionTest, Tf32Gemm) {
  // allow_tf32: the operands' mantissas rounded to 10 bits (to nearest,
  // ties away) before f32 sums, as the GPU's TF32 multiplies do.
  ExecutableSpec spec;
  FunctionSpec f;
  f.name = "gemm";
  f.inputs = {{DType::F32, {1, 2}}, {DType::F32, {2, 1}}, {DType::F32, {1}}};
  f.outputs = {{DType::F32, {1, 1}}};
  GemmSpec cmd;
  cmd.m = 1;
  cmd.n = 1;
  cmd.k = 2;
  cmd.a = inputRef(0, 8);
  cmd.b = inputRef(1, 8);
  cmd.c = outputRef(0, 4);
  cmd.bias = inputRef(2, 4);
  cmd.allowTf32 = true;
  f.commands = {cmd};
  spec.functions = {f};
  std::unique_ptr<Session> session = makeSession(load(spec), 1);
  // 1 + 2^-12 rounds down to 1, 1 + 2^-11 (a tie) up to 1 + 2^-10, and
  // 3 + 2^-9 stays. The bias is added in f32, unrounded.
  std::vector<float> a = {1.0f + 0x1p-12f, 1.0f + 0x1p-11f};
  std::vector<float> b = {3.0f + 0x1p-9f, 1.0f};
  float bias = 0x1p-20f;
  float c = NAN;
  Status s = session->run(0, {{a.data(), 8}, {b.data(), 8}, {&bias, 4}},
                          {{&c, 4}});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(c, 1.0f * (3.0f + 0x1p-9f) + (1.0f + 0x1p-10f) + 0x1p-20f);
  EXPECT_NE(c, a[0] * b[0] + a[1] * b[1] + bias);
}

TEST(SessionTest, CopiesWithoutKernels) {
  ExecutableSpec spec;
  std::vector<uint8_t> constant = {1, 2, 3, 4, 5, 6, 7, 8};
  spec.constants = {constant};
  FunctionSpec f;
  f.name = "copy";
  f.inputs = {{DType::I32, {3}}};
  f.outputs = {{DType::I32, {3}}, {DType::I1, {8}}, {DType::I32, {0}}};
  f.arenaSize = 12;
  f.commands = {CopySpec{inputRef(0, 12), arenaRef(0, 12)},
                CopySpec{arenaRef(4, 8), outputRef(0, 8)},
                CopySpec{arenaRef(0, 4), outputRef(0, 4, 8)},
                CopySpec{constantRef(0, 8), outputRef(1, 8)},
                CopySpec{inputRef(0, 0), outputRef(2, 0)}};
  spec.functions = {f};
  std::unique_ptr<Session> session = makeSession(load(spec), 1);
  HostTensor in;
  in.dtype = DType::I32;
  in.shape = {3};
  in.data.resize(12);
  for (int32_t i = 0; i < 3; ++i)
    std::memcpy(in.data.data() + 4 * i, &i, 4);
  StatusOr<std::vector<HostTensor>> out = session->run("copy", {in});
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(scalarAt<int32_t>((*out)[0], 0), 1);
  EXPECT_EQ(scalarAt<int32_t>((*out)[0], 1), 2);
  EXPECT_EQ(scalarAt<int32_t>((*out)[0], 2), 0);
  EXPECT_EQ((*out)[1].data, constant);
  EXPECT_EQ((*out)[2].shape, std::vector<int64_t>{0});
  EXPECT_TRUE((*out)[2].data.empty());
}

TEST(SessionTest, RunsSeveralFunctions) {
  ExecutableSpec spec = sampleSpec();
  FunctionSpec scale;
  scale.name = "scale";
  scale.inputs = {{DType::F32, {16}}};
  scale.outputs = {{DType::F32, {16}}};
  scale.commands = {
      DispatchSpec{kScale2, 1, 16, {inputRef(0, 64), outputRef(0, 64)}}};
  spec.functions.push_back(scale);
  std::shared_ptr<const Executable> exe = load(spec);
  std::unique_ptr<Session> session = makeSession(exe, 2);
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = static_cast<float>(i);
  StatusOr<std::vector<HostTensor>> out =
      session->run("scale", {f32Tensor({16}, x)});
  ASSERT_TRUE(out) << out.status().message();
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(floats((*out)[0])[i], 2.0f * i);
  SampleCase c(2.0f);
  out = session->run("forward", c.inputs());
  ASSERT_TRUE(out) << out.status().message();
  expectNear(floats((*out)[1]), c.out1);
}

} // namespace

TEST(SessionTest, RefusesDevicePiecesThatDoNotMatchTheGlobalSignature) {
  // A one-device mesh program copying an f32[4] input to its output.
  ExecutableSpec spec;
  spec.mesh = {1};
  FunctionSpec f;
  f.name = "f";
  f.ranks = {0};
  f.inputs = {{DType::F32, {4}}};
  f.outputs = {{DType::F32, {4}}};
  f.commands = {CopySpec{inputRef(0, 16), outputRef(0, 16)}};
  spec.functions = {f};
  std::vector<uint8_t> bytes = build(spec);
  // Make the global output f32[260], split over the mesh axis: assembling it
  // read 1040 bytes from the 16-byte piece (found by fuzz-fbin-run).
  const fbs::Placement *global = fbs::GetExecutable(bytes.data())
                                     ->functions()
                                     ->Get(0)
                                     ->global_outputs()
                                     ->Get(0);
  const_cast<int64_t *>(global->type()->shape()->data())[0] = 260;
  const_cast<uint8_t *>(
      reinterpret_cast<const uint8_t *>(global->sbp()->Get(0)))[0] =
      static_cast<uint8_t>(fbs::SbpKind::Split);
  ASSERT_TRUE(stampChecksum(bytes.data(), bytes.size()));

  // The loader refuses it: every device's piece of each global input and
  // output must be the device program's.
  EXPECT_EQ(loadError(bytes),
            "function 'f': device 0's piece of global output 0 is f32[260] "
            "but the device program's is f32[4]");
}

TEST(SessionTest, EmptyGemmIgnoresUncheckedBatchStrides) {
  // k = 0: A and B are empty, so the loader never bounds their batch
  // strides; computing batch offsets from them overflowed int64 (found by
  // fuzz-fbin-run under UBSan). C must simply be zeros.
  ExecutableSpec spec;
  FunctionSpec f;
  f.name = "empty";
  f.inputs = {{DType::F32, {3, 2, 0}}, {DType::F32, {3, 0, 2}}};
  f.outputs = {{DType::F32, {3, 2, 2}}};
  GemmSpec g;
  g.m = g.n = 2;
  g.k = 0;
  g.batchShape = {3};
  g.aBatchStrides = {INT64_MAX / 2};
  g.bBatchStrides = {INT64_MAX / 2};
  g.a = inputRef(0, 0);
  g.b = inputRef(1, 0);
  g.c = outputRef(0, 48);
  f.commands = {g};
  spec.functions = {f};
  std::unique_ptr<Session> session = makeSession(load(spec), 1);
  ASSERT_TRUE(session);
  std::vector<float> c(12, 7.0f);
  Status s = session->run(0, {{nullptr, 0}, {nullptr, 0}},
                          {{c.data(), c.size() * sizeof(float)}});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(c, std::vector<float>(12, 0.0f));
}

namespace {
float at(const HostTensor &t, size_t i) { return scalarAt<float>(t, i); }
} // namespace

TEST(SessionTest, RunCopiesStateItUpdatesInPlace) {
  // run() never writes the caller's input: the tied output gets the new
  // value.
  std::shared_ptr<const Executable> exe = load(accumulatorSpec());
  std::unique_ptr<Session> session = makeSession(exe, 2);
  std::vector<float> acc(16, 1.0f), x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = i;
  StatusOr<std::vector<HostTensor>> out =
      session->run("accumulate", {f32Tensor({4, 4}, acc), f32Tensor({4, 4}, x)});
  ASSERT_TRUE(out) << out.status().message();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(at((*out)[0], i), 1.0f + i);
    EXPECT_EQ(at((*out)[1], i), 1.0f + i);
  }
  std::vector<float> out0(16), out1(16);
  Status s = session->run(0, {{acc.data(), 64}, {x.data(), 64}},
                          {{out0.data(), 64}, {out1.data(), 64}});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(acc, std::vector<float>(16, 1.0f));
  EXPECT_EQ(out0[5], 6.0f);
}

TEST(SessionTest, KeepsStateBetweenSteps) {
  std::shared_ptr<const Executable> exe = load(accumulatorSpec());
  std::unique_ptr<Session> session = makeSession(exe, 2);
  EXPECT_EQ(session->stateNames(), std::vector<std::string>{"acc"});
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = 0.5f * i;
  // Zeros at first; each step adds x where the state lies.
  for (int k = 1; k <= 3; ++k) {
    StatusOr<std::vector<HostTensor>> out =
        session->step("accumulate", {f32Tensor({4, 4}, x)});
    ASSERT_TRUE(out) << out.status().message();
    ASSERT_EQ(out->size(), 1u); // the tied output is not returned
    EXPECT_EQ(at((*out)[0], 3), k * 1.5f);
  }
  StatusOr<HostTensor> acc = session->getState("acc");
  ASSERT_TRUE(acc) << acc.status().message();
  EXPECT_EQ(at(*acc, 4), 6.0f);
  ASSERT_TRUE(session->setState("acc", f32Tensor({4, 4}, std::vector<float>(16, -1.0f))));
  StatusOr<std::vector<HostTensor>> out =
      session->step("accumulate", {f32Tensor({4, 4}, x)});
  ASSERT_TRUE(out);
  EXPECT_EQ(at((*out)[0], 2), 0.0f);

  auto message = [](const Status &s) { return s ? "" : s.message(); };
  EXPECT_EQ(message(session->setState("acc", f32Tensor({16}, std::vector<float>(16)))),
            "state 'acc' is f32[4,4], got f32[16] (64 bytes)");
  EXPECT_EQ(message(session->setState("other", f32Tensor({16}, std::vector<float>(16)))),
            "the executable has no state 'other'");
  EXPECT_EQ(session->getState("other").status().message(),
            "the executable has no state 'other'");
  EXPECT_EQ(session->step("accumulate", {}).status().message(),
            "function 'accumulate' takes 1 inputs besides its state, got 0");
  EXPECT_EQ(session->step("accumulate", {f32Tensor({16}, x)}).status().message(),
            "input 0: expected f32[4,4], got f32[16]");
}

TEST(SessionTest, StateWithoutZerosMustBeSet) {
  ExecutableSpec spec = accumulatorSpec();
  spec.functions[0].state[0].zeros = false;
  std::shared_ptr<const Executable> exe = load(spec);
  std::unique_ptr<Session> session = makeSession(exe, 1);
  std::vector<float> x(16, 1.0f);
  EXPECT_EQ(session->step("accumulate", {f32Tensor({4, 4}, x)}).status().message(),
            "state 'acc' has no value: set it before the first step");
  EXPECT_EQ(session->getState("acc").status().message(),
            "state 'acc' has no value yet: set it first");
}

namespace {

/// A device with memory of its own, as the CUDA device has: its executor
/// runs each call on copies of the buffers (host allocations here, run by
/// the CPU executor), through the StagedBuffers the CUDA executor uses,
/// and the device counts the bytes copied in and out.
class StagingDevice final : public Device {
public:
  explicit StagingDevice(std::shared_ptr<Device> cpu) : cpu(std::move(cpu)) {}
  const DeviceInfo &info() const override { return cpu->info(); }
  StatusOr<DeviceMemory> allocate(uint64_t bytes,
                                  const std::string &what) override {
    return cpu->allocate(bytes, what);
  }
  Status copyToDevice(uint64_t dst, const void *src, uint64_t bytes) override {
    copiedIn += bytes;
    return cpu->copyToDevice(dst, src, bytes);
  }
  Status copyToHost(void *dst, uint64_t src, uint64_t bytes) override {
    copiedOut += bytes;
    return cpu->copyToHost(dst, src, bytes);
  }
  StatusOr<std::unique_ptr<detail::Executor>>
  createExecutor(std::shared_ptr<const Executable> exe, int threads) override;

  uint64_t copiedIn = 0, copiedOut = 0;

protected:
  void release(uint64_t) override {}

private:
  std::shared_ptr<Device> cpu;
};

class StagingExecutor final : public detail::Executor {
public:
  StagingExecutor(std::shared_ptr<const Executable> exe, StagingDevice &device,
                  std::unique_ptr<detail::Executor> cpu)
      : exe(std::move(exe)), device(device), cpu(std::move(cpu)),
        buffers(this->exe->functions().size()) {}
  int threads() const override { return cpu->threads(); }
  bool ownsMemory() const override { return true; }
  Status readInput(size_t function, size_t input,
                   const MutableBuffer &out) override {
    return buffers[function].readInput(device, input, out);
  }
  Status run(size_t function, const std::vector<ConstBuffer> &inputs,
             const std::vector<MutableBuffer> &outputs,
             const detail::CallHooks &hooks) override {
    const FunctionSignature &sig = exe->functions()[function];
    detail::StagedBuffers &b = buffers[function];
    if (Status s = b.prepare(device, sig); !s)
      return s;
    if (Status s = b.copyIn(device, inputs, hooks); !s)
      return s;
    std::vector<ConstBuffer> in;
    std::vector<MutableBuffer> out;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back({reinterpret_cast<const void *>(b.input(i)), inputs[i].size});
    for (size_t i = 0; i < outputs.size(); ++i)
      out.push_back({reinterpret_cast<void *>(b.output(i)), outputs[i].size});
    detail::CallHooks own = hooks;
    own.resident = nullptr;
    own.keepState = false;
    if (Status s = cpu->run(function, in, out, own); !s)
      return s;
    return b.copyOut(device, sig, outputs, hooks);
  }

private:
  std::shared_ptr<const Executable> exe;
  StagingDevice &device;
  std::unique_ptr<detail::Executor> cpu;
  std::vector<detail::StagedBuffers> buffers;
};

StatusOr<std::unique_ptr<detail::Executor>>
StagingDevice::createExecutor(std::shared_ptr<const Executable> exe,
                              int threads) {
  StatusOr<std::unique_ptr<detail::Executor>> inner =
      cpu->createExecutor(exe, threads);
  if (!inner)
    return inner.status();
  return std::unique_ptr<detail::Executor>(
      new StagingExecutor(std::move(exe), *this, std::move(*inner)));
}

/// accumulatorSpec() plus `peek`, which reads `acc` without updating it.
ExecutableSpec accumulatorAndPeekSpec() {
  ExecutableSpec spec = accumulatorSpec();
  FunctionSpec f;
  f.name = "peek";
  f.inputs = {{DType::F32, {4, 4}}};
  f.outputs = {{DType::F32, {4, 4}}};
  f.state = {{"acc", 0, -1, true}};
  f.commands.push_back(CopySpec{inputRef(0, 64), outputRef(0, 64)});
  spec.functions.push_back(f);
  return spec;
}

} // namespace

TEST(SessionTest, StateStaysInTheMemoryOfADeviceWithItsOwn) {
  std::shared_ptr<const Executable> exe = load(accumulatorAndPeekSpec());
  ASSERT_TRUE(exe);
  StatusOr<std::shared_ptr<Device>> cpu = openDevice("cpu");
  ASSERT_TRUE(cpu);
  auto device = std::make_shared<StagingDevice>(*cpu);
  RuntimeOptions options{1};
  options.device = device;
  StatusOr<std::unique_ptr<Session>> made = Session::create(exe, options);
  ASSERT_TRUE(made) << made.status().message();
  Session &session = **made;
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = float(i);
  // What the session's state should hold, and the bytes each call moves.
  std::vector<float> expected(16, 0.0f);
  auto step = [&](uint64_t in, uint64_t out) {
    device->copiedIn = device->copiedOut = 0;
    StatusOr<std::vector<HostTensor>> result =
        session.step("accumulate", {f32Tensor({4, 4}, x)});
    ASSERT_TRUE(result) << result.status().message();
    for (int i = 0; i < 16; ++i)
      expected[i] += x[i];
    ASSERT_EQ(result->size(), 1u);
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(at((*result)[0], i), expected[i]) << i;
    EXPECT_EQ(device->copiedIn, in);
    EXPECT_EQ(device->copiedOut, out);
  };
  auto state = [&](uint64_t out) {
    device->copiedIn = device->copiedOut = 0;
    StatusOr<HostTensor> acc = session.getState("acc");
    ASSERT_TRUE(acc) << acc.status().message();
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(at(*acc, i), expected[i]) << i;
    EXPECT_EQ(device->copiedOut, out);
  };
  // The first step copies the state in (64 bytes) with x (64); later steps
  // only x. Only the untied output (64) comes back: the state stays.
  step(128, 64);
  step(64, 64);
  step(64, 64);
  // Reading the state copies it out once; it stays on the device.
  state(64);
  state(0);
  step(64, 64);
  // A new value is copied in by the next step.
  ASSERT_TRUE(session.setState("acc", f32Tensor({4, 4}, std::vector<float>(16, -2.0f))));
  expected.assign(16, -2.0f);
  step(128, 64);
  // Another function reading the state gets its current value (read back
  // from the step's buffer, copied into its own) ...
  device->copiedIn = device->copiedOut = 0;
  StatusOr<std::vector<HostTensor>> peeked = session.step("peek", {});
  ASSERT_TRUE(peeked) << peeked.status().message();
  EXPECT_EQ(at((*peeked)[0], 7), expected[7]);
  EXPECT_EQ(device->copiedOut, 128u);
  EXPECT_EQ(device->copiedIn, 64u);
  // ... and keeps its copy until the state changes.
  device->copiedIn = device->copiedOut = 0;
  peeked = session.step("peek", {});
  ASSERT_TRUE(peeked);
  EXPECT_EQ(at((*peeked)[0], 7), expected[7]);
  EXPECT_EQ(device->copiedIn, 0u);
  step(64, 64);
  peeked = session.step("peek", {});
  ASSERT_TRUE(peeked);
  EXPECT_EQ(at((*peeked)[0], 9), expected[9]);
  // A call with the caller's buffers overwrites the step's copy of the
  // state: the session reads it back first, and its state is untouched.
  std::vector<float> mine(16, 100.0f);
  StatusOr<std::vector<HostTensor>> ran =
      session.run("accumulate", {f32Tensor({4, 4}, mine), f32Tensor({4, 4}, x)});
  ASSERT_TRUE(ran) << ran.status().message();
  EXPECT_EQ(at((*ran)[0], 3), 103.0f);
  EXPECT_EQ(at((*ran)[1], 3), 103.0f);
  state(0);
  step(128, 64);
  state(64);
}
