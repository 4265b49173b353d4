//===- CPU.cpp - LLVM dialect to an ELF shared object ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Target/CPU.h"
#include "flow/Codegen/CPU/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Target/Target.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/executable_generated.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "flow/runtime/CpuFeatures.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::flow;

void mlir::flow::registerCpuTargetTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

namespace {
/// A temporary file removed on destruction.
struct TempFile {
  SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};
} // namespace

/// The CPU features of `cpu` ("host": this machine's).
static std::string featuresFor(StringRef cpu) {
  if (cpu != "host")
    return "";
  SmallVector<std::string> features;
  for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features.push_back((enabled ? "+" : "-") + name.str());
  return llvm::join(features, ",");
}

/// Which of \p names `cpu` ("host": this machine's) has.
static std::vector<std::string> cpuHas(StringRef cpu,
                                       ArrayRef<const char *> names) {
  std::vector<std::string> has;
  if (cpu == "host") {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    for (const char *name : names)
      if (features.lookup(name))
        has.push_back(name);
    return has;
  }
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return has;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, cpu, ""));
  for (const char *name : names)
    if (info && info->checkFeatures(std::string("+") + name))
      has.push_back(name);
  return has;
}

std::optional<std::string> mlir::flow::checkCpuName(StringRef cpu) {
  if (cpu == "host")
    return std::nullopt;
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return "no LLVM target for " + triple.str() + ": " + error;
  // Asked with the generic CPU: LLVM warns on stderr for an unknown name.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return "'" + cpu.str() + "' is not a processor LLVM knows for " +
           triple.getArchName().str() +
           " (host, or a name like x86-64-v3, skylake-avx512, znver4, "
           "sapphirerapids)";
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, cpu, ""));
  if (triple.getArch() == llvm::Triple::x86_64 &&
      !info->checkFeatures("+64bit"))
    return "'" + cpu.str() + "' has no 64-bit code (x86-64)";
  return std::nullopt;
}

bool CpuKernelFeatures::convertsBf16() const {
  return llvm::is_contained(features, "avx512bf16") ||
         llvm::is_contained(features, "avxneconvert");
}

CpuKernelFeatures mlir::flow::cpuKernelFeatures(StringRef cpu) {
  std::string name =
      cpu == "host" ? llvm::sys::getHostCPUName().str() : cpu.str();
  return {name, cpuHas(cpu, ::flow::runtime::kCheckedCpuFeatures)};
}

FailureOr<std::vector<uint8_t>>
mlir::flow::buildCpuKernelLibrary(ModuleOp module,
                                  const CpuTargetOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "flow_kernels");
  if (!llvmModule)
    return module.emitError("cannot translate the kernels to LLVM IR");

  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError("no LLVM target for ")
           << triple.str() << ": " << error;
  std::string cpu =
      options.cpu == "host" ? llvm::sys::getHostCPUName().str() : options.cpu;
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, featuresFor(options.cpu), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return module.emitError("cannot create an LLVM target machine for cpu '")
           << cpu << "'";
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

  // LLVM's -O3 pipeline, without full unrolling: kernels' loops have small
  // static trip counts that full unrolling blows up (seconds of compile time
  // and hundreds of KB of code) for no measured gain over vectorization.
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = false;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder builder(machine.get(), tuning);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level =
        options.optLevel >= 3   ? llvm::OptimizationLevel::O3
        : options.optLevel == 2 ? llvm::OptimizationLevel::O2
        : options.optLevel == 1 ? llvm::OptimizationLevel::O1
                                : llvm::OptimizationLevel::O0;
    llvm::ModulePassManager mpm = builder.buildPerModuleDefaultPipeline(level);
    mpm.run(*llvmModule, mam);
  }

  // Object code, in memory.
  SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the LLVM target cannot emit object files");
    pm.run(*llvmModule);
  }

  // Link it into a shared object with lld.
  auto linker = llvm::sys::findProgramByName("ld.lld-22");
  if (!linker)
    linker = llvm::sys::findProgramByName("ld.lld");
  if (!linker)
    return module.emitError(
        "cannot find the linker ld.lld (install lld-22; scripts/setup.sh "
        "does)");
  TempFile obj, so;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("flow-kernels", "o", fd, obj.path))
    return module.emitError("cannot create a temporary file");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
  }
  if (llvm::sys::fs::createTemporaryFile("flow-kernels", "so", so.path))
    return module.emitError("cannot create a temporary file");
  std::string message;
  SmallVector<StringRef> args = {*linker, "-shared", "--no-undefined-version",
                                 "-o",    so.path,   obj.path};
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0)
    return module.emitError("linking the kernel library failed (")
           << *linker << " exited with " << rc << ") " << message;
  auto buffer = llvm::MemoryBuffer::getFile(so.path);
  if (!buffer)
    return module.emitError("cannot read the linked kernel library");
  StringRef bytes = (*buffer)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

void mlir::flow::buildKernelBufferizePipeline(OpPassManager &pm) {
  // The canonicalize before buffer-results-to-out-params folds a result
  // that is a reshape of a reshape of its allocation (a row-tiled kernel
  // whose unit dimensions were folded) back to the allocation, so that it
  // becomes the out-parameter: else the kernel writes a buffer of its own,
  // copies it, and cannot be split over workgroups.
  addFlowPipeline(pm,
              "flow-record-kernel-abi,one-shot-bufferize{bufferize-function-"
              "boundaries function-boundary-type-conversion=identity-layout-"
              "map},canonicalize,buffer-results-to-out-params{hoist-static-allocs},"
              "scf-forall-to-parallel,flow-kernel-scratch,canonicalize,buffer-deallocation-pipeline,flow-copies-to-linalg,"
              "convert-linalg-to-parallel-loops,flow-distribute-workgroups,"
              "canonicalize,cse");
}

void mlir::flow::buildKernelCpuLLVMPipeline(
    OpPassManager &pm, const KernelCpuLLVMPipelineOptions &options) {
  if (options.expandBf16)
    pm.addPass(createExpandBf16Pass());
  addFlowPipeline(pm,
              std::string("flow-approximate-math,convert-scf-to-cf,expand-strided-metadata,"
              "lower-affine,") +
              (options.lowerVectors ? "convert-vector-to-llvm," : "") +
              "convert-math-to-llvm,convert-math-to-libm,"
              "finalize-memref-to-llvm,convert-arith-to-llvm,"
              "convert-func-to-llvm{use-bare-ptr-memref-call-conv},"
              "convert-cf-to-llvm,reconcile-unrealized-casts");
  if (options.expandBf16)
    pm.addPass(createHoldBf16AsI16Pass());
  pm.addPass(createEmitKernelEntriesPass());
}


namespace {
/// linalg -> loops split over workgroups -> LLVM -> an ELF shared object.
class CpuTarget : public Target {
public:
  StringRef getName() const override { return "cpu"; }
  uint8_t getExecutableTarget() const override {
    return static_cast<uint8_t>(::flow::fbs::Target::CPU);
  }
  bool usesBlockedConvLayouts() const override { return true; }
  bool hasConvolutionLibrary() const override { return true; }
  // Epilogues run tile by tile with the GEMM's pieces instead.
  bool hasGemmLibraryEpilogues() const override { return false; }
  // f16 products are kernels (no f16 GEMM in the CPU's libraries).
  bool hasNarrowGemmLibrary() const override { return false; }
  // The runtime's blocked attention (runtime/src/Attention.cpp).
  bool hasAttentionLibrary() const override { return true; }
  LogicalResult verifyOptions(ModuleOp module,
                              const TargetOptions &options) const override {
    if (options.cuda.allowTf32)
      return module.emitError("--allow-tf32 is for the CUDA targets (a CPU "
                              "has no TF32 arithmetic)");
    return success();
  }
  std::vector<KernelPhase>
  getKernelPhases(const TargetOptions &options) const override {
    // Without bf16 conversion instructions kernels round in software.
    KernelCpuLLVMPipelineOptions llvmOptions;
    llvmOptions.expandBf16 = !cpuKernelFeatures(options.cpu.cpu).convertsBf16();
    return {{"bufferized", buildKernelBufferizePipeline},
            {"llvm", [llvmOptions](OpPassManager &pm) {
               buildKernelCpuLLVMPipeline(pm, llvmOptions);
             }}};
  }
  StringRef getAbiPhase() const override { return "bufferized"; }
  llvm::StringMap<KernelInfo>
  getKernelInfos(ModuleOp kernels) const override {
    llvm::StringMap<KernelInfo> infos;
    for (func::FuncOp func : kernels.getOps<func::FuncOp>()) {
      if (!func->hasAttr(FlowDialect::getKernelAttrName()))
        continue;
      // flow-emit-kernel-entries names each entry point.
      KernelInfo info = readKernelAbi(func, func.getFunctionType(),
                                      (func.getSymName() + "_entry").str());
      if (auto n = func->getAttrOfType<IntegerAttr>(
              FlowDialect::getMaxWorkgroupsAttrName()))
        info.maxWorkgroups = n.getInt();
      infos[func.getSymName()] = std::move(info);
    }
    return infos;
  }
  FailureOr<std::vector<KernelLibraryBlob>>
  serialize(ModuleOp kernels, const TargetOptions &options,
            std::string *) const override {
    std::vector<KernelLibraryBlob> libraries;
    if (kernels.getOps<LLVM::LLVMFuncOp>().empty())
      return libraries;
    FailureOr<std::vector<uint8_t>> elf =
        buildCpuKernelLibrary(kernels, options.cpu);
    if (failed(elf))
      return failure();
    CpuKernelFeatures cpu = cpuKernelFeatures(options.cpu.cpu);
    KernelLibraryBlob blob;
    blob.format = static_cast<uint8_t>(::flow::fbs::KernelFormat::ELF);
    blob.arch = cpu.name;
    blob.features = cpu.features;
    blob.data = std::move(*elf);
    libraries.push_back(std::move(blob));
    return libraries;
  }
};
} // namespace

std::unique_ptr<Target> mlir::flow::createCpuTarget() {
  return std::make_unique<CpuTarget>();
}
