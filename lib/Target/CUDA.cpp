//===- CUDA.cpp - Kernels to PTX and cubins --------------------------------===//
//
// Part of the Flow project.
//
// The CUDA target: bufferized kernels are mapped onto thread blocks
// (flow-map-kernels-to-gpu), lowered to NVVM, and serialized to PTX by
// gpu-module-to-binary (libdevice from the CUDA toolkit supplies math
// functions); where the toolkit's ptxas is found the PTX is also assembled
// into a cubin for the chosen compute capability. Both go into the
// executable; the runtime takes the cubin on a GPU of that capability and
// lets the driver compile the PTX on any other.
//
//===----------------------------------------------------------------------===//

#include "flow/Target/CUDA.h"
#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Target/CPU.h"
#include "flow/Target/Target.h"
#include "flow/runtime/executable_generated.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::flow;

std::optional<int> mlir::flow::parseComputeCapability(StringRef arch) {
  if (!arch.consume_front("sm_"))
    return std::nullopt;
  // sm_90a and sm_100f name architecture-specific feature sets.
  if (arch.ends_with("a") || arch.ends_with("f"))
    arch = arch.drop_back();
  int cc;
  if (arch.getAsInteger(10, cc) || cc < 10 || cc > 999)
    return std::nullopt;
  return cc;
}

int64_t mlir::flow::maxSharedBytesPerBlock(StringRef arch) {
  std::optional<int> cc = parseComputeCapability(arch);
  if (!cc)
    return 48 * 1024;
  switch (*cc) {
  case 75:
    return 64 * 1024;
  case 80:
  case 87:
    return 163 * 1024;
  case 86:
  case 88:
  case 89:
    return 99 * 1024;
  default:
    if (*cc >= 120)
      return 99 * 1024;
    if (*cc >= 90)
      return 227 * 1024;
    return 48 * 1024;
  }
}

ArrayRef<StringRef> mlir::flow::getGpuArchs() {
  // What CUDA 13's ptxas compiles for (`ptxas --help`, --gpu-name): Volta
  // (sm_70, sm_72) is gone from it.
  static const StringRef archs[] = {
      "sm_75",   "sm_80",   "sm_86",  "sm_87",   "sm_88",   "sm_89",
      "sm_90",   "sm_90a",  "sm_100", "sm_100a", "sm_100f", "sm_103",
      "sm_103a", "sm_103f", "sm_110", "sm_110a", "sm_110f", "sm_120",
      "sm_120a", "sm_120f", "sm_121", "sm_121a", "sm_121f"};
  return archs;
}

std::optional<std::string> mlir::flow::checkGpuArch(StringRef arch) {
  if (!parseComputeCapability(arch))
    return "'" + arch.str() +
           "' is not a compute capability sm_XY (sm_80, sm_90, sm_90a)";
  if (!llvm::is_contained(getGpuArchs(), arch))
    return "'" + arch.str() +
           "' is not an architecture CUDA 13 compiles for (" +
           llvm::join(getGpuArchs(), ", ") + ")";
  return std::nullopt;
}

std::string mlir::flow::cudaToolkitPath(const CudaTargetOptions &options) {
  if (!options.toolkitPath.empty())
    return options.toolkitPath;
  if (const char *env = std::getenv("FLOW_CUDA_PATH"); env && *env)
    return env;
  return "/usr/local/cuda";
}

void mlir::flow::registerCudaTargetTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void mlir::flow::buildKernelCudaBufferizePipeline(OpPassManager &pm) {
  // As on the CPU up to out-parameters; then the copies bufferization
  // made (a tile written back into its own place folds away after cse)
  // become linalg.generic like every other op, for the thread mapping.
  addFlowPipeline(
      pm, "flow-record-kernel-abi,one-shot-bufferize{bufferize-function-"
          "boundaries function-boundary-type-conversion=identity-layout-map},"
          "canonicalize,buffer-results-to-out-params{hoist-static-allocs},"
          "cse,canonicalize,flow-copies-to-linalg,linalg-generalize-named-ops");
}

void mlir::flow::buildKernelGpuPipeline(OpPassManager &pm,
                                        const CudaTargetOptions &options) {
  pm.addPass(createSplitGpuReductionsPass());
  MapKernelsToGpuPassOptions map;
  map.blockSize = options.blockSize;
  map.maxSharedBytes = maxSharedBytesPerBlock(options.arch);
  pm.addPass(createMapKernelsToGpuPass(map));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::flow::buildKernelNvvmPipeline(OpPassManager &pm,
                                         const CudaTargetOptions &options) {
  // f16 and bf16 math functions compute in f32 (libdevice has f32 ones).
  addFlowPipeline(pm, "gpu.module(lower-affine,convert-scf-to-cf,"
                      "math-extend-to-supported-types,expand-strided-metadata,"
                      "lower-affine)");
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.arch;
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  addFlowPipeline(pm, "gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-"
                      "call-conv=1},canonicalize,cse),"
                      "reconcile-unrealized-casts");
}

namespace {

LogicalResult verifyBlockSize(ModuleOp module,
                              const CudaTargetOptions &options) {
  int64_t b = options.blockSize;
  if (b < 32 || b > 1024 || b % 32)
    return module.emitError("the CUDA block size must be a multiple of 32 "
                            "from 32 to 1024, got ")
           << b;
  return success();
}

/// linalg -> thread blocks (gpu) -> NVVM -> PTX (and a cubin).
class CudaTarget : public Target {
public:
  StringRef getName() const override { return "cuda"; }
  uint8_t getExecutableTarget() const override {
    return static_cast<uint8_t>(::flow::fbs::Target::CUDA);
  }
  LogicalResult verifyOptions(ModuleOp module,
                              const TargetOptions &options) const override {
    if (std::optional<std::string> why = checkGpuArch(options.cuda.arch))
      return module.emitError("--gpu-arch: ") << *why;
    if (failed(verifyBlockSize(module, options.cuda)))
      return failure();
    std::string toolkit = cudaToolkitPath(options.cuda);
    SmallString<128> libdevice(toolkit);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice",
                            "libdevice.10.bc");
    if (!llvm::sys::fs::exists(libdevice))
      return module.emitError("the CUDA target needs the CUDA toolkit's "
                              "libdevice, not found at ")
             << libdevice
             << " (install the CUDA toolkit or set FLOW_CUDA_PATH)";
    return success();
  }
  bool usesBlockedConvLayouts() const override { return false; }
  // f32, f16 and bf16 convolutions on cuDNN (with their bias, residual and
  // ReLU); the emulation runs the same commands on the CPU's convolution
  // library (narrow ones through f32).
  bool hasConvolutionLibrary() const override { return true; }
  bool hasNarrowConvolutionLibrary() const override { return true; }
  bool convolutionLibraryNeedsSymmetricPadding() const override {
    return true;
  }
  // cuBLASLt's bias and activation epilogues (the CPU runtime applies them
  // too, so the emulation runs the same commands).
  bool hasGemmLibraryEpilogues() const override { return true; }
  // cuBLASLt runs f16 and bf16 products summed in f32 (so does the CPU
  // runtime, for the emulation).
  bool hasNarrowGemmLibrary() const override { return true; }
  std::vector<KernelPhase>
  getKernelPhases(const TargetOptions &options) const override {
    CudaTargetOptions cuda = options.cuda;
    return {{"bufferized", buildKernelCudaBufferizePipeline},
            {"gpu",
             [cuda](OpPassManager &pm) { buildKernelGpuPipeline(pm, cuda); }},
            {"nvvm", [cuda](OpPassManager &pm) {
               buildKernelNvvmPipeline(pm, cuda);
             }}};
  }
  StringRef getAbiPhase() const override { return "gpu"; }
  llvm::StringMap<KernelInfo>
  getKernelInfos(ModuleOp kernels) const override {
    // A kernel's launches are its stages (or its one gpu.func), in order.
    llvm::StringMap<KernelInfo> infos;
    llvm::StringMap<std::vector<std::pair<int64_t, KernelInfo::GpuLaunch>>>
        stages;
    kernels.walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      StringRef kernel = func.getName();
      int64_t index = 0;
      if (auto of = func->getAttrOfType<StringAttr>(
              FlowDialect::getStageOfAttrName()))
        kernel = of.getValue();
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getStageAttrName()))
        index = n.getInt();
      KernelInfo::GpuLaunch launch;
      launch.symbol = func.getName().str();
      auto dims = [&](StringRef name, std::array<int64_t, 3> &to) {
        if (auto a = func->getAttrOfType<DenseI64ArrayAttr>(name);
            a && a.size() == 3)
          llvm::copy(a.asArrayRef(), to.begin());
      };
      dims(FlowDialect::getGridAttrName(), launch.grid);
      dims(FlowDialect::getBlockAttrName(), launch.block);
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getSharedBytesAttrName()))
        launch.sharedBytes = n.getInt();
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getDynamicSharedBytesAttrName()))
        launch.dynamicSharedBytes = n.getInt();
      stages[kernel].push_back({index, launch});
      if (infos.count(kernel))
        return;
      KernelInfo info = readKernelAbi(func, func.getFunctionType(), kernel);
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getScratchBytesAttrName()))
        info.scratchBytes = n.getInt();
      if (auto offsets = func->getAttrOfType<DenseI64ArrayAttr>(
              FlowDialect::getScratchOffsetsAttrName()))
        info.scratchOffsets.assign(offsets.asArrayRef().begin(),
                                   offsets.asArrayRef().end());
      infos[kernel] = std::move(info);
    });
    for (auto &entry : stages) {
      llvm::sort(entry.second, llvm::less_first());
      for (auto &[index, launch] : entry.second)
        infos[entry.getKey()].launches.push_back(launch);
    }
    return infos;
  }
  StringRef getTextPhase() const override { return "ptx"; }
  FailureOr<std::vector<KernelLibraryBlob>>
  serialize(ModuleOp kernels, const TargetOptions &options,
            std::string *text) const override;
};

FailureOr<std::vector<KernelLibraryBlob>>
CudaTarget::serialize(ModuleOp kernels, const TargetOptions &options,
                      std::string *text) const {
  std::vector<KernelLibraryBlob> libraries;
  if (kernels.getOps<gpu::GPUModuleOp>().empty())
    return libraries;
  std::string toolkit = cudaToolkitPath(options.cuda);
  PassManager pm(kernels->getContext(), ModuleOp::getOperationName());
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  toBinary.toolkitPath = toolkit;
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
  if (failed(pm.run(kernels)))
    return failure();
  std::string ptx;
  for (gpu::BinaryOp binary : kernels.getOps<gpu::BinaryOp>())
    for (Attribute a : binary.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(a))
        ptx += object.getObject().getValue().str();
  if (ptx.empty())
    return kernels.emitError("gpu-module-to-binary produced no PTX");
  if (text)
    *text = ptx;
  KernelLibraryBlob blob;
  blob.format = static_cast<uint8_t>(::flow::fbs::KernelFormat::PTX);
  blob.arch = options.cuda.arch;
  blob.data.assign(ptx.begin(), ptx.end());
  // The driver wants PTX NUL-terminated.
  blob.data.push_back(0);
  libraries.push_back(std::move(blob));

  // A cubin too, where the toolkit has ptxas.
  SmallString<128> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas))
    return libraries;
  // The PTX, the cubin and ptxas's messages, in files removed on return.
  SmallString<128> in, out, log;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("flow-kernels", "ptx", fd, in))
    return kernels.emitError("cannot create a temporary file");
  llvm::FileRemover removeIn(in);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  if (llvm::sys::fs::createTemporaryFile("flow-kernels", "cubin", out))
    return kernels.emitError("cannot create a temporary file");
  llvm::FileRemover removeOut(out);
  if (llvm::sys::fs::createTemporaryFile("flow-ptxas", "log", log))
    return kernels.emitError("cannot create a temporary file");
  llvm::FileRemover removeLog(log);
  std::string arch = "-arch=" + options.cuda.arch;
  SmallVector<StringRef> args = {ptxas, arch, "-O3", "-o", out, in};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0,
                                     0, &message);
  if (rc != 0) {
    auto logText = llvm::MemoryBuffer::getFile(log);
    return kernels.emitError("ptxas rejected Flow's PTX for ")
           << options.cuda.arch << " (exit " << rc << "): "
           << (logText ? (*logText)->getBuffer().trim() : StringRef(message));
  }
  auto cubin = llvm::MemoryBuffer::getFile(out);
  if (!cubin)
    return kernels.emitError("cannot read the cubin ptxas wrote");
  KernelLibraryBlob binary;
  binary.format = static_cast<uint8_t>(::flow::fbs::KernelFormat::CUBIN);
  binary.arch = options.cuda.arch;
  StringRef bytes = (*cubin)->getBuffer();
  binary.data.assign(bytes.begin(), bytes.end());
  libraries.push_back(std::move(binary));
  return libraries;
}

/// The CUDA target's kernels, as mapped onto thread blocks, run on the CPU
/// (flow-emulate-gpu-kernels): the mapping's tests without a GPU.
class CudaEmulatedTarget : public Target {
public:
  StringRef getName() const override { return "cuda-emulated"; }
  uint8_t getExecutableTarget() const override {
    return cpu->getExecutableTarget();
  }
  LogicalResult verifyOptions(ModuleOp module,
                              const TargetOptions &options) const override {
    return verifyBlockSize(module, options.cuda);
  }
  bool usesBlockedConvLayouts() const override { return false; }
  // f32, f16 and bf16 convolutions on cuDNN (with their bias, residual and
  // ReLU); the emulation runs the same commands on the CPU's convolution
  // library (narrow ones through f32).
  bool hasConvolutionLibrary() const override { return true; }
  bool hasNarrowConvolutionLibrary() const override { return true; }
  bool convolutionLibraryNeedsSymmetricPadding() const override {
    return true;
  }
  // cuBLASLt's bias and activation epilogues (the CPU runtime applies them
  // too, so the emulation runs the same commands).
  bool hasGemmLibraryEpilogues() const override { return true; }
  // cuBLASLt runs f16 and bf16 products summed in f32 (so does the CPU
  // runtime, for the emulation).
  bool hasNarrowGemmLibrary() const override { return true; }
  std::vector<KernelPhase>
  getKernelPhases(const TargetOptions &options) const override {
    CudaTargetOptions cuda = options.cuda;
    KernelCpuLLVMPipelineOptions llvmOptions;
    llvmOptions.expandBf16 = !cpuKernelFeatures(options.cpu.cpu).convertsBf16();
    llvmOptions.lowerVectors = true;
    return {{"bufferized", buildKernelCudaBufferizePipeline},
            {"gpu",
             [cuda](OpPassManager &pm) { buildKernelGpuPipeline(pm, cuda); }},
            {"emulated",
             [](OpPassManager &pm) {
               addFlowPipeline(pm, "flow-emulate-gpu-kernels,canonicalize,cse");
             }},
            {"llvm", [llvmOptions](OpPassManager &pm) {
               buildKernelCpuLLVMPipeline(pm, llvmOptions);
             }}};
  }
  StringRef getAbiPhase() const override { return "emulated"; }
  llvm::StringMap<KernelInfo>
  getKernelInfos(ModuleOp kernels) const override {
    return cpu->getKernelInfos(kernels);
  }
  FailureOr<std::vector<KernelLibraryBlob>>
  serialize(ModuleOp kernels, const TargetOptions &options,
            std::string *text) const override {
    return cpu->serialize(kernels, options, text);
  }

private:
  std::unique_ptr<Target> cpu = createCpuTarget();
};

} // namespace

std::unique_ptr<Target> mlir::flow::createCudaEmulatedTarget() {
  return std::make_unique<CudaEmulatedTarget>();
}

std::unique_ptr<Target> mlir::flow::createCudaTarget() {
  return std::make_unique<CudaTarget>();
}
