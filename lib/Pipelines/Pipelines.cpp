//===- Pipelines.cpp - Flow's compile phases ------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Pipelines/Pipelines.h"
#include "flow/Target/CUDA.h"
#include "flow/Support/Location.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "mlir/IR/Verifier.h"
#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Codegen/CPU/Passes.h"
#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Codegen/Common/Passes.h"
#include "flow/Fusion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::flow;

std::vector<std::string> mlir::flow::getPhaseNames(StringRef targetName) {
  const Target *target = lookupTarget(targetName);
  if (!target)
    return {};
  std::vector<std::string> names = {"input", "flow", "host", "linalg"};
  for (const KernelPhase &phase : target->getKernelPhases(TargetOptions()))
    names.push_back(phase.name);
  if (!target->getTextPhase().empty())
    names.push_back(target->getTextPhase().str());
  names.push_back("fbin");
  return names;
}

void mlir::flow::registerCompilerDialects(DialectRegistry &registry) {
  registry
      .insert<FlowDialect, func::FuncDialect, arith::ArithDialect,
              math::MathDialect, linalg::LinalgDialect, tensor::TensorDialect,
              bufferization::BufferizationDialect, memref::MemRefDialect,
              scf::SCFDialect, cf::ControlFlowDialect, LLVM::LLVMDialect>();
  registerAllExtensions(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  // What the bufferization and deallocation passes ask of memref, arith,
  // scf and cf ops; without the allocation interface,
  // buffer-results-to-out-params cannot hoist a result's allocation into
  // its out-parameter and every kernel would copy its results once more.
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  // flow-tile-rows fuses a kernel's tensor.pad into its row tiles.
  tensor::registerTilingInterfaceExternalModels(registry);
  registerCpuTargetTranslations(registry);
  registerCudaTargetTranslations(registry);
}

void mlir::flow::registerCompilerPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerAllPasses();
    registerFlowTransformsPasses();
    registerFlowConversionPasses();
    registerFlowFusionPasses();
    registerFlowCodegenCommonPasses();
    registerFlowCodegenCPUPasses();
    registerFlowCodegenCUDAPasses();
    // runPipeline applies these (defaults unless a tool's command line set
    // them); applying unregistered options fails.
    registerPassManagerCLOptions();
  });
}

std::optional<std::vector<int64_t>>
mlir::flow::parseMeshShape(StringRef text, std::string *why) {
  auto fail = [&](const std::string &reason) {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  std::vector<int64_t> shape;
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  int64_t devices = 1;
  for (StringRef part : parts) {
    int64_t n;
    if (part.getAsInteger(10, n) || n < 1)
      return fail("a mesh shape is positive axis sizes joined by 'x', like "
                  "4 or 2x2; got '" +
                  text.str() + "'");
    // Checked per axis, so the product cannot overflow.
    if (n > kMaxMeshDevices || (devices *= n) > kMaxMeshDevices)
      return fail("mesh '" + text.str() + "' has more than " +
                  std::to_string(kMaxMeshDevices) +
                  " devices, the most Flow compiles for");
    shape.push_back(n);
  }
  return shape;
}

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
    auto of = func->getAttrOfType<StringAttr>(
        FlowDialect::getPartitionOfAttrName());
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
    MeshOp mesh = lookupMesh(
        func, func->getAttrOfType<FlatSymbolRefAttr>(
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

//===----------------------------------------------------------------------===//
// The phase pipelines, built here and registered by name (flow-opt runs each
// alone: `flow-opt --flow-graph-pipeline`, ...). Each is spelled as flow-opt
// would spell it inside `builtin.module(...)`.
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::flow::parseByteCount(StringRef text) {
  text = text.trim();
  static const std::pair<StringRef, double> units[] = {
      {"KiB", 1024.0},        {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024}, {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"KB", 1e3},            {"MB", 1e6},
      {"GB", 1e9},            {"TB", 1e12},
      {"B", 1.0}};
  double scale = 1;
  for (auto [suffix, factor] : units)
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.trim().getAsDouble(value) || !(value >= 0) ||
      value * scale > 9.0e18)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

/// The SBP planner on every function: with `autoParallel` the exact search
/// over ops and unpinned arguments, else greedy+refine over ops.
static void addSbpPlanner(OpPassManager &pm, const PlaceOptions &options) {
  // Built, not parsed: a mesh description's path may hold any character.
  PropagateSbpPassOptions propagate;
  propagate.meshSpec = options.meshSpec;
  propagate.search = options.autoParallel ? "exact" : "refine";
  propagate.freeArguments = options.autoParallel;
  propagate.memoryLimit = options.memoryLimit;
  pm.addNestedPass<func::FuncOp>(createPropagateSbpPass(propagate));
}

void mlir::flow::buildFlowPlacePipeline(OpPassManager &pm,
                                        const PlaceOptions &options) {
  addFlowPipeline(pm, std::string("inline,flow-autodiff,flow-apply-optimizer") +
                          (options.autoParallel ? "{free-layouts=1}" : "") +
                          ",canonicalize,func.func(flow-check-index-inputs)");
  addSbpPlanner(pm, options);
}

void mlir::flow::buildFlowGraphPipeline(OpPassManager &pm,
                                        const GraphPipelineOptions &options) {
  std::string text =
      std::string("flow-partition,func.func(flow-strip-annotations") +
      (options.libraryMatmul &&
               (!options.libraryConv || options.symmetricConvLibrary)
           ? ",flow-conv-to-gemm{max-columns-bytes=" +
                 std::to_string(options.maxColumnsBytes) + " only-asymmetric=" +
                 (options.libraryConv ? "1" : "0") + " narrow=" +
                 (options.narrowLibraryMatmul ? "1" : "0") + "}"
           : "") +
      (options.bf16Matmuls ? ",flow-matmuls-to-bf16" : "") +
      "),func.func(flow-form-dispatch-regions{fusion=" +
      (options.fusion ? "1" : "0") +
      " library-matmul=" + (options.libraryMatmul ? "1" : "0") +
      " narrow-library-matmul=" + (options.narrowLibraryMatmul ? "1" : "0") +
      " library-conv=" + (options.libraryConv ? "1" : "0") +
      "}),flow-outline-kernels,symbol-dce";
  addFlowPipeline(pm, text);
}

void mlir::flow::buildHostPipeline(OpPassManager &pm,
                                   const HostPipelineOptions &options) {
  addFlowPipeline(pm, std::string("flow-dedup-kernels,flow-build-host-schedule") +
                      "{bf16-convs=" + (options.bf16Convs ? "1" : "0") +
                      " allow-tf32=" + (options.allowTf32 ? "1" : "0") + "}," +
                      (options.libraryGemmEpilogues
                           ? "flow-library-gemm-epilogues,"
                           : "") +
                      (options.gemmEpilogues ? "flow-fuse-gemm-epilogues," : "") +
                      (options.convEpilogues ? "flow-fuse-conv-epilogues," : "") +
                      (options.blockedConvLayouts
                           ? "flow-library-pools,flow-choose-conv-layouts,"
                           : "") +
                      "flow-tie-state," +
                      (options.overlapCollectives ? "flow-overlap-collectives,"
                                                  : "") +
                      "flow-plan-memory{in-place=" +
                      (options.inPlace ? "1" : "0") + "}");
}

void mlir::flow::buildKernelLinalgPipeline(OpPassManager &pm) {
  addFlowPipeline(pm, "flow-convert-to-linalg,flow-byte-booleans,linalg-generalize-named-ops,"
                  "flow-fuse-elementwise,canonicalize,cse,"
                  "flow-reassociate-reductions,flow-tile-rows,canonicalize,cse");
}

namespace {
struct GraphPipelineCLOptions
    : public PassPipelineOptions<GraphPipelineCLOptions> {
  Option<bool> fusion{*this, "fusion",
                      llvm::cl::desc("Fuse ops into kernels"),
                      llvm::cl::init(true)};
  Option<bool> libraryMatmul{
      *this, "library-matmul",
      llvm::cl::desc("Leave f32 matmuls (and convolutions, as im2col and a "
                     "GEMM) to the library"),
      llvm::cl::init(true)};
  Option<bool> libraryConv{
      *this, "library-conv",
      llvm::cl::desc("Leave f32 convolutions to the library (as library "
                     "convolutions, not im2col and a GEMM)"),
      llvm::cl::init(false)};
  Option<int64_t> maxColumnsBytes{
      *this, "max-columns-bytes",
      llvm::cl::desc("Largest im2col buffer of a convolution; larger ones "
                     "run in blocks of output rows (0: no limit)"),
      llvm::cl::init(kDefaultMaxColumnsBytes)};
  Option<bool> bf16{
      *this, "bf16",
      llvm::cl::desc("Run matrix products in bf16, summed in f32"),
      llvm::cl::init(false)};
  Option<bool> symmetricConvLibrary{
      *this, "symmetric-conv-library",
      llvm::cl::desc("With library-conv, the library takes symmetric "
                     "padding only: the other convolutions become im2col "
                     "and a GEMM"),
      llvm::cl::init(false)};
  Option<bool> narrowLibraryMatmul{
      *this, "narrow-library-matmul",
      llvm::cl::desc("f16 and bf16 matmuls into their own type are library "
                     "GEMMs too"),
      llvm::cl::init(false)};
};
struct KernelCpuLLVMPipelineCLOptions
    : public PassPipelineOptions<KernelCpuLLVMPipelineCLOptions> {
  Option<bool> expandBf16{
      *this, "expand-bf16",
      llvm::cl::desc("Compute bf16 in f32 and round to bf16 with integer "
                     "operations (CPUs without bf16 conversions)"),
      llvm::cl::init(false)};
};
struct PlacePipelineCLOptions
    : public PassPipelineOptions<PlacePipelineCLOptions> {
  Option<std::string> meshSpec{
      *this, "mesh-spec",
      llvm::cl::desc("The mesh description the SBP planner times its "
                     "choices on: a preset or a JSON file"),
      llvm::cl::init("cpu-mpi")};
  Option<bool> autoParallel{
      *this, "auto-parallel",
      llvm::cl::desc("Also place arguments without a flow.sbp, by the "
                     "exact search"),
      llvm::cl::init(false)};
  Option<int64_t> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("Bytes per device a plan may use (0: the device's "
                     "memory in the mesh description)"),
      llvm::cl::init(0)};
};
struct AutoParallelCLOptions
    : public PassPipelineOptions<AutoParallelCLOptions> {
  Option<std::string> meshSpec{
      *this, "mesh-spec",
      llvm::cl::desc("The mesh description the SBP planner times its "
                     "choices on: a preset or a JSON file"),
      llvm::cl::init("cpu-mpi")};
  Option<int64_t> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("Bytes per device a plan may use (0: the device's "
                     "memory in the mesh description)"),
      llvm::cl::init(0)};
};
struct HostPipelineCLOptions
    : public PassPipelineOptions<HostPipelineCLOptions> {
  Option<bool> inPlace{
      *this, "in-place",
      llvm::cl::desc("Let element-wise kernels write over a dying operand"),
      llvm::cl::init(false)};
  Option<bool> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("Run element-wise kernels as epilogues of the GEMM "
                     "before them"),
      llvm::cl::init(false)};
  Option<bool> convEpilogues{
      *this, "conv-epilogues",
      llvm::cl::desc("Fuse element-wise kernels into the library "
                     "convolutions before them"),
      llvm::cl::init(true)};
  Option<bool> bf16Convs{
      *this, "bf16-convs",
      llvm::cl::desc("Run library convolutions in bf16, summed in f32"),
      llvm::cl::init(false)};
  Option<bool> blockedConvLayouts{
      *this, "blocked-conv-layouts",
      llvm::cl::desc("Keep library convolutions' activations in the CPU "
                     "library's blocked layouts, pools next to them"),
      llvm::cl::init(true)};
  Option<bool> libraryGemmEpilogues{
      *this, "library-gemm-epilogues",
      llvm::cl::desc("Fold bias and activation kernels into the GEMMs "
                     "before them"),
      llvm::cl::init(false)};
  Option<bool> allowTf32{
      *this, "allow-tf32",
      llvm::cl::desc("Let f32 library GEMMs multiply in TF32"),
      llvm::cl::init(false)};
  Option<bool> overlapCollectives{
      *this, "overlap-collectives",
      llvm::cl::desc("Start collectives early and wait for them where their "
                     "results are needed"),
      llvm::cl::init(true)};
};
struct KernelCudaCLOptions : public PassPipelineOptions<KernelCudaCLOptions> {
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("Compute capability (sm_90)"),
                           llvm::cl::init("sm_90")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block"),
                            llvm::cl::init(256)};
  CudaTargetOptions get() const {
    CudaTargetOptions o;
    o.arch = arch;
    o.blockSize = blockSize;
    return o;
  }
};
} // namespace

void mlir::flow::registerCompilerPipelines() {
  static std::once_flag once;
  std::call_once(once, [] {
    PassPipelineRegistration<PlacePipelineCLOptions>(
        "flow-place-pipeline",
        "The flow phase, first half: inline, canonicalize, choose every "
        "value's SBP on mesh functions",
        [](OpPassManager &pm, const PlacePipelineCLOptions &o) {
          buildFlowPlacePipeline(pm, {o.meshSpec, o.autoParallel,
                                      o.memoryLimit});
        });
    PassPipelineRegistration<AutoParallelCLOptions>(
        "flow-auto-parallel",
        "The auto-parallel planner alone: on mesh functions, every op's and "
        "every unpinned argument's SBP by the exact search under the "
        "memory limit (flow-propagate-sbp{search=exact free-arguments=1}); "
        "a training step's optimizer leaves its state free with "
        "flow-apply-optimizer{free-layouts=1} (flow-place-pipeline="
        "auto-parallel=1 runs both)",
        [](OpPassManager &pm, const AutoParallelCLOptions &o) {
          addSbpPlanner(pm, {o.meshSpec, /*autoParallel=*/true,
                             o.memoryLimit});
        });
    PassPipelineRegistration<GraphPipelineCLOptions>(
        "flow-graph-pipeline",
        "The flow phase, second half: partition mesh functions, drop "
        "annotations, form dispatch regions, outline them as kernels",
        [](OpPassManager &pm, const GraphPipelineCLOptions &o) {
          buildFlowGraphPipeline(
              pm, {o.fusion, o.libraryMatmul, o.maxColumnsBytes, o.bf16,
                   o.libraryConv, o.narrowLibraryMatmul,
                   o.symmetricConvLibrary});
        });
    PassPipelineRegistration<HostPipelineCLOptions>(
        "flow-host-pipeline",
        "The host phase: each public function as a host schedule on "
        "buffers (element-wise kernels as GEMM epilogues with "
        "gemm-epilogues), its transient buffers placed in one arena",
        [](OpPassManager &pm, const HostPipelineCLOptions &o) {
          buildHostPipeline(pm, {o.inPlace, o.gemmEpilogues,
                                 o.convEpilogues, o.bf16Convs,
                                 o.blockedConvLayouts,
                                 o.libraryGemmEpilogues, o.allowTf32,
                                 o.overlapCollectives});
        });
    PassPipelineRegistration<>(
        "flow-kernel-linalg-pipeline",
        "The linalg phase: a kernels module lowered to linalg on tensors, "
        "each fused kernel one loop nest where its ops allow",
        buildKernelLinalgPipeline);
    PassPipelineRegistration<>(
        "flow-kernel-bufferize-pipeline",
        "The bufferized phase: kernels on memrefs, as loops split over "
        "workgroups, with their ABI recorded",
        buildKernelBufferizePipeline);
    PassPipelineRegistration<KernelCpuLLVMPipelineCLOptions>(
        "flow-kernel-cpu-llvm-pipeline",
        "The llvm phase for the CPU: kernels in the LLVM dialect with their "
        "entry points",
        [](OpPassManager &pm, const KernelCpuLLVMPipelineCLOptions &o) {
          buildKernelCpuLLVMPipeline(pm, {o.expandBf16});
        });
    PassPipelineRegistration<>(
        "flow-kernel-cuda-bufferize-pipeline",
        "The bufferized phase for CUDA: kernels on memrefs, still linalg, "
        "with their ABI recorded",
        buildKernelCudaBufferizePipeline);
    PassPipelineRegistration<KernelCudaCLOptions>(
        "flow-kernel-gpu-pipeline",
        "The gpu phase for CUDA: each kernel a gpu.func mapped onto thread "
        "blocks",
        [](OpPassManager &pm, const KernelCudaCLOptions &o) {
          buildKernelGpuPipeline(pm, o.get());
        });
    PassPipelineRegistration<KernelCudaCLOptions>(
        "flow-kernel-nvvm-pipeline",
        "The nvvm phase for CUDA: kernels in the LLVM and NVVM dialects for "
        "one compute capability",
        [](OpPassManager &pm, const KernelCudaCLOptions &o) {
          buildKernelNvvmPipeline(pm, o.get());
        });
  });
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
  const Target *target = lookupTarget(options.target);
  if (!target)
    return module.emitError("unknown target '")
           << options.target << "' (targets: "
           << llvm::join(getTargetNames(), ", ") << ")";
  std::vector<std::string> phases = getPhaseNames(options.target);
  if (!llvm::is_contained(phases, options.compileTo))
    return module.emitError("target '")
           << options.target << "' has no phase '" << options.compileTo
           << "' (phases: " << llvm::join(phases, ", ") << ")";
  TargetOptions targetOptions{options.cpu, options.cuda};
  if (failed(target->verifyOptions(module, targetOptions)))
    return failure();
  if (options.precision != "f32" && options.precision != "bf16")
    return module.emitError("precision '")
           << options.precision << "' is not supported (f32, bf16)";
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
  if (options.compileTo == "input")
    return stop(module.clone());

  // flow: the host schedule and its kernels, still in the flow dialect.
  {
    PhaseTimer t{report, "flow"};
    if (failed(runPipeline(module, "flow-place-pipeline", timing,
                           [&](OpPassManager &pm) {
                             buildFlowPlacePipeline(
                                 pm, {options.meshSpec, options.autoParallel,
                                      options.memoryLimit});
                           })))
      return failure();
    recordPlacements(module, report);
    if (options.sbpPlanGraph) {
      llvm::raw_string_ostream svg(result.sbpPlanSvg);
      writeSbpPlanGraph(svg, module);
    }
    GraphPipelineOptions graph{options.fusion, options.libraryMatmul,
                               options.maxColumnsBytes,
                               options.precision == "bf16",
                               // A library without bf16 (CUDA's cuDNN
                               // path) leaves bf16 convolutions to GEMMs.
                               options.libraryConv &&
                                   target->hasConvolutionLibrary() &&
                                   (options.precision == "f32" ||
                                    target->usesBlockedConvLayouts()),
                               target->hasNarrowGemmLibrary(),
                               target->convolutionLibraryNeedsSymmetricPadding()};
    if (failed(runPipeline(module, "flow-graph-pipeline", timing,
                           [&](OpPassManager &pm) {
                             buildFlowGraphPipeline(pm, graph);
                           })))
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
    if (failed(runPipeline(module, "flow-host-pipeline", timing,
                           [&](OpPassManager &pm) {
                             buildHostPipeline(pm, host);
                           })))
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
      StringRef name = alias == runAs.end() ? StringRef(k.name)
                                            : StringRef(alias->second);
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

void CompileReport::writeJson(raw_ostream &os) const {
  llvm::json::Object phases;
  double total = 0;
  for (const auto &[name, seconds] : phaseSeconds) {
    phases[name] = seconds;
    total += seconds;
  }
  llvm::json::Object root{
      {"phase_seconds", std::move(phases)},
      {"total_seconds", total},
      {"kernels", numKernels},
      {"dispatches", executable.numDispatches},
      {"gemms", executable.numGemms},
      {"convs", executable.numConvs},
      {"pools", executable.numPools},
      {"gemm_epilogues", executable.numGemmEpilogues},
      {"copies", executable.numCopies},
      {"arena_bytes", executable.arenaBytes},
      {"transient_bytes", executable.transientBytes},
      {"constant_bytes", executable.constantBytes},
      {"parameter_bytes", executable.parameterBytes},
      {"collectives", executable.numCollectives},
      {"async_collectives", executable.numAsyncCollectives},
      {"placements",
       [&] {
         llvm::json::Array list;
         for (const auto &[function, value, sbp] : placements)
           list.push_back(llvm::json::Object{
               {"function", function}, {"value", value}, {"sbp", sbp}});
         return list;
       }()},
      {"mesh_spec", meshSpec},
      {"modeled_plans",
       [&] {
         llvm::json::Array list;
         auto figures = [](llvm::json::Object &o, const PlanFigures &f) {
           llvm::json::Object collectives;
           double total = f.computeSeconds;
           for (const auto &[kind, seconds] : f.collectiveSeconds) {
             collectives[kind] = seconds;
             total += seconds;
           }
           o["compute_seconds"] = f.computeSeconds;
           o["collective_seconds"] = std::move(collectives);
           o["total_seconds"] = total;
           o["memory_bytes"] = f.memoryBytes;
         };
         for (const ModeledPlan &p : modeledPlans) {
           llvm::json::Object plan{{"function", p.function},
                                   {"search", p.search}};
           figures(plan, p.figures);
           if (p.memoryLimitBytes > 0)
             plan["memory_limit_bytes"] = p.memoryLimitBytes;
           for (const auto &[name, f] : p.references) {
             llvm::json::Object reference;
             figures(reference, f);
             plan[name] = std::move(reference);
           }
           list.push_back(std::move(plan));
         }
         return list;
       }()},
      {"device_programs",
       [&] {
         llvm::json::Array list;
         for (const DeviceProgram &p : devicePrograms) {
           llvm::json::Array ranks;
           for (int64_t r : p.ranks)
             ranks.push_back(r);
           list.push_back(llvm::json::Object{{"function", p.function},
                                             {"partition_of", p.partitionOf},
                                             {"ranks", std::move(ranks)}});
         }
         return list;
       }()},
      {"collective_ops",
       [&] {
         llvm::json::Array list;
         for (const ExecutableStats::Collective &c : executable.collectives) {
           llvm::json::Array axes;
           for (int64_t a : c.meshAxes)
             axes.push_back(a);
           list.push_back(llvm::json::Object{{"function", c.function},
                                             {"op", c.op},
                                             {"mesh_axes", std::move(axes)},
                                             {"bytes_per_device", c.bytes},
                                             {"async", c.async}});
         }
         return list;
       }()},
      {"kernel_ops",
       [&] {
         llvm::json::Array list;
         for (const Kernel &k : kernels) {
           llvm::json::Array ops;
           for (const std::string &op : k.ops)
             ops.push_back(op);
           list.push_back(llvm::json::Object{{"kernel", k.name},
                                             {"rows", k.rows},
                                             {"bytes", k.bytes},
                                             {"ops", std::move(ops)}});
         }
         return list;
       }()},
      {"kernel_bytes",
       [&] {
         int64_t total = 0;
         for (const Kernel &k : kernels)
           total += k.bytes;
         return total;
       }()},
      {"fusion_refusals",
       [&] {
         llvm::json::Array list;
         for (const FusionRefusal &r : fusionRefusals)
           list.push_back(llvm::json::Object{{"op", r.op},
                                             {"location", r.location},
                                             {"reason", r.reason}});
         return list;
       }()},
      {"arena_lower_bound", executable.arenaLowerBound},
      {"in_place_buffers", executable.numInPlace},
      {"memory_plans",
       [&] {
         llvm::json::Array list;
         for (const ExecutableStats::FunctionPlan &p : executable.plans) {
           llvm::json::Array buffers;
           for (const PlannedBuffer &b : p.buffers)
             buffers.push_back(llvm::json::Object{
                 {"value", b.name},
                 {"offset", b.offset},
                 {"size", b.size},
                 {"first", b.begin},
                 {"last", b.end},
                 {"in_place", b.reuses >= 0}});
           list.push_back(llvm::json::Object{
               {"function", p.function},
               {"arena_bytes", p.result.arenaBytes},
               {"lower_bound", p.result.lowerBound},
               {"unplanned_bytes", p.result.unplannedBytes},
               {"heuristic", p.result.heuristic},
               {"buffers", std::move(buffers)}});
         }
         return list;
       }()},
      {"kernel_library_bytes", kernelLibraryBytes},
      {"executable_bytes", executableBytes},
  };
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
