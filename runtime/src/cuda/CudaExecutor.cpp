//===- CudaExecutor.cpp - Running executables on an NVIDIA GPU ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Loading an executable onto a CUDA device picks its kernel library
// (CudaHost.h; the PTX when the driver refuses the cubin), loads it with
// cuModuleLoadDataEx, looks up every launch's entry point and uploads the
// constants once (they stay resident). A call copies the inputs to device
// buffers kept per function, enqueues every command on the device's stream
// (kernel launches, cuBLASLt matmuls, cuDNN convolutions, device copies,
// NCCL collectives with their pieces packed and unpacked by strided device
// copies), waits, and copies the outputs back.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaDevice.h"
#include "CudaHost.h"
#ifdef FLOW_HAVE_CUDNN
#include "Cudnn.h"
#endif

#include "../Collectives.h"
#include "../CommandLoop.h"
#include "../Executor.h"
#include "../StagedBuffers.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

namespace {

/// Workspace cuBLASLt may use per matmul.
constexpr uint64_t kGemmWorkspaceBytes = uint64_t(32) << 20;

//===----------------------------------------------------------------------===//
// The executor
//===----------------------------------------------------------------------===//

/// A GEMM command's cuBLASLt descriptors and algorithm, made at load.
struct LtGemm {
  GemmPlan plan;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace = 0;
};

#ifdef FLOW_HAVE_CUDNN
/// A convolution command's cuDNN descriptors and algorithm, made at load.
struct DnnConv {
  ConvPlan plan;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  /// Zeros for the fused call of a convolution without a bias.
  DeviceMemory zeros;
};
#endif

/// Workspace cuDNN may use per convolution.
constexpr uint64_t kConvWorkspaceBytes = uint64_t(64) << 20;

class CudaExecutor final : public detail::Executor {
public:
  CudaExecutor(std::shared_ptr<const Executable> exe, CudaDevice &device)
      : exe(std::move(exe)), device(device) {}
  ~CudaExecutor() override;

  Status load();
  int threads() const override { return 1; }
  Status run(size_t function, const std::vector<ConstBuffer> &inputs,
             const std::vector<MutableBuffer> &outputs,
             const detail::CallHooks &hooks) override;
  bool ownsMemory() const override { return true; }
  Status readInput(size_t function, size_t input,
                   const MutableBuffer &out) override;

private:
  Status loadModule();
  Status prepareGemm(const detail::GemmCommand &cmd, const std::string &ctx);
  Status runGemm(const detail::GemmCommand &cmd, const DeviceFrame &frame);
  Status runDispatch(const detail::DispatchCommand &cmd,
                     const DeviceFrame &frame);
  Status runCollective(const detail::CollectiveCommand &cmd,
                       const DeviceFrame &frame,
                       const detail::CallHooks &hooks);
  Status prepareConv(const detail::ConvCommand &cmd, const std::string &ctx);
  /// Waits for the stream's work (at most the collective timeout when the
  /// function runs collectives).
  Status waitForStream(size_t function, const std::string &name);
  Status runConv(const detail::ConvCommand &cmd, const DeviceFrame &frame);
  class CudaCommands;

  std::shared_ptr<const Executable> exe;
  CudaDevice &device;
  CUmodule module = nullptr;
  /// Per kernel, per launch.
  std::vector<std::vector<CUfunction>> entries;
  std::vector<DeviceMemory> constants;
  DeviceMemory scratch;
  /// Per function: the arena and the inputs' and outputs' device buffers,
  /// allocated at the first call; resident state stays in its input's.
  std::vector<detail::StagedBuffers> buffers;
  const CublasLt *lt = nullptr;
  cublasLtHandle_t ltHandle = nullptr;
  DeviceMemory workspace;
  std::unordered_map<const detail::GemmCommand *, LtGemm> gemms;
  /// Each collective's send and receive stages, made at its first run.
  struct Stages {
    DeviceMemory send, recv;
  };
  std::unordered_map<const detail::CollectiveCommand *, Stages> stages;
#ifdef FLOW_HAVE_CUDNN
  const Cudnn *dnn = nullptr;
  cudnnHandle_t dnnHandle = nullptr;
  std::unordered_map<const detail::ConvCommand *, DnnConv> convs;
#endif
  DeviceMemory convWorkspace;
  /// The groups whose collectives the current call queued.
  std::vector<Group *> calling;

  /// Each function's command list captured as a CUDA graph, replayed with
  /// one launch per call while the call's buffers stay where they were.
  struct Graph {
    CUgraphExec exec = nullptr;
    /// The buffer addresses the graph was captured with.
    std::vector<uint64_t> frame;
    /// Direct calls so far (a function is captured at its second call,
    /// after the first has made what it makes lazily).
    unsigned calls = 0;
    /// Capture failed (an operation that cannot be captured): the function
    /// runs its commands directly from then on.
    bool refused = false;
  };
  std::vector<Graph> graphs;
  /// Runs the command list directly on the stream.
  Status runDirect(size_t function, const DeviceFrame &frame,
                   const detail::CallHooks &hooks,
                   const std::vector<CUevent> &events);
  /// Runs the command list as a CUDA graph where it can (see Graph).
  Status runGraph(size_t function, const DeviceFrame &frame,
                  const detail::CallHooks &hooks);
};

CudaExecutor::~CudaExecutor() {
  (void)device.enter();
  for (auto &[cmd, g] : gemms) {
    if (g.first)
      lt->cublasLtMatrixLayoutDestroy(g.first);
    if (g.second)
      lt->cublasLtMatrixLayoutDestroy(g.second);
    if (g.c)
      lt->cublasLtMatrixLayoutDestroy(g.c);
    if (g.desc)
      lt->cublasLtMatmulDescDestroy(g.desc);
  }
  if (ltHandle)
    lt->cublasLtDestroy(ltHandle);
#ifdef FLOW_HAVE_CUDNN
  for (auto &[cmd, c] : convs) {
    for (cudnnTensorDescriptor_t t : {c.x, c.y, c.bias})
      if (t)
        dnn->cudnnDestroyTensorDescriptor(t);
    if (c.w)
      dnn->cudnnDestroyFilterDescriptor(c.w);
    if (c.conv)
      dnn->cudnnDestroyConvolutionDescriptor(c.conv);
    if (c.act)
      dnn->cudnnDestroyActivationDescriptor(c.act);
  }
  if (dnnHandle)
    dnn->cudnnDestroy(dnnHandle);
#endif
  for (Graph &g : graphs)
    if (g.exec)
      device.api().cuGraphExecDestroy(g.exec);
  if (module)
    device.api().cuModuleUnload(module);
}

Status CudaExecutor::loadModule() {
  const Executable::Impl &impl = exe->implementation();
  if (impl.gpuKernels.empty())
    return Status::ok();
  const DeviceInfo &info = device.info();
  StatusOr<size_t> chosen =
      chooseLibrary(impl.gpuLibraries, info.computeCapability, info.str());
  if (!chosen)
    return chosen.status();
  const Driver &d = device.api();
  auto describeLibrary = [&](const detail::GpuLibrary &l) {
    return std::string(l.format == detail::GpuLibrary::Ptx ? "PTX" : "cubin") +
           " (compiled for " + l.arch + ")";
  };
  // The JIT's error log says why a PTX is refused.
  char log[8192];
  auto tryLoad = [&](const detail::GpuLibrary &l) {
    std::memset(log, 0, sizeof log);
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log,
                      reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
    CUresult r = d.cuModuleLoadDataEx(&module, l.data, 2, options, values);
    if (r != CUDA_SUCCESS)
      module = nullptr;
    return r;
  };
  const detail::GpuLibrary *library = &impl.gpuLibraries[*chosen];
  CUresult result = tryLoad(*library);
  std::string refused;
  // A cubin from a toolkit newer than the driver is refused: the driver
  // compiles the PTX instead.
  if (result != CUDA_SUCCESS && library->format == detail::GpuLibrary::Cubin &&
      (result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
       result == CUDA_ERROR_INVALID_IMAGE ||
       result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
       result == CUDA_ERROR_INVALID_SOURCE))
    if (std::optional<size_t> ptx =
            chooseFallbackPtx(impl.gpuLibraries, info.computeCapability)) {
      refused = "the driver refused the " + describeLibrary(*library) + " (" +
                d.describe(result) + "); ";
      library = &impl.gpuLibraries[*ptx];
      result = tryLoad(*library);
    }
  if (result != CUDA_SUCCESS) {
    std::string message = refused + "the CUDA driver rejected the kernels' " +
                          describeLibrary(*library) + " on " + info.str() +
                          ": " + d.describe(result);
    int isa = ptxIsaVersion(*library);
    int driverVersion = 0;
    if (result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION && isa > 0 &&
        d.cuDriverGetVersion(&driverVersion) == CUDA_SUCCESS) {
      int needed = cudaVersionForPtxIsa(isa);
      message += "; the kernels are PTX ISA " + std::to_string(isa / 10) + "." +
                 std::to_string(isa % 10) + ", which needs a driver for CUDA " +
                 (needed ? cudaVersionName(needed) : std::string("newer")) +
                 " or newer, and this driver is for CUDA " +
                 cudaVersionName(driverVersion) + " (update the NVIDIA driver)";
    }
    if (log[0])
      message += "; its log: " + std::string(log);
    return Status::error(message);
  }
  for (size_t k = 0; k < impl.gpuKernels.size(); ++k) {
    std::vector<CUfunction> functions;
    for (const detail::GpuLaunch &launch : impl.gpuKernels[k].launches) {
      CUfunction fn = nullptr;
      if (Status s = d.check(
              d.cuModuleGetFunction(&fn, module, launch.symbol.c_str()),
              "kernel " + std::to_string(k) + " ('" + impl.kernelNames[k] +
                  "'): no entry point '" + launch.symbol + "' in its library");
          !s)
        return s;
      // Shared memory beyond 48 KiB (static and dynamic together) is
      // opted in per function.
      uint64_t need = uint64_t(launch.sharedBytes) + launch.dynamicSharedBytes;
      if (launch.dynamicSharedBytes > 0 && need > 48 * 1024) {
        if (need > uint64_t(device.sharedOptIn()))
          return Status::error(
              "kernel " + std::to_string(k) + " ('" + impl.kernelNames[k] +
              "') needs " + std::to_string(need) +
              " bytes of shared memory per block; " + info.str() +
              " gives at most " + std::to_string(device.sharedOptIn()) +
              " (recompile with --gpu-arch for this GPU)");
        if (Status s =
                d.check(d.cuFuncSetAttribute(
                            fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            static_cast<int>(launch.dynamicSharedBytes)),
                        "kernel '" + launch.symbol +
                            "': opting in to dynamic shared memory");
            !s)
          return s;
      }
      functions.push_back(fn);
    }
    entries.push_back(std::move(functions));
  }
  return Status::ok();
}

Status CudaExecutor::prepareGemm(const detail::GemmCommand &cmd,
                                 const std::string &ctx) {
  if (!lt) {
    StatusOr<const CublasLt *> loaded = loadCublasLt();
    if (!loaded)
      return loaded.status();
    lt = *loaded;
    if (Status s = lt->check(lt->cublasLtCreate(&ltHandle),
                             "cannot create a cuBLASLt handle");
        !s)
      return s;
    StatusOr<DeviceMemory> memory =
        device.allocate(kGemmWorkspaceBytes, "cuBLASLt's workspace");
    if (!memory)
      return memory.status();
    workspace = std::move(*memory);
  }
  LtGemm &g = gemms[&cmd];
  g.plan = planGemm(cmd);
  const GemmPlan &p = g.plan;
  auto dataType = [](DType t) {
    return t == DType::BF16  ? CUDA_R_16BF
           : t == DType::F16 ? CUDA_R_16F
                             : CUDA_R_32F;
  };
  cudaDataType_t ab = dataType(p.abType), cType = dataType(p.cType);
  // f32 accumulation and scaling whatever the operands; f32 operands stay
  // f32 unless the executable allows TF32.
  cublasComputeType_t compute =
      p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (Status s = lt->check(
          lt->cublasLtMatmulDescCreate(&g.desc, compute, CUDA_R_32F), ctx);
      !s)
    return s;
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value,
                 size_t size) {
    return lt->check(
        lt->cublasLtMatmulDescSetAttribute(g.desc, attribute, value, size),
        ctx + ": setting a matmul attribute");
  };
  cublasOperation_t transA = p.transposeFirst ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t transB = p.transposeSecond ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (Status s = set(CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof(transA)); !s)
    return s;
  if (Status s = set(CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof(transB)); !s)
    return s;
  // The bias and activation: cuBLASLt's first operand is the command's B,
  // so D is C^T and a bias per row of D is one per column of C.
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  switch (p.epilogue) {
  case GemmPlan::Default:
    break;
  case GemmPlan::Bias:
    epilogue = CUBLASLT_EPILOGUE_BIAS;
    break;
  case GemmPlan::Relu:
    epilogue = CUBLASLT_EPILOGUE_RELU;
    break;
  case GemmPlan::ReluBias:
    epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    break;
  case GemmPlan::GeluTanh:
    epilogue = CUBLASLT_EPILOGUE_GELU;
    break;
  case GemmPlan::GeluTanhBias:
    epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    break;
  }
  if (Status s =
          set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
      !s)
    return s;
  if (cmd.hasBias) {
    cudaDataType_t biasType = cType;
    // Every matrix of a batch takes the same bias. The heuristic reads the
    // bias pointer's alignment: until a call sets the real one, a stand-in
    // with the alignment every call's has.
    int64_t biasStride = 0;
    const void *standIn =
        reinterpret_cast<const void *>(static_cast<uintptr_t>(p.biasAlignment));
    for (Status s :
         {set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)),
          set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &biasStride,
              sizeof(biasStride)),
          set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &standIn, sizeof(standIn))})
      if (!s)
        return s;
  }
  auto layout = [&](cublasLtMatrixLayout_t &out, cudaDataType_t type,
                    uint64_t rows, uint64_t cols, uint64_t ld,
                    int64_t stride) -> Status {
    if (Status s = lt->check(
            lt->cublasLtMatrixLayoutCreate(&out, type, rows, cols, ld), ctx);
        !s)
      return s;
    if (p.batchCount > 1) {
      int32_t count = static_cast<int32_t>(p.batchCount);
      if (Status s = lt->check(lt->cublasLtMatrixLayoutSetAttribute(
                                   out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                   &count, sizeof(count)),
                               ctx);
          !s)
        return s;
      return lt->check(lt->cublasLtMatrixLayoutSetAttribute(
                           out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                           &stride, sizeof(stride)),
                       ctx);
    }
    return Status::ok();
  };
  if (p.batchCount > INT32_MAX)
    return Status::error(ctx + ": a batch of " + std::to_string(p.batchCount) +
                         " matrices is more than cuBLASLt takes");
  if (Status s = layout(g.first, ab, p.firstRows, p.firstCols, p.firstLd,
                        p.firstStride);
      !s)
    return s;
  if (Status s = layout(g.second, ab, p.secondRows, p.secondCols, p.secondLd,
                        p.secondStride);
      !s)
    return s;
  if (Status s = layout(g.c, cType, p.cRows, p.cCols, p.cLd, p.cStride); !s)
    return s;
  cublasLtMatmulPreference_t preference = nullptr;
  if (Status s =
          lt->check(lt->cublasLtMatmulPreferenceCreate(&preference), ctx);
      !s)
    return s;
  // The workspace, and the operands' alignments (cuBLASLt's heuristic
  // assumes 256-byte pointers unless told; D is C).
  uint64_t limit = kGemmWorkspaceBytes;
  lt->cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
      sizeof(limit));
  for (auto [attribute, bytes] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.firstAlignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.secondAlignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.cAlignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.cAlignment}})
    lt->cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes,
                                             sizeof(bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = lt->cublasLtMatmulAlgoGetHeuristic(
      ltHandle, g.desc, g.first, g.second, g.c, g.c, preference, 1, &result,
      &found);
  lt->cublasLtMatmulPreferenceDestroy(preference);
  if (Status s = lt->check(status, ctx + ": no cuBLASLt algorithm"); !s)
    return s;
  if (found == 0)
    return Status::error(ctx + ": cuBLASLt has no algorithm for it");
  g.algo = result.algo;
  g.workspace = result.workspaceSize;
  return Status::ok();
}

Status CudaExecutor::load() {
  if (Status s = device.enter(); !s)
    return s;
  const Executable::Impl &impl = exe->implementation();
  // Commands the CUDA device runs: kernels, GEMMs, copies, collectives.
  if (Status s = checkCudaCommands(impl); !s)
    return s;
  if (Status s = loadModule(); !s)
    return s;
  // Persistent state: every constant resident on the device.
  for (size_t c = 0; c < impl.constants.size(); ++c) {
    const detail::Constant &constant = impl.constants[c];
    if (!constant.data && constant.size) {
      // Another device's parameter (a piece this process never reads).
      constants.emplace_back();
      continue;
    }
    std::string what = constant.parameter.empty()
                           ? "constant " + std::to_string(c)
                           : "parameter '" + constant.parameter + "'";
    StatusOr<DeviceMemory> memory = device.allocate(constant.size, what);
    if (!memory)
      return memory.status();
    if (Status s = device.copyToDevice(memory->address(), constant.data,
                                       constant.size);
        !s)
      return s;
    constants.push_back(std::move(*memory));
  }
  uint64_t scratchBytes = 0;
  for (const detail::GpuKernel &k : impl.gpuKernels)
    scratchBytes = std::max(scratchBytes, k.scratchBytes);
  if (StatusOr<DeviceMemory> memory =
          device.allocate(scratchBytes, "the kernels' scratch memory");
      memory)
    scratch = std::move(*memory);
  else
    return memory.status();
  for (size_t f = 0; f < impl.functions.size(); ++f)
    for (size_t i = 0; i < impl.functions[f].commands.size(); ++i)
      if (const auto *g =
              std::get_if<detail::GemmCommand>(&impl.functions[f].commands[i]);
          g && g->m > 0 && g->n > 0 && g->batchCount > 0) {
        // (An empty product only clears C: no cuBLASLt call to prepare.)
        std::string ctx = "function '" + impl.signatures[f].name +
                          "' command " + std::to_string(i) + " (gemm)";
        if (g->k > 0)
          if (Status s = prepareGemm(*g, ctx); !s)
            return s;
      }
  for (size_t f = 0; f < impl.functions.size(); ++f)
    for (size_t i = 0; i < impl.functions[f].commands.size(); ++i)
      if (const auto *c =
              std::get_if<detail::ConvCommand>(&impl.functions[f].commands[i]))
        if (Status s = prepareConv(*c, "function '" + impl.signatures[f].name +
                                           "' command " + std::to_string(i) +
                                           " (conv)");
            !s)
          return s;
  buffers.resize(impl.functions.size());
  return Status::ok();
}

Status CudaExecutor::runDispatch(const detail::DispatchCommand &cmd,
                                 const DeviceFrame &frame) {
  const Executable::Impl &impl = exe->implementation();
  const detail::GpuKernel &kernel = impl.gpuKernels[cmd.kernel];
  LaunchArguments args(cmd, kernel, frame, scratch.address());
  const Driver &d = device.api();
  for (size_t l = 0; l < kernel.launches.size(); ++l) {
    const detail::GpuLaunch &launch = kernel.launches[l];
    if (Status s =
            d.check(d.cuLaunchKernel(
                        entries[cmd.kernel][l], launch.grid[0], launch.grid[1],
                        launch.grid[2], launch.block[0], launch.block[1],
                        launch.block[2], launch.dynamicSharedBytes,
                        device.queue(), args.params.data(), nullptr),
                    "launching " + launch.symbol);
        !s)
      return s;
  }
  return Status::ok();
}

Status CudaExecutor::runGemm(const detail::GemmCommand &cmd,
                             const DeviceFrame &frame) {
  uint64_t c = frame.address(cmd.c);
  if (cmd.m == 0 || cmd.n == 0 || cmd.batchCount == 0)
    return Status::ok();
  if (cmd.k == 0) // empty products: C is zeros
    return device.api().check(
        device.api().cuMemsetD8Async(c, 0,
                                     uint64_t(cmd.batchCount) * cmd.m * cmd.n *
                                         dtypeSize(cmd.cDtype),
                                     device.queue()),
        "clearing an empty GEMM's result");
  const LtGemm &g = gemms.at(&cmd);
  const GemmPlan &p = g.plan;
  uint64_t a = frame.address(cmd.a), b = frame.address(cmd.b);
  if (cmd.hasBias) {
    // The bias' address is this call's (it may live in the arena).
    const void *bias = reinterpret_cast<const void *>(frame.address(cmd.bias));
    if (Status s = lt->check(
            lt->cublasLtMatmulDescSetAttribute(
                g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
            "setting a GEMM's bias");
        !s)
      return s;
  }
  float alpha = 1.0f, beta = 0.0f;
  for (const GemmPlan::Call &call : p.calls) {
    const void *first =
        reinterpret_cast<const void *>(b + call.first * p.elementBytes);
    const void *second =
        reinterpret_cast<const void *>(a + call.second * p.elementBytes);
    void *out = reinterpret_cast<void *>(c + call.c * p.cElementBytes);
    if (Status s = lt->check(
            lt->cublasLtMatmul(ltHandle, g.desc, &alpha, first, g.first, second,
                               g.second, &beta, out, g.c, out, g.c, &g.algo,
                               reinterpret_cast<void *>(workspace.address()),
                               g.workspace,
                               reinterpret_cast<cudaStream_t>(device.queue())),
            "cuBLASLt matmul");
        !s)
      return s;
  }
  return Status::ok();
}

#ifdef FLOW_HAVE_CUDNN
Status CudaExecutor::prepareConv(const detail::ConvCommand &cmd,
                                 const std::string &ctx) {
  StatusOr<ConvPlan> plan = planConv(cmd);
  if (!plan)
    return Status::error(ctx + ": " + plan.status().message());
  if (!dnn) {
    StatusOr<const Cudnn *> loaded = loadCudnn();
    if (!loaded)
      return loaded.status();
    dnn = *loaded;
    if (Status s = dnn->check(dnn->cudnnCreate(&dnnHandle),
                              "cannot create a cuDNN handle");
        !s)
      return s;
    if (Status s = dnn->check(
            dnn->cudnnSetStream(dnnHandle,
                                reinterpret_cast<cudaStream_t>(device.queue())),
            "cannot give cuDNN the device's stream");
        !s)
      return s;
    StatusOr<DeviceMemory> memory =
        device.allocate(kConvWorkspaceBytes, "cuDNN's workspace");
    if (!memory)
      return memory.status();
    convWorkspace = std::move(*memory);
  }
  DnnConv &c = convs[&cmd];
  c.plan = *plan;
  auto dim = [](int64_t v) { return static_cast<int>(v); };
  auto ok = [&](cudnnStatus_t status) { return dnn->check(status, ctx); };
  // f16 and bf16 tensors (the bias too) summed in f32 on tensor cores; f32
  // products stay f32 (no TF32).
  cudnnDataType_t type = cmd.element == DType::F16    ? CUDNN_DATA_HALF
                         : cmd.element == DType::BF16 ? CUDNN_DATA_BFLOAT16
                                                      : CUDNN_DATA_FLOAT;
  cudnnMathType_t math =
      cmd.element == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  if (Status s = ok(dnn->cudnnCreateTensorDescriptor(&c.x)); !s)
    return s;
  if (Status s = ok(dnn->cudnnCreateTensorDescriptor(&c.y)); !s)
    return s;
  if (Status s = ok(dnn->cudnnCreateTensorDescriptor(&c.bias)); !s)
    return s;
  if (Status s = ok(dnn->cudnnCreateFilterDescriptor(&c.w)); !s)
    return s;
  if (Status s = ok(dnn->cudnnCreateConvolutionDescriptor(&c.conv)); !s)
    return s;
  if (Status s = ok(dnn->cudnnCreateActivationDescriptor(&c.act)); !s)
    return s;
  for (Status s :
       {ok(dnn->cudnnSetTensor4dDescriptor(c.x, CUDNN_TENSOR_NCHW, type,
                                           dim(cmd.n), dim(cmd.c), dim(cmd.h),
                                           dim(cmd.w))),
        ok(dnn->cudnnSetTensor4dDescriptor(c.y, CUDNN_TENSOR_NCHW, type,
                                           dim(cmd.n), dim(cmd.o), dim(cmd.oh),
                                           dim(cmd.ow))),
        ok(dnn->cudnnSetTensor4dDescriptor(c.bias, CUDNN_TENSOR_NCHW, type, 1,
                                           dim(cmd.o), 1, 1)),
        ok(dnn->cudnnSetFilter4dDescriptor(c.w, type, CUDNN_TENSOR_NCHW,
                                           dim(cmd.o), dim(cmd.c / cmd.groups),
                                           dim(cmd.kh), dim(cmd.kw))),
        ok(dnn->cudnnSetConvolution2dDescriptor(
            c.conv, c.plan.padH, c.plan.padW, dim(cmd.strideH),
            dim(cmd.strideW), dim(cmd.dilationH), dim(cmd.dilationW),
            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)),
        ok(dnn->cudnnSetConvolutionGroupCount(c.conv, dim(cmd.groups))),
        ok(dnn->cudnnSetConvolutionMathType(c.conv, math)),
        ok(dnn->cudnnSetActivationDescriptor(c.act, CUDNN_ACTIVATION_RELU,
                                             CUDNN_PROPAGATE_NAN, 0.0))})
    if (!s)
      return s;
  // The fastest algorithm cuDNN's heuristics offer within the workspace.
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  if (Status s = ok(dnn->cudnnGetConvolutionForwardAlgorithm_v7(
          dnnHandle, c.x, c.w, c.conv, c.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          &found, perf));
      !s)
    return s;
  bool chosen = false;
  for (int i = 0; i < found && !chosen; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        perf[i].memory <= kConvWorkspaceBytes) {
      c.algo = perf[i].algo;
      chosen = true;
    }
  if (!chosen)
    return Status::error(ctx + ": cuDNN has no algorithm for it within " +
                         std::to_string(kConvWorkspaceBytes >> 20) +
                         " MiB of workspace");
  if (c.plan.zeroBias) {
    StatusOr<DeviceMemory> zeros = device.allocate(
        uint64_t(cmd.o) * dtypeSize(cmd.element), "a convolution's zero bias");
    if (!zeros)
      return zeros.status();
    c.zeros = std::move(*zeros);
    if (Status s = device.api().check(
            device.api().cuMemsetD8Async(c.zeros.address(), 0, c.zeros.size(),
                                         device.queue()),
            ctx);
        !s)
      return s;
  }
  return Status::ok();
}

Status CudaExecutor::runConv(const detail::ConvCommand &cmd,
                             const DeviceFrame &frame) {
  const DnnConv &c = convs.at(&cmd);
  const ConvPlan &p = c.plan;
  auto at = [&](const detail::BufferRef &ref) {
    return reinterpret_cast<void *>(frame.address(ref));
  };
  void *y = at(cmd.output);
  void *work = reinterpret_cast<void *>(convWorkspace.address());
  const float one = 1.0f;
  const Driver &d = device.api();
  if (p.copyResidual)
    if (Status s = d.check(d.cuMemcpyDtoDAsync(frame.address(cmd.output),
                                               frame.address(cmd.residual),
                                               cmd.output.size, device.queue()),
                           "copying a convolution's residual");
        !s)
      return s;
  if (p.fused) {
    // y = relu(conv(x) + weight * z + bias). Without a residual z is y with
    // weight 0: y is zeroed first, as 0 times a NaN left in it would be NaN.
    if (!cmd.hasResidual && !p.copyResidual)
      if (Status s = d.check(d.cuMemsetD8Async(frame.address(cmd.output), 0,
                                               cmd.output.size, device.queue()),
                             "clearing a convolution's output");
          !s)
        return s;
    void *z = cmd.hasResidual && !cmd.residualInPlace ? at(cmd.residual) : y;
    const void *bias =
        p.zeroBias ? reinterpret_cast<void *>(c.zeros.address()) : at(cmd.bias);
    return dnn->check(dnn->cudnnConvolutionBiasActivationForward(
                          dnnHandle, &one, c.x, at(cmd.input), c.w,
                          at(cmd.filter), c.conv, c.algo, work,
                          kConvWorkspaceBytes, &p.residualWeight, c.y, z,
                          c.bias, bias, c.act, c.y, y),
                      "cuDNN convolution");
  }
  // y = conv(x) + weight * y, then the bias.
  if (Status s = dnn->check(dnn->cudnnConvolutionForward(
                                dnnHandle, &one, c.x, at(cmd.input), c.w,
                                at(cmd.filter), c.conv, c.algo, work,
                                kConvWorkspaceBytes, &p.residualWeight, c.y, y),
                            "cuDNN convolution");
      !s)
    return s;
  if (!cmd.hasBias)
    return Status::ok();
  return dnn->check(
      dnn->cudnnAddTensor(dnnHandle, &one, c.bias, at(cmd.bias), &one, c.y, y),
      "adding a convolution's bias");
}
#else
Status CudaExecutor::prepareConv(const detail::ConvCommand &,
                                 const std::string &ctx) {
  return Status::error(ctx + ": this runtime was built without cuDNN's "
                             "header (cudnn.h), so the CUDA device runs no "
                             "library convolutions");
}
Status CudaExecutor::runConv(const detail::ConvCommand &, const DeviceFrame &) {
  return Status::error("no cuDNN");
}
#endif

Status CudaExecutor::runCollective(const detail::CollectiveCommand &cmd,
                                   const DeviceFrame &frame,
                                   const detail::CallHooks &hooks) {
  if (!hooks.group)
    return Status::error("a collective without a communicator");
  StatusOr<Group *> group = hooks.group(cmd.meshAxes);
  if (!group)
    return group.status();
  if (std::find(calling.begin(), calling.end(), *group) == calling.end())
    calling.push_back(*group);
  detail::CollectivePlan plan = detail::planCollective(cmd, (*group)->size());
  Stages &stage = stages[&cmd];
  for (auto [memory, bytes, what] :
       {std::tuple{&stage.send, plan.sendStageBytes, "send"},
        {&stage.recv, plan.recvStageBytes, "receive"}})
    if (bytes > 0 && memory->size() < bytes) {
      StatusOr<DeviceMemory> made = device.allocate(
          bytes, std::string("a collective's ") + what + " stage");
      if (!made)
        return made.status();
      *memory = std::move(*made);
    }
  using Buffer = detail::StridedCopy::Buffer;
  auto address = [&](Buffer b) -> uint64_t {
    switch (b) {
    case Buffer::Input:
      return frame.address(cmd.input);
    case Buffer::Output:
      return frame.address(cmd.output);
    case Buffer::SendStage:
      return stage.send.address();
    case Buffer::RecvStage:
      return stage.recv.address();
    }
    return 0;
  };
  const Driver &d = device.api();
  auto copy = [&](const detail::StridedCopy &c) -> Status {
    uint64_t src = address(c.src) + c.srcOffset,
             dst = address(c.dst) + c.dstOffset;
    if ((src == dst && c.srcPitch == c.dstPitch) || c.rows == 0 ||
        c.rowBytes == 0)
      return Status::ok();
    if (c.rows == 1 || (c.srcPitch == c.rowBytes && c.dstPitch == c.rowBytes))
      return d.check(
          d.cuMemcpyDtoDAsync(dst, src, c.rows * c.rowBytes, device.queue()),
          "packing a collective's pieces");
    // The driver takes pitches below 2 GiB: wider rows one copy each.
    if (std::max(c.srcPitch, c.dstPitch) > uint64_t(INT32_MAX)) {
      for (uint64_t r = 0; r < c.rows; ++r)
        if (Status s = d.check(d.cuMemcpyDtoDAsync(dst + r * c.dstPitch,
                                                   src + r * c.srcPitch,
                                                   c.rowBytes, device.queue()),
                               "packing a collective's pieces");
            !s)
          return s;
      return Status::ok();
    }
    CUDA_MEMCPY2D m;
    std::memset(&m, 0, sizeof m);
    m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = src;
    m.dstDevice = dst;
    m.srcPitch = c.srcPitch;
    m.dstPitch = c.dstPitch;
    m.WidthInBytes = c.rowBytes;
    m.Height = c.rows;
    return d.check(d.cuMemcpy2DAsync(&m, device.queue()),
                   "packing a collective's pieces");
  };
  for (const detail::StridedCopy &c : plan.pack)
    if (Status s = copy(c); !s)
      return s;
  // The bytes the communicator itself handed to NCCL.
  uint64_t before = (*group)->bytesPassed();
  if (Status s = detail::runPrimitive(
          cmd, plan, **group,
          reinterpret_cast<const void *>(address(plan.send)),
          reinterpret_cast<void *>(address(plan.recv)));
      !s)
    return s;
  if (hooks.collectiveBytes)
    hooks.collectiveBytes->push_back((*group)->bytesPassed() - before);
  for (const detail::StridedCopy &c : plan.unpack)
    if (Status unpacked = copy(c); !unpacked)
      return unpacked;
  return Status::ok();
}

Status CudaExecutor::waitForStream(size_t function, const std::string &name) {
  const Driver &d = device.api();
  std::string what = "running '" + name + "' on " + device.info().str();
  const std::vector<detail::Command> &commands =
      exe->implementation().functions[function].commands;
  bool collectives =
      std::any_of(commands.begin(), commands.end(), [](const auto &c) {
        return std::holds_alternative<detail::CollectiveCommand>(c);
      });
  if (!collectives)
    return d.check(d.cuStreamSynchronize(device.queue()), what);
  // A peer that stops leaves NCCL waiting for it: wait no longer than the
  // collective timeout, then fail (flow-run then ends the whole job).
  StatusOr<double> timeout = collectiveTimeoutFromEnvironment();
  if (!timeout)
    return timeout.status();
  // A failed peer shows as an NCCL asynchronous error: then, or at the
  // timeout, the communicators are aborted (which ends their kernels) and
  // the call fails (flow-run then ends the whole job).
  auto abortAll = [&] {
    for (Group *g : calling)
      g->abort();
  };
  auto start = std::chrono::steady_clock::now();
  while (true) {
    CUresult r = d.cuStreamQuery(device.queue());
    if (r != CUDA_ERROR_NOT_READY)
      return d.check(r, what);
    for (Group *g : calling)
      if (Status s = g->asyncError(); !s) {
        abortAll();
        return Status::error(what + ": " + s.message());
      }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (*timeout > 0 && waited > *timeout) {
      abortAll();
      return Status::error(what + ": its collectives waited " +
                           std::to_string(static_cast<int>(waited)) +
                           " s for the other GPUs (FLOW_COLLECTIVE_TIMEOUT); "
                           "a peer has stopped, its NCCL communicators were "
                           "aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// CUDA's way with each command: kernels, cuBLASLt, cuDNN, NCCL and copies
/// queued on the device's stream in command order.
class CudaExecutor::CudaCommands final : public detail::CommandSink {
public:
  CudaCommands(CudaExecutor &executor, const DeviceFrame &frame,
               const detail::CallHooks &hooks,
               const std::vector<CUevent> &events)
      : x(executor), frame(frame), hooks(hooks), events(events) {}

  Status before(size_t index) override {
    // Profiling: an event before each command (and one after the last).
    if (hooks.times)
      x.device.api().cuEventRecord(events[index], x.device.queue());
    return Status::ok();
  }
  Status dispatch(const detail::DispatchCommand &c, size_t) override {
    return x.runDispatch(c, frame);
  }
  Status gemm(const detail::GemmCommand &c, size_t) override {
    return x.runGemm(c, frame);
  }
  Status conv(const detail::ConvCommand &c, size_t) override {
    return x.runConv(c, frame);
  }
  Status pool(const detail::PoolCommand &, size_t) override {
    // Pools are library commands of the CPU's blocked convolution layouts;
    // the CUDA target leaves pooling to its kernels.
    return Status::error("a library pool command runs on the CPU device "
                         "only (the CUDA target compiles pooling into its "
                         "kernels)");
  }
  Status attention(const detail::AttentionCommand &, size_t) override {
    // The CUDA targets expand attention into GEMMs and kernels
    // (flow-decompose-attention); CudaHost's check refuses the command at
    // load, so this is never reached.
    return Status::error("a library attention command runs on the CPU "
                         "device only (the CUDA targets compile attention "
                         "into GEMMs and kernels)");
  }
  Status collective(const detail::CollectiveCommand &c, size_t) override {
    return x.runCollective(c, frame, hooks);
  }
  Status wait(const detail::WaitCommand &, size_t) override {
    // NCCL runs on the compute stream, in command order: the wait has
    // nothing left to do (no overlap on CUDA yet).
    return Status::ok();
  }
  Status copy(const detail::CopyCommand &c, size_t) override {
    if (c.src.size == 0)
      return Status::ok();
    const Driver &d = x.device.api();
    return d.check(d.cuMemcpyDtoDAsync(frame.address(c.dst),
                                       frame.address(c.src), c.src.size,
                                       x.device.queue()),
                   "copying on the device");
  }

private:
  CudaExecutor &x;
  const DeviceFrame &frame;
  const detail::CallHooks &hooks;
  const std::vector<CUevent> &events;
};

Status CudaExecutor::run(size_t function,
                         const std::vector<ConstBuffer> &inputs,
                         const std::vector<MutableBuffer> &outputs,
                         const detail::CallHooks &hooks) {
  const Executable::Impl &impl = exe->implementation();
  const FunctionSignature &sig = impl.signatures[function];
  if (hooks.checkNumerics)
    return Status::error("check-numerics runs on the CPU device only");
  if (Status s = device.enter(); !s)
    return s;
  detail::StagedBuffers &b = buffers[function];
  if (Status s = b.prepare(device, sig); !s)
    return s;
  if (Status s = b.copyIn(device, inputs, hooks); !s)
    return s;
  DeviceFrame frame;
  frame.arena = b.arena();
  for (size_t i = 0; i < inputs.size(); ++i)
    frame.inputs.push_back(b.input(i));
  for (size_t i = 0; i < outputs.size(); ++i)
    frame.outputs.push_back(b.output(i));
  for (const DeviceMemory &m : constants)
    frame.constants.push_back(m.address());

  const Driver &d = device.api();
  const std::vector<detail::Command> &commands =
      impl.functions[function].commands;
  // Profiling: an event before each command and after the last.
  std::vector<CUevent> events;
  auto destroyEvents = [&] {
    for (CUevent e : events)
      d.cuEventDestroy(e);
  };
  if (hooks.times) {
    events.resize(commands.size() + 1, nullptr);
    for (CUevent &e : events)
      if (Status s = d.check(d.cuEventCreate(&e, CU_EVENT_DEFAULT),
                             "creating a profiling event");
          !s) {
        destroyEvents();
        return s;
      }
  }
  calling.clear();
  // Profiled calls time each command with events between them: no graph.
  Status status = hooks.times ? runDirect(function, frame, hooks, events)
                              : runGraph(function, frame, hooks);
  if (hooks.times && status)
    d.cuEventRecord(events[commands.size()], device.queue());
  if (status)
    status = waitForStream(function, sig.name);
  if (hooks.times && status)
    for (size_t i = 0; i < commands.size(); ++i) {
      float ms = 0;
      d.cuEventElapsedTime(&ms, events[i], events[i + 1]);
      (*hooks.times)[i].first += ms * 1e-3;
      ++(*hooks.times)[i].second;
    }
  destroyEvents();
  if (!status)
    return status;
  return b.copyOut(device, sig, outputs, hooks);
}

Status CudaExecutor::runDirect(size_t function, const DeviceFrame &frame,
                               const detail::CallHooks &hooks,
                               const std::vector<CUevent> &events) {
  const Executable::Impl &impl = exe->implementation();
  CudaCommands sink{*this, frame, hooks, events};
  size_t failedAt = 0;
  Status status =
      detail::runCommands(impl.functions[function].commands, sink, &failedAt);
  if (!status)
    return Status::error("function '" + impl.signatures[function].name +
                         "' command " + std::to_string(failedAt) + ": " +
                         status.message());
  return status;
}

/// Whether CUDA graphs are on: FLOW_CUDA_GRAPHS=0 turns them off.
static bool graphsEnabled() {
  const char *value = std::getenv("FLOW_CUDA_GRAPHS");
  return !value || std::string(value) != "0";
}

Status CudaExecutor::runGraph(size_t function, const DeviceFrame &frame,
                              const detail::CallHooks &hooks) {
  const Executable::Impl &impl = exe->implementation();
  const std::vector<detail::Command> &commands =
      impl.functions[function].commands;
  static const std::vector<CUevent> noEvents;
  // Collectives poll their communicators and may allocate stages as they
  // run: they run directly.
  bool collectives =
      std::any_of(commands.begin(), commands.end(), [](const auto &c) {
        return std::holds_alternative<detail::CollectiveCommand>(c);
      });
  if (graphs.size() < impl.functions.size())
    graphs.resize(impl.functions.size());
  Graph &g = graphs[function];
  if (collectives || g.refused || !graphsEnabled() || commands.empty())
    return runDirect(function, frame, hooks, noEvents);
  const Driver &d = device.api();
  CUstream stream = device.queue();
  std::vector<uint64_t> key = frame.inputs;
  key.insert(key.end(), frame.outputs.begin(), frame.outputs.end());
  key.push_back(frame.arena);
  key.push_back(scratch.address());
  std::string what = "function '" + impl.signatures[function].name + "'";
  if (g.exec && g.frame == key)
    return d.check(d.cuGraphLaunch(g.exec, stream),
                   "replaying " + what + " as a CUDA graph");
  if (g.exec) {
    // The buffers moved: capture again.
    d.cuGraphExecDestroy(g.exec);
    g.exec = nullptr;
  }
  if (++g.calls < 2)
    return runDirect(function, frame, hooks, noEvents);
  // Capture the commands as they would be queued, then launch the graph.
  // Anything that cannot be captured makes the function run directly from
  // then on.
  auto refuse = [&] {
    g.refused = true;
    return runDirect(function, frame, hooks, noEvents);
  };
  if (d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) !=
      CUDA_SUCCESS)
    return refuse();
  CudaCommands sink{*this, frame, hooks, noEvents};
  Status captured = detail::runCommands(commands, sink, nullptr);
  CUgraph graph = nullptr;
  CUresult ended = d.cuStreamEndCapture(stream, &graph);
  if (!captured || ended != CUDA_SUCCESS || !graph) {
    if (graph)
      d.cuGraphDestroy(graph);
    return refuse();
  }
  CUgraphExec exec = nullptr;
  CUresult made = d.cuGraphInstantiate(&exec, graph, 0);
  d.cuGraphDestroy(graph);
  if (made != CUDA_SUCCESS || !exec)
    return refuse();
  g.exec = exec;
  g.frame = std::move(key);
  return d.check(d.cuGraphLaunch(g.exec, stream),
                 "launching " + what + " as a CUDA graph");
}

Status CudaExecutor::readInput(size_t function, size_t input,
                               const MutableBuffer &out) {
  if (Status s = device.enter(); !s)
    return s;
  if (function >= buffers.size())
    return Status::error("no function number " + std::to_string(function));
  return buffers[function].readInput(device, input, out);
}

} // namespace

StatusOr<std::unique_ptr<detail::Executor>>
cuda::createCudaExecutor(std::shared_ptr<const Executable> exe,
                         CudaDevice &device) {
  auto executor = std::make_unique<CudaExecutor>(std::move(exe), device);
  if (Status s = executor->load(); !s)
    return s;
  return std::unique_ptr<detail::Executor>(std::move(executor));
}
