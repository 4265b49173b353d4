//===- Pipelines.h - Flow's compile phases ----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
// The phase pipeline `flow-compile` (and the Python extension) runs:
//
//   input -> flow -> host -> linalg -> (the target's kernel phases) -> fbin
//
//   flow        canonicalized, single-device (SPMD), fused and outlined:
//               public functions call kernels (flow.kernel functions)
//   host        the public functions as host schedules on buffers
//               (host.*), memory-planned into one arena each
//   linalg      kernels lowered to linalg/tensor/arith/math on tensors
//   fbin        the executable
//
// The kernel phases come from the target (flow/Target/Target.h):
//
//   cpu   bufferized  kernels on memrefs, as workgroup-distributed scf loops
//         llvm        kernels in the LLVM dialect with their entry points
//   cuda  bufferized  kernels on memrefs, still linalg
//         gpu         each kernel a gpu.func mapped onto thread blocks
//         nvvm        the LLVM and NVVM dialects
//         ptx         the PTX text (printed as text)
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_PIPELINES_PIPELINES_H
#define FLOW_PIPELINES_PIPELINES_H

#include "flow/Pipelines/Options.h"
#include "flow/Target/CPU.h"
#include "flow/Target/Executable.h"
#include "flow/Target/Target.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mlir {
class DialectRegistry;
class OpPassManager;
class TimingScope;
namespace flow {

/// Phase timings and figures about the result (`--report`).
struct CompileReport {
  std::vector<std::pair<std::string, double>> phaseSeconds;
  int64_t numKernels = 0;
  ExecutableStats executable;
  int64_t kernelLibraryBytes = 0;
  int64_t executableBytes = 0;
  /// Mesh functions: every value (an argument or an op's result) and the
  /// SBP propagation gave it.
  std::vector<std::tuple<std::string, std::string, std::string>> placements;
  /// Each kernel: its name, rows (workgroup extent) and the flow ops it
  /// runs, in order.
  struct Kernel {
    std::string name;
    int64_t rows = 1;
    std::vector<std::string> ops;
    /// Where each of `ops` comes from (file:line:column, or the location).
    std::vector<std::string> locations;
    /// Bytes of the buffers it reads and writes (set once bufferized).
    int64_t bytes = 0;
  };
  std::vector<Kernel> kernels;
  /// Each op flow-form-dispatch-regions did not fuse into a producer's
  /// kernel: the op, where it is, and why.
  struct FusionRefusal {
    std::string op, location, reason;
  };
  std::vector<FusionRefusal> fusionRefusals;
  /// Each device program of a mesh function: its name, the function it is
  /// a partition of and the devices (ranks) that run it.
  struct DeviceProgram {
    std::string function, partitionOf;
    std::vector<int64_t> ranks;
  };
  std::vector<DeviceProgram> devicePrograms;
  /// The mesh description the planner used (mesh compiles only).
  std::string meshSpec;
  /// Each mesh function's plan as the planner timed it (seconds on one
  /// device, compute and each kind of collective, as if run one after
  /// another).
  struct PlanFigures {
    double computeSeconds = 0;
    std::vector<std::pair<std::string, double>> collectiveSeconds;
    /// Bytes per device (arguments, parameters, activations at their peak).
    int64_t memoryBytes = 0;
  };
  struct ModeledPlan {
    /// The function and the search that chose its plan.
    std::string function, search;
    PlanFigures figures;
    /// The memory limit the search kept to (0: none).
    int64_t memoryLimitBytes = 0;
    /// Plain data parallel and tensor parallel by the same measure
    /// (auto-parallel only).
    std::vector<std::pair<std::string, PlanFigures>> references;
  };
  std::vector<ModeledPlan> modeledPlans;
  /// Writes the report as JSON.
  void writeJson(raw_ostream &os) const;
};

struct CompileResult {
  /// The executable (when compiling to fbin).
  std::vector<uint8_t> executable;
  /// The IR where compilation stopped (when compiling to an earlier phase):
  /// the whole module at flow and host, the kernels afterwards.
  OwningOpRef<ModuleOp> module;
  /// The text of a text phase (the CUDA target's `ptx`).
  std::string text;
  /// With CompileOptions::sbpPlanGraph, the SVG drawing of the SBP plan
  /// (empty when no function runs on a mesh).
  std::string sbpPlanSvg;
  CompileReport report;
};

/// Draws the SBP plan of every mesh function of `module` (after SBP
/// propagation) as SVG: ops in program order filled by their result's
/// SBP, each use an edge marked with the collectives that box it. False
/// (nothing written) when no function runs on a mesh.
bool writeSbpPlanGraph(raw_ostream &os, ModuleOp module);

/// Registers every dialect, interface and translation the pipeline uses.
void registerCompilerDialects(DialectRegistry &registry);

/// Registers every pass the phase pipelines name (idempotent, thread-safe).
void registerCompilerPasses();

/// Registers the phase pipelines by name, for flow-opt (idempotent):
/// flow-place-pipeline,
/// flow-graph-pipeline{fusion library-matmul library-conv max-columns-bytes
/// bf16 narrow-library-matmul symmetric-conv-library sibling-matmuls
/// narrow-library-conv library-attention}, flow-host-pipeline{in-place
/// gemm-epilogues conv-epilogues bf16-convs blocked-conv-layouts
/// library-gemm-epilogues allow-tf32 overlap-collectives},
/// flow-kernel-linalg-pipeline, flow-kernel-bufferize-pipeline,
/// flow-kernel-cpu-llvm-pipeline{expand-bf16}. The kernel pipelines run on a
/// module of kernels (what `--compile-to=host` prints after its host schedules,
/// and what each later phase prints).
void registerCompilerPipelines();

struct GraphPipelineOptions {
  bool fusion = true;
  bool libraryMatmul = true;
  int64_t maxColumnsBytes = kDefaultMaxColumnsBytes;
  /// Matrix products in bf16, summed in f32 (flow-matmuls-to-bf16).
  bool bf16Matmuls = false;
  /// f32 convolutions stay flow.conv2d for the host's library convolution
  /// (no flow-conv-to-gemm).
  bool libraryConv = false;
  /// f16 and bf16 matmuls into their own type (or f32) are library GEMMs
  /// too (Target::hasNarrowGemmLibrary).
  bool narrowLibraryMatmul = false;
  /// With libraryConv: the library takes symmetric padding only
  /// (Target::convolutionLibraryNeedsSymmetricPadding), so convolutions
  /// padded otherwise become im2col and a GEMM.
  bool symmetricConvLibrary = false;
  /// Join matrix products of one input by parameter weights into one
  /// (flow-fuse-sibling-matmuls).
  bool siblingMatmuls = false;
  /// With libraryConv: f16 and bf16 convolutions stay flow.conv2d for the
  /// library too (Target::hasNarrowConvolutionLibrary).
  bool narrowLibraryConv = false;
  /// flow.attention stays one op for the host's attention library
  /// (Target::hasAttentionLibrary); false expands it
  /// (flow-decompose-attention).
  bool libraryAttention = true;
};
struct HostPipelineOptions {
  bool inPlace = false;
  /// Run element-wise kernels as epilogues of the GEMM before them
  /// (flow-fuse-gemm-epilogues); off by default: it measured no faster.
  bool gemmEpilogues = false;
  /// Fuse element-wise kernels into the library convolutions before them
  /// (flow-fuse-conv-epilogues; off with --fusion=off).
  bool convEpilogues = true;
  /// Run library convolutions in bf16, summed in f32
  /// (flow-build-host-schedule{bf16-convs}), their blocked buffers in bf16.
  bool bf16Convs = false;
  /// Keep library convolutions' activations in the CPU library's blocked
  /// layouts, pools next to them on the runtime (flow-library-pools,
  /// flow-choose-conv-layouts): the CPU target's choice.
  bool blockedConvLayouts = true;
  /// Fold bias and activation kernels into the GEMMs before them
  /// (flow-library-gemm-epilogues): targets whose GEMM library applies
  /// them (Target::hasGemmLibraryEpilogues).
  bool libraryGemmEpilogues = false;
  /// Mark f32 library GEMMs `allow_tf32` (--allow-tf32).
  bool allowTf32 = false;
  /// flow-overlap-collectives (--overlap-collectives).
  bool overlapCollectives = true;
};
/// How the flow phase places mesh functions (flow-propagate-sbp's
/// mesh-spec, search, free-arguments and memory-limit).
struct PlaceOptions {
  std::string meshSpec = "cpu-mpi";
  bool autoParallel = false;
  int64_t memoryLimit = 0;
};
/// The phases' pipelines, as compile() runs them.
void buildFlowPlacePipeline(OpPassManager &pm,
                            const PlaceOptions &options = {});
void buildFlowGraphPipeline(OpPassManager &pm,
                            const GraphPipelineOptions &options);
void buildHostPipeline(OpPassManager &pm, const HostPipelineOptions &options);
void buildKernelLinalgPipeline(OpPassManager &pm);

/// Compiles `module` (which it modifies). Diagnostics go to the context's
/// handler; `timing`, if given, receives per-pass timing.
FailureOr<CompileResult> compile(ModuleOp module, const CompileOptions &options,
                                 TimingScope *timing = nullptr);

} // namespace flow
} // namespace mlir

#endif // FLOW_PIPELINES_PIPELINES_H
