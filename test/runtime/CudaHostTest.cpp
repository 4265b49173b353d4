//===- CudaHostTest.cpp - The CUDA device's host-side logic ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// What the CUDA device decides without touching a GPU: the kernel library a
// device loads, the arguments a dispatch launches with, and the cuBLASLt
// calls a GEMM command becomes (checked by running the plan with
// cuBLASLt's column-major semantics on the host against a row-major
// reference).
//
//===----------------------------------------------------------------------===//

#include "../../runtime/src/cuda/CudaHost.h"

#include <gtest/gtest.h>

#include <random>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

namespace {

detail::GpuLibrary library(detail::GpuLibrary::Format format,
                           const std::string &arch) {
  detail::GpuLibrary l;
  l.format = format;
  l.arch = arch;
  l.computeCapability = std::stoi(arch.substr(3, 2));
  return l;
}

constexpr auto kPtx = detail::GpuLibrary::Ptx;
constexpr auto kCubin = detail::GpuLibrary::Cubin;

size_t choose(const std::vector<detail::GpuLibrary> &libraries, int cc) {
  StatusOr<size_t> chosen = chooseLibrary(libraries, cc, "cuda:0");
  EXPECT_TRUE(chosen) << chosen.status().message();
  return chosen ? *chosen : ~size_t(0);
}

TEST(CudaHostTest, ChoosesTheCubinForItsDeviceElseThePtx) {
  // What flow-compile --target=cuda writes: PTX and a cubin for one arch.
  std::vector<detail::GpuLibrary> both = {library(kPtx, "sm_90"),
                                          library(kCubin, "sm_90")};
  EXPECT_EQ(choose(both, 90), 1u);
  // A newer GPU: the cubin is another major's machine code; the driver
  // compiles the PTX.
  EXPECT_EQ(choose(both, 100), 0u);
  // A cubin runs on later minors of its major, and the closest one wins.
  std::vector<detail::GpuLibrary> cubins = {library(kCubin, "sm_80"),
                                            library(kCubin, "sm_86"),
                                            library(kPtx, "sm_80")};
  EXPECT_EQ(choose(cubins, 86), 1u);
  EXPECT_EQ(choose(cubins, 89), 1u);
  EXPECT_EQ(choose(cubins, 80), 0u);
  EXPECT_EQ(choose(cubins, 90), 2u);
  // Arch-specific code ("a") runs on its own compute capability only.
  std::vector<detail::GpuLibrary> specific = {library(kCubin, "sm_90a"),
                                              library(kPtx, "sm_90a"),
                                              library(kPtx, "sm_80")};
  EXPECT_EQ(choose(specific, 90), 0u);
  EXPECT_EQ(choose(specific, 100), 2u);
}

TEST(CudaHostTest, RefusesGpusOlderThanTheKernels) {
  std::vector<detail::GpuLibrary> both = {library(kPtx, "sm_90"),
                                          library(kCubin, "sm_90")};
  StatusOr<size_t> chosen = chooseLibrary(both, 80, "cuda:1 (NVIDIA A100)");
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.status().message(),
            "the kernels cannot run on cuda:1 (NVIDIA A100) (compute "
            "capability 8.0): the executable holds PTX for sm_90, cubin for "
            "sm_90; recompile with flow-compile --target=cuda "
            "--gpu-arch=sm_80");
  chosen = chooseLibrary({}, 90, "cuda:0");
  ASSERT_FALSE(chosen);
  EXPECT_NE(chosen.status().message().find("holds no kernel library"),
            std::string::npos);
}

detail::BufferRef ref(detail::Space space, uint32_t index, uint64_t offset,
                      uint64_t size) {
  return {space, index, offset, size};
}

TEST(CudaHostTest, PacksBindingsThenScratchBuffers) {
  DeviceFrame frame;
  frame.inputs = {0x10000, 0x20000};
  frame.outputs = {0x30000};
  frame.constants = {0x40000, 0};
  frame.arena = 0x50000;
  detail::DispatchCommand cmd;
  cmd.bindings = {ref(detail::Space::Input, 1, 64, 64),
                  ref(detail::Space::Constant, 0, 256, 16),
                  ref(detail::Space::Arena, 0, 4096, 128),
                  ref(detail::Space::Constant, 1, 0, 0), // empty
                  ref(detail::Space::Output, 0, 0, 64)};
  detail::GpuKernel kernel;
  kernel.scratchBytes = 4096;
  kernel.scratchOffsets = {0, 1024};
  LaunchArguments args(cmd, kernel, frame, 0x90000);
  std::vector<uint64_t> expected = {0x20040, 0x40100, 0x51000, 0,
                                    0x30000, 0x90000, 0x90400};
  EXPECT_EQ(args.values, expected);
  // cuLaunchKernel reads each argument through its pointer.
  ASSERT_EQ(args.params.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(args.params[i], &args.values[i]);
    EXPECT_EQ(*static_cast<uint64_t *>(args.params[i]), expected[i]);
  }
}

/// Runs \p plan as cuBLASLt would (column-major D = op(first) op(second),
/// each call a strided batch) on row-major host buffers.
void runPlan(const GemmPlan &plan, const std::vector<float> &a,
             const std::vector<float> &b, std::vector<float> &c) {
  auto at = [](const std::vector<float> &m, int64_t base, uint64_t ld,
               bool transpose, uint64_t row, uint64_t col) {
    // op(X)(row, col) of column-major X with leading dimension ld.
    return transpose ? m[base + col + row * ld] : m[base + row + col * ld];
  };
  for (const GemmPlan::Call &call : plan.calls)
    for (int64_t batch = 0; batch < plan.batchCount; ++batch) {
      int64_t first = call.first + batch * plan.firstStride;
      int64_t second = call.second + batch * plan.secondStride;
      int64_t out = call.c + batch * plan.cStride;
      for (uint64_t i = 0; i < plan.m; ++i)
        for (uint64_t j = 0; j < plan.n; ++j) {
          float sum = 0;
          for (uint64_t p = 0; p < plan.k; ++p)
            sum += at(b, first, plan.firstLd, plan.transposeFirst, i, p) *
                   at(a, second, plan.secondLd, plan.transposeSecond, p, j);
          c[out + i + j * plan.cLd] = sum;
        }
    }
}

/// The command's meaning: row-major C[b] = op(A[b]) op(B[b]).
std::vector<float> reference(const detail::GemmCommand &cmd,
                             const std::vector<float> &a,
                             const std::vector<float> &b) {
  std::vector<float> c(cmd.batchCount * cmd.m * cmd.n);
  for (int64_t batch = 0; batch < cmd.batchCount; ++batch) {
    int64_t aOff = 0, bOff = 0, rest = batch;
    for (size_t d = cmd.batchShape.size(); d-- > 0;) {
      int64_t i = rest % cmd.batchShape[d];
      rest /= cmd.batchShape[d];
      aOff += i * cmd.aBatchStrides[d];
      bOff += i * cmd.bBatchStrides[d];
    }
    for (int i = 0; i < cmd.m; ++i)
      for (int j = 0; j < cmd.n; ++j) {
        float sum = 0;
        for (int p = 0; p < cmd.k; ++p)
          sum += (cmd.transposeA ? a[aOff + p * cmd.m + i]
                                 : a[aOff + i * cmd.k + p]) *
                 (cmd.transposeB ? b[bOff + j * cmd.k + p]
                                 : b[bOff + p * cmd.n + j]);
        c[batch * cmd.m * cmd.n + i * cmd.n + j] = sum;
      }
  }
  return c;
}

struct GemmCase {
  int m, n, k;
  bool ta, tb;
  std::vector<int64_t> batch, aStrides, bStrides;
  /// cuBLASLt calls and the batch each makes.
  size_t calls;
  int64_t batchCount;
};

TEST(CudaHostTest, GemmPlansComputeTheCommand) {
  const std::vector<GemmCase> cases = {
      {2, 3, 4, false, false, {}, {}, {}, 1, 1},
      {5, 3, 7, true, false, {}, {}, {}, 1, 1},
      {5, 3, 7, false, true, {}, {}, {}, 1, 1},
      {4, 6, 2, true, true, {}, {}, {}, 1, 1},
      // Attention's batched matmul: [2, 3] batches, contiguous A and B.
      {4, 5, 3, false, true, {2, 3}, {36, 12}, {45, 15}, 1, 6},
      // B broadcast over every batch dimension: one strided batch of 6.
      {4, 5, 3, false, false, {2, 3}, {36, 12}, {0, 0}, 1, 6},
      // B broadcast over the outer dimension only: one call per outer
      // index, each a batch of 3.
      {4, 5, 3, false, false, {2, 3}, {36, 12}, {0, 15}, 2, 3},
      // Padded outer stride: does not fold.
      {2, 2, 2, false, false, {3, 2}, {10, 4}, {8, 4}, 3, 2},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const GemmCase &t : cases) {
    detail::GemmCommand cmd;
    cmd.m = t.m;
    cmd.n = t.n;
    cmd.k = t.k;
    cmd.transposeA = t.ta;
    cmd.transposeB = t.tb;
    cmd.batchShape = t.batch;
    cmd.aBatchStrides = t.aStrides;
    cmd.bBatchStrides = t.bStrides;
    cmd.batchCount = 1;
    int64_t aSize = t.m * t.k, bSize = t.k * t.n;
    for (size_t d = 0; d < t.batch.size(); ++d) {
      cmd.batchCount *= t.batch[d];
      aSize += (t.batch[d] - 1) * t.aStrides[d];
      bSize += (t.batch[d] - 1) * t.bStrides[d];
    }
    std::vector<float> a(aSize), b(bSize);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    GemmPlan plan = planGemm(cmd);
    SCOPED_TRACE("gemm " + std::to_string(t.m) + "x" + std::to_string(t.n) +
                 "x" + std::to_string(t.k) + (t.ta ? " A^T" : "") +
                 (t.tb ? " B^T" : "") + ", " +
                 std::to_string(t.batch.size()) + " batch dims");
    EXPECT_EQ(plan.calls.size(), t.calls);
    EXPECT_EQ(plan.batchCount, t.batchCount);
    // cuBLASLt's shapes: C^T is n x m.
    EXPECT_EQ(plan.m, uint64_t(t.n));
    EXPECT_EQ(plan.n, uint64_t(t.m));
    std::vector<float> c(cmd.batchCount * t.m * t.n, NAN);
    runPlan(plan, a, b, c);
    std::vector<float> want = reference(cmd, a, b);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(c[i], want[i], 1e-5) << "element " << i;
  }
}

TEST(CudaHostTest, GemmPlansCarryElementTypes) {
  // A and B's type and bytes, C's (which also sizes its call offsets), and
  // whether TF32 multiplies are allowed.
  detail::GemmCommand cmd;
  cmd.m = cmd.n = cmd.k = 8;
  cmd.abDtype = DType::BF16;
  GemmPlan plan = planGemm(cmd);
  EXPECT_EQ(plan.elementBytes, 2);
  EXPECT_EQ(plan.cElementBytes, 4);
  EXPECT_EQ(plan.abType, DType::BF16);
  EXPECT_EQ(plan.cType, DType::F32);
  cmd.abDtype = cmd.cDtype = DType::F16;
  plan = planGemm(cmd);
  EXPECT_EQ(plan.elementBytes, 2);
  EXPECT_EQ(plan.cElementBytes, 2);
  EXPECT_EQ(plan.cType, DType::F16);
  EXPECT_FALSE(plan.tf32);
  cmd.abDtype = cmd.cDtype = DType::F32;
  cmd.allowTf32 = true;
  plan = planGemm(cmd);
  EXPECT_EQ(plan.elementBytes, 4);
  EXPECT_TRUE(plan.tf32);
}

TEST(CudaHostTest, GemmPlansKnowTheirPointersAlignment) {
  // cuBLASLt assumes 256-byte pointers unless told: each operand's
  // alignment is the lowest bit of every offset its pointers take.
  detail::GemmCommand cmd;
  cmd.m = 4;
  cmd.n = 6;
  cmd.k = 5;
  cmd.abDtype = cmd.cDtype = DType::F16;
  cmd.a.offset = 1024;
  cmd.b.offset = 0;
  cmd.c.offset = 4096 + 8;
  cmd.hasBias = true;
  cmd.bias.offset = 2;
  GemmPlan plan = planGemm(cmd);
  EXPECT_EQ(plan.secondAlignment, 256u); // A
  EXPECT_EQ(plan.firstAlignment, 256u);  // B
  EXPECT_EQ(plan.cAlignment, 8u);
  EXPECT_EQ(plan.biasAlignment, 2u);
  // A strided batch of A matrices 20 f16 apart: 40-byte steps, 8-aligned.
  cmd.batchShape = {3};
  cmd.aBatchStrides = {20};
  cmd.bBatchStrides = {0};
  cmd.batchCount = 3;
  cmd.c.offset = 0;
  plan = planGemm(cmd);
  EXPECT_EQ(plan.secondAlignment, 8u);
  EXPECT_EQ(plan.firstAlignment, 256u);
  EXPECT_EQ(plan.cAlignment, 16u); // C matrices 24 f16 (48 bytes) apart
}

TEST(CudaHostTest, GemmEpiloguesMapToCublasLt) {
  detail::GemmCommand cmd;
  cmd.m = cmd.n = cmd.k = 8;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::Default);
  cmd.hasBias = true;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::Bias);
  cmd.activation = detail::GemmCommand::Relu;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::ReluBias);
  cmd.activation = detail::GemmCommand::GeluTanh;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::GeluTanhBias);
  cmd.hasBias = false;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::GeluTanh);
  cmd.activation = detail::GemmCommand::Relu;
  EXPECT_EQ(planGemm(cmd).epilogue, GemmPlan::Relu);
}

TEST(CudaHostTest, RefusesCommandsTheDeviceDoesNotRun) {
  Executable::Impl impl;
  FunctionSignature sig;
  sig.name = "f";
  impl.signatures = {sig};
  impl.functions.resize(1);
  auto refusal = [&](detail::Command command) {
    impl.functions[0].commands = {detail::CopyCommand(), command};
    Status s = checkCudaCommands(impl);
    return s ? std::string() : s.message();
  };
  // Collectives run (NCCL), except reductions of types NCCL lacks.
  detail::CollectiveCommand col;
  col.dtype = DType::F16;
  EXPECT_EQ(refusal(col), "");
  col.dtype = DType::I16;
  EXPECT_EQ(refusal(col), "function 'f' command 1 reduces i16 elements, "
                          "which NCCL cannot (recompile: Flow's compiler "
                          "reduces them in a wider type for CUDA)");
  col.kind = detail::CollectiveCommand::AllGather;
  EXPECT_EQ(refusal(col), "");
  // An empty product with an epilogue; without one, or with k > 0, runs.
  detail::GemmCommand gemm;
  gemm.m = gemm.n = 4;
  gemm.k = 0;
  EXPECT_EQ(refusal(gemm), "");
  gemm.hasBias = true;
  EXPECT_NE(refusal(gemm).find("an empty product (k = 0) with a bias"),
            std::string::npos);
  gemm.k = 3;
  EXPECT_EQ(refusal(gemm), "");
  // Convolutions run on cuDNN, with one padding per dimension.
  detail::ConvCommand conv;
  conv.n = conv.c = conv.o = conv.h = conv.w = conv.kh = conv.kw = 1;
  conv.oh = conv.ow = 1;
  EXPECT_EQ(refusal(conv), "");
  conv.padTop = 1;
  EXPECT_EQ(refusal(conv), "function 'f' command 1 (conv): padding [1, 0, 0, "
                           "0] differs between two sides, which cuDNN does "
                           "not take (Flow's compiler makes such "
                           "convolutions GEMMs for CUDA)");
  conv.padTop = 0;
  conv.blockedInput = true;
  EXPECT_NE(refusal(conv).find("blocked layouts and mixed-precision bf16 "
                               "convolutions are the CPU library's"),
            std::string::npos);
  // Pools next to convolutions are the CPU library's.
  detail::PoolCommand pool;
  EXPECT_NE(refusal(pool).find("is a library call the CUDA device does not "
                               "run yet"),
            std::string::npos);
}

TEST(CudaHostTest, ConvPlansMapTheEpilogueToCudnn) {
  detail::ConvCommand cmd;
  cmd.padTop = cmd.padBottom = 2;
  cmd.padLeft = cmd.padRight = 1;
  // Plain: one forward call, nothing added.
  StatusOr<ConvPlan> plan = planConv(cmd);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->fused);
  EXPECT_EQ(plan->padH, 2);
  EXPECT_EQ(plan->padW, 1);
  EXPECT_EQ(plan->residualWeight, 0.0f);
  EXPECT_FALSE(plan->copyResidual);
  // A residual without ReLU: copied into y, added with weight 1; in place,
  // not copied.
  cmd.hasResidual = true;
  plan = planConv(cmd);
  EXPECT_TRUE(plan->copyResidual);
  EXPECT_EQ(plan->residualWeight, 1.0f);
  cmd.residualInPlace = true;
  EXPECT_FALSE(planConv(cmd)->copyResidual);
  // ReLU: the fused call, with zeros for a missing bias.
  cmd.relu = true;
  cmd.residualInPlace = false;
  plan = planConv(cmd);
  EXPECT_TRUE(plan->fused);
  EXPECT_FALSE(plan->copyResidual);
  EXPECT_TRUE(plan->zeroBias);
  cmd.hasBias = true;
  EXPECT_FALSE(planConv(cmd)->zeroBias);
}

} // namespace
