//===- Compile.cpp - Flow's compile driver
//---------------------------------===//
//
// Part of the Flow project.
//
// compile(): the phases one after another, each timed into the report,
// stopping where CompileOptions::compileTo says.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Codegen/Common/Passes.h"
#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Fusion/Passes.h"
#include "flow/Pipelines/Pipelines.h"
#include "flow/Support/Location.h"
#include "flow/Target/CUDA.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/JSON.h"
#include <chrono>
#include <mutex>
#include <set>
using namespace mlir;
using namespace mlir::flow;

/// Puts the public functions without a mesh on a new mesh of `shape`.
static LogicalResult applyMesh(ModuleOp module, ArrayRef<int64_t> shape) {
  auto placed = [](func::FuncOp func) {
    return !func.isPublic() || func.isExternal() ||
           func->hasAttr(FlowDialect::getMeshAttrName());
  };
  if (llvm::all_of(module.getOps<func::FuncOp>(), placed))
    return success();
  std::string name = "mesh";
  for (int i = 0; SymbolTable::lookupSymbolIn(module, name); ++i)
    name = "mesh" + std::to_string(i);
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  MeshOp::create(b, module.getLoc(), name, shape);
  auto ref = FlatSymbolRefAttr::get(module.getContext(), name);
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (!placed(func))
      func->setAttr(FlowDialect::getMeshAttrName(), ref);
  return success();
}

/// Each kernel's ops and each refused fusion, for the report.
static void recordKernels(ModuleOp module, CompileReport &report) {
  module.walk([&](Operation *op) {
    if (auto refused = op->getAttrOfType<StringAttr>(
            FlowDialect::getFusionRefusedAttrName()))
      report.fusionRefusals.push_back({op->getName().getStringRef().str(),
                                       locationText(op->getLoc()),
                                       refused.getValue().str()});
  });
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(FlowDialect::getKernelAttrName()))
      continue;
    CompileReport::Kernel kernel;
    kernel.name = func.getSymName().str();
    if (auto rows = func->getAttrOfType<IntegerAttr>(
            FlowDialect::getWorkgroupExtentAttrName()))
      kernel.rows = rows.getInt();
    func.walk([&](Operation *op) {
      if (isa<FlowDialect>(op->getDialect()) && !isa<ConstantOp>(op)) {
        kernel.ops.push_back(op->getName().getStringRef().str());
        kernel.locations.push_back(locationText(op->getLoc()));
      }
    });
    report.kernels.push_back(std::move(kernel));
  }
}

/// Every value of the mesh functions with its SBP, for the report.
/// The device programs flow-partition wrote, and who runs each.
static void recordDevicePrograms(ModuleOp module, CompileReport &report) {
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    auto ranks =
        func->getAttrOfType<DenseI64ArrayAttr>(FlowDialect::getRanksAttrName());
    if (!ranks)
      continue;
    auto of =
        func->getAttrOfType<StringAttr>(FlowDialect::getPartitionOfAttrName());
    report.devicePrograms.push_back({func.getSymName().str(),
                                     of ? of.str() : func.getSymName().str(),
                                     ranks.asArrayRef().vec()});
  }
}

static void recordPlacements(ModuleOp module, CompileReport &report) {
  auto text = [](Attribute a) {
    std::string s;
    llvm::raw_string_ostream os(s);
    a.print(os);
    return s;
  };
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(FlowDialect::getMeshAttrName()) || func.isExternal())
      continue;
    MeshOp mesh = lookupMesh(func, func->getAttrOfType<FlatSymbolRefAttr>(
                                       FlowDialect::getMeshAttrName()));
    if (!mesh)
      continue;
    if (auto plan = func->getAttrOfType<DictionaryAttr>(
            FlowDialect::getModeledPlanAttrName())) {
      auto figuresOf = [](DictionaryAttr dict) {
        CompileReport::PlanFigures figures;
        for (NamedAttribute entry : dict) {
          StringRef name = entry.getName().getValue();
          if (auto bytes = dyn_cast<IntegerAttr>(entry.getValue());
              bytes && name == "memory_bytes")
            figures.memoryBytes = bytes.getValue().getSExtValue();
          auto number = dyn_cast<FloatAttr>(entry.getValue());
          if (!number || !name.consume_back("_seconds"))
            continue;
          if (name == "compute")
            figures.computeSeconds = number.getValueAsDouble();
          else
            figures.collectiveSeconds.push_back(
                {name.str(), number.getValueAsDouble()});
        }
        return figures;
      };
      CompileReport::ModeledPlan modeled;
      modeled.function = func.getSymName().str();
      if (auto search = plan.getAs<StringAttr>("search"))
        modeled.search = search.str();
      if (auto limit = plan.getAs<IntegerAttr>("memory_limit_bytes"))
        modeled.memoryLimitBytes = limit.getValue().getSExtValue();
      modeled.figures = figuresOf(plan);
      for (NamedAttribute entry : plan)
        if (auto reference = dyn_cast<DictionaryAttr>(entry.getValue()))
          modeled.references.push_back(
              {entry.getName().str(), figuresOf(reference)});
      report.modeledPlans.push_back(std::move(modeled));
    }
    for (BlockArgument arg : func.getArguments()) {
      auto sbp = func.getArgAttrOfType<SbpAttr>(arg.getArgNumber(),
                                                FlowDialect::getSbpAttrName());
      if (!sbp)
        sbp = SbpAttr::get(func.getContext(), broadcastSbp(mesh.getRank()));
      report.placements.push_back(
          {func.getSymName().str(),
           "argument " + std::to_string(arg.getArgNumber()), text(sbp)});
    }
    func.walk([&](Operation *op) {
      auto sbps = op->getAttrOfType<ArrayAttr>(FlowDialect::getSbpAttrName());
      if (!sbps)
        return;
      for (auto [i, sbp] : llvm::enumerate(sbps)) {
        std::string where;
        llvm::raw_string_ostream os(where);
        os << op->getName() << " result " << i << " at " << op->getLoc();
        report.placements.push_back(
            {func.getSymName().str(), where, text(sbp)});
      }
    });
  }
}

namespace {
/// Times a phase into the report.
struct PhaseTimer {
  CompileReport &report;
  std::string name;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  ~PhaseTimer() {
    report.phaseSeconds.push_back(
        {name,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count()});
  }
};
} // namespace

/// Runs the pipeline `build` adds on `module`, timed under `name`.
static LogicalResult
runPipeline(ModuleOp module, StringRef name, TimingScope *timing,
            llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module->getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  std::optional<TimingScope> scope;
  if (timing) {
    scope.emplace(timing->nest(name.str()));
    pm.enableTiming(*scope);
  }
  build(pm);
  return pm.run(module);
}

/// "flow.exp at model.py:12:0, flow.add at model.py:13:0", at most the
/// first eight ops.
static std::string describeKernel(const CompileReport::Kernel &k) {
  constexpr size_t kShown = 8;
  std::string s;
  for (size_t i = 0; i < k.ops.size() && i < kShown; ++i) {
    if (i)
      s += ", ";
    s += k.ops[i];
    if (i < k.locations.size() && !k.locations[i].empty())
      s += " at " + k.locations[i];
  }
  if (k.ops.size() > kShown)
    s += " and " + std::to_string(k.ops.size() - kShown) + " more";
  return s;
}

FailureOr<CompileResult> mlir::flow::compile(ModuleOp module,
                                             const CompileOptions &options,
                                             TimingScope *timing) {
  CompileResult result;
  CompileReport &report = result.report;
  // A caller that built `options` without setCompileOption gets the same
  // checks of what the options say together.
  if (std::optional<std::string> why =
          verifyCompileOptions(options, /*flagStyle=*/true))
    return module.emitError(*why);
  const Target *target = lookupTarget(options.target);
  TargetOptions targetOptions{options.cpu, options.cuda};
  if (failed(target->verifyOptions(module, targetOptions)))
    return failure();
  auto stop = [&](ModuleOp m) -> FailureOr<CompileResult> {
    result.module = OwningOpRef<ModuleOp>(m);
    return std::move(result);
  };
  std::string why;
  std::optional<MeshSpec> meshSpec = loadMeshSpec(options.meshSpec, why);
  if (!meshSpec)
    return module.emitError("mesh description: ") << why;
  if (!options.mesh.empty() &&
      (failed(applyMesh(module, options.mesh)) || failed(verify(module))))
    return failure();
  // Both plan the functions that run on a mesh: without one they would do
  // nothing, and say nothing.
  if ((options.autoParallel || options.memoryLimit > 0) &&
      llvm::none_of(module.getOps<func::FuncOp>(), [](func::FuncOp func) {
        return !func.isExternal() &&
               func->hasAttr(FlowDialect::getMeshAttrName());
      }))
    return module.emitError(options.autoParallel ? "auto-parallel"
                                                 : "a memory limit")
           << " plans the functions that run on a mesh, and none does: give "
              "a mesh shape (flow-compile --mesh=4, mesh= in Python) or put "
              "a function on a flow.mesh";
  // Every size symbol a function's shapes use has bounds.
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (failed(verifySizeSymbols(func)))
      return failure();
  if (options.compileTo == "input")
    return stop(module.clone());
  // Symbolic shapes compile for one CPU device, at their upper bounds with
  // rows counted at run time (flow-bound-symbolic-shapes refuses by name
  // what it cannot compile); the other cases stop here, with that said.
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    std::set<std::string> symbols;
    walkFunctionTypes(func, [&](Type type, Operation *) {
      for (const std::string &name : symbolsOf(type))
        symbols.insert(name);
      return WalkResult::advance();
    });
    if (symbols.empty())
      continue;
    std::string where;
    if (!options.mesh.empty() || func->hasAttr(FlowDialect::getMeshAttrName()))
      where = "on a mesh";
    else if (target->getName() != "cpu")
      where = "for the " + target->getName().str() + " target";
    if (!where.empty())
      return func.emitError()
             << "function @" << func.getName() << " has dynamic dimensions ("
             << llvm::join(symbols, ", ") << "): compiling them " << where
             << " is not supported yet; compile it for one CPU device, or "
                "for static shapes";
  }

  // flow: the host schedule and its kernels, still in the flow dialect.
  {
    PhaseTimer t{report, "flow"};
    if (failed(runPipeline(module, "flow-place-pipeline", timing,
                           [&](OpPassManager &pm) {
                             buildFlowPlacePipeline(pm, {options.meshSpec,
                                                         options.autoParallel,
                                                         options.memoryLimit});
                           })))
      return failure();
    recordPlacements(module, report);
    if (options.sbpPlanGraph) {
      llvm::raw_string_ostream svg(result.sbpPlanSvg);
      writeSbpPlanGraph(svg, module);
    }
    GraphPipelineOptions graph{
        options.fusion, options.libraryMatmul, options.maxColumnsBytes,
        options.precision == "bf16",
        // A library without bf16 (CUDA's cuDNN
        // path) leaves bf16 convolutions to GEMMs.
        options.libraryConv && target->hasConvolutionLibrary() &&
            (options.precision == "f32" || target->usesBlockedConvLayouts()),
        target->hasNarrowGemmLibrary(),
        target->convolutionLibraryNeedsSymmetricPadding(),
        options.siblingMatmuls, target->hasNarrowConvolutionLibrary(),
        options.fusedAttention && options.libraryMatmul &&
            target->hasAttentionLibrary()};
    if (failed(runPipeline(
            module, "flow-graph-pipeline", timing,
            [&](OpPassManager &pm) { buildFlowGraphPipeline(pm, graph); })))
      return failure();
    recordKernels(module, report);
    recordDevicePrograms(module, report);
    if (!report.devicePrograms.empty())
      report.meshSpec = meshSpec->name;
  }
  if (options.compileTo == "flow")
    return stop(module.clone());

  // host: the schedules on buffers, memory-planned.
  {
    PhaseTimer t{report, "host"};
    HostPipelineOptions host;
    host.inPlace = options.inPlace;
    host.gemmEpilogues = options.gemmEpilogues;
    host.convEpilogues = options.fusion;
    host.bf16Convs = options.precision == "bf16";
    host.blockedConvLayouts = target->usesBlockedConvLayouts();
    host.libraryGemmEpilogues =
        options.fusion && target->hasGemmLibraryEpilogues();
    host.allowTf32 = options.cuda.allowTf32;
    host.overlapCollectives = options.overlapCollectives;
    if (failed(runPipeline(
            module, "flow-host-pipeline", timing,
            [&](OpPassManager &pm) { buildHostPipeline(pm, host); })))
      return failure();
  }
  if (options.compileTo == "host")
    return stop(module.clone());

  // Split: the kernels go to a module of their own.
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (func->hasAttr(FlowDialect::getKernelAttrName()))
      func->moveBefore(kernels->getBody(), kernels->getBody()->end());
  report.numKernels = llvm::range_size(kernels->getOps<func::FuncOp>());
  // Kernels flow-dedup-kernels merged into another: their calls run it.
  llvm::StringMap<std::string> runAs;
  for (func::FuncOp func : kernels->getOps<func::FuncOp>())
    if (auto merged = func->getAttrOfType<ArrayAttr>(
            FlowDialect::getMergedKernelsAttrName()))
      for (auto name : merged.getAsRange<StringAttr>())
        runAs[name.getValue()] = func.getSymName().str();
  // Kernels the host phase fused into library calls
  // (flow-fuse-conv-epilogues) are not kernels any more.
  llvm::erase_if(report.kernels, [&](const CompileReport::Kernel &k) {
    return !kernels->lookupSymbol(k.name) && !runAs.count(k.name);
  });

  std::vector<KernelPhase> steps = {{"linalg", buildKernelLinalgPipeline}};
  for (KernelPhase &phase : target->getKernelPhases(targetOptions))
    steps.push_back(std::move(phase));
  llvm::StringMap<KernelInfo> infos;
  for (const KernelPhase &step : steps) {
    PhaseTimer t{report, step.name};
    if (failed(runPipeline(*kernels, step.name, timing, step.build)))
      return failure();
    if (options.compileTo == step.name)
      return stop(kernels.release());
    if (step.name != target->getAbiPhase())
      continue;
    infos = target->getKernelInfos(*kernels);
    for (const CompileReport::Kernel &k : report.kernels)
      if (auto it = infos.find(k.name); it != infos.end())
        it->second.description = describeKernel(k);
    for (CompileReport::Kernel &k : report.kernels) {
      auto alias = runAs.find(k.name);
      StringRef name =
          alias == runAs.end() ? StringRef(k.name) : StringRef(alias->second);
      if (auto it = infos.find(name); it != infos.end())
        for (int64_t size : it->second.bindingSizes)
          k.bytes += size;
    }
  }

  // fbin: the kernel libraries and the executable.
  std::optional<TimingScope> fbinTiming;
  if (timing)
    fbinTiming.emplace(timing->nest("fbin: code generation, link, write"));
  bool textOnly = options.compileTo == target->getTextPhase();
  {
    PhaseTimer t{report, textOnly ? target->getTextPhase().str() : "fbin"};
    FailureOr<std::vector<KernelLibraryBlob>> libraries = target->serialize(
        *kernels, targetOptions, textOnly ? &result.text : nullptr);
    if (failed(libraries))
      return failure();
    if (!textOnly) {
      for (const KernelLibraryBlob &library : *libraries)
        report.kernelLibraryBytes += library.data.size();
      FailureOr<std::vector<uint8_t>> executable =
          writeExecutable(module, infos, *libraries,
                          target->getExecutableTarget(), report.executable);
      if (failed(executable))
        return failure();
      report.executableBytes = executable->size();
      result.executable = std::move(*executable);
    }
  }
  return std::move(result);
}
