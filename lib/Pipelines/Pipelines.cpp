//===- Pipelines.cpp - Flow's compile phases ------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Pipelines/Pipelines.h"
#include "flow/Codegen/CPU/Passes.h"
#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Codegen/Common/Passes.h"
#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "flow/Fusion/Passes.h"
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
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/JSON.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::flow;

void mlir::flow::registerCompilerDialects(DialectRegistry &registry) {
  registry
      .insert<FlowDialect, HostDialect, func::FuncDialect, arith::ArithDialect,
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
    registerFlowHostTransformsPasses();
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

//===----------------------------------------------------------------------===//
// The phase pipelines, built here and registered by name (flow-opt runs each
// alone: `flow-opt --flow-graph-pipeline`, ...). Option values go into the
// passes' option structs, never into pipeline text.
//===----------------------------------------------------------------------===//

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
  pm.addPass(createInlinerPass());
  pm.addPass(createAutodiffPass());
  ApplyOptimizerPassOptions optimizer;
  optimizer.freeLayouts = options.autoParallel;
  pm.addPass(createApplyOptimizerPass(optimizer));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCheckIndexInputsPass());
  addSbpPlanner(pm, options);
}

void mlir::flow::buildFlowGraphPipeline(OpPassManager &pm,
                                        const GraphPipelineOptions &options) {
  pm.addPass(createPartitionPass());
  OpPassManager &funcs = pm.nest<func::FuncOp>();
  funcs.addPass(createStripAnnotationsPass());
  if (!options.libraryAttention)
    funcs.addPass(createDecomposeAttentionPass());
  if (options.libraryMatmul &&
      (!options.libraryConv || options.symmetricConvLibrary)) {
    ConvToGemmPassOptions convToGemm;
    convToGemm.maxColumnsBytes = options.maxColumnsBytes;
    convToGemm.onlyAsymmetric = options.libraryConv;
    convToGemm.narrow = options.narrowLibraryMatmul;
    convToGemm.narrowLibrary = options.libraryConv && options.narrowLibraryConv;
    funcs.addPass(createConvToGemmPass(convToGemm));
  }
  if (options.bf16Matmuls)
    funcs.addPass(createMatmulsToBf16Pass());
  if (options.siblingMatmuls)
    funcs.addPass(createFuseSiblingMatmulsPass());
  FormDispatchRegionsPassOptions regions;
  regions.fusion = options.fusion;
  regions.libraryMatmul = options.libraryMatmul;
  regions.narrowLibraryMatmul = options.narrowLibraryMatmul;
  regions.libraryConv = options.libraryConv;
  regions.narrowLibraryConv = options.narrowLibraryConv;
  pm.addNestedPass<func::FuncOp>(createFormDispatchRegionsPass(regions));
  pm.addPass(createOutlineKernelsPass());
  pm.addPass(createSymbolDCEPass());
}

void mlir::flow::buildHostPipeline(OpPassManager &pm,
                                   const HostPipelineOptions &options) {
  pm.addPass(createDedupKernelsPass());
  pm.addPass(createBoundSymbolicShapesPass());
  BuildHostSchedulePassOptions schedule;
  schedule.bf16Convs = options.bf16Convs;
  schedule.allowTf32 = options.allowTf32;
  pm.addPass(createBuildHostSchedulePass(schedule));
  if (options.libraryGemmEpilogues)
    pm.addPass(createLibraryGemmEpiloguesPass());
  if (options.gemmEpilogues)
    pm.addPass(createFuseGemmEpiloguesPass());
  if (options.convEpilogues)
    pm.addPass(createFuseConvEpiloguesPass());
  if (options.blockedConvLayouts) {
    pm.addPass(createLibraryPoolsPass());
    pm.addPass(createChooseConvLayoutsPass());
  }
  pm.addPass(createTieStatePass());
  if (options.overlapCollectives)
    pm.addPass(createOverlapCollectivesPass());
  PlanMemoryPassOptions plan;
  plan.inPlace = options.inPlace;
  pm.addPass(createPlanMemoryPass(plan));
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
  Option<bool> narrowLibraryConv{
      *this, "narrow-library-conv",
      llvm::cl::desc("With library-conv, f16 and bf16 convolutions are "
                     "library convolutions too"),
      llvm::cl::init(false)};
  Option<bool> siblingMatmuls{
      *this, "sibling-matmuls",
      llvm::cl::desc("Join matrix products of one input by parameter "
                     "weights into one (flow-fuse-sibling-matmuls)"),
      llvm::cl::init(false)};
  Option<bool> libraryAttention{
      *this, "library-attention",
      llvm::cl::desc("Leave flow.attention to the host's attention library "
                     "(false: flow-decompose-attention expands it)"),
      llvm::cl::init(true)};
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
                   o.libraryConv, o.narrowLibraryMatmul, o.symmetricConvLibrary,
                   o.siblingMatmuls, o.narrowLibraryConv, o.libraryAttention});
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
