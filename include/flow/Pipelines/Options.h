//===- Options.h - Flow's compile options, one table ------------*- C++ -*-===//
//
// Part of the Flow project.
//
// Every compile option is one row of one table (Options.cpp): its
// flow-compile flag, its Python keyword, its type, its help, the values it
// accepts and how it reads and writes CompileOptions. flow-compile makes
// its flags from the table, Python's flow.compile/compile_mlir/compile_ir
// take its keywords, both check a value with setCompileOption, and
// docs/reference/CompileOptions.md is printed from it
// (`flow-compile --print-options-reference`; test/docs checks it fresh).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_PIPELINES_OPTIONS_H
#define FLOW_PIPELINES_OPTIONS_H

#include "flow/Target/CPU.h"
#include "flow/Target/Target.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace flow {

/// About one core's L2 cache: im2col buffers up to this size are written
/// and read back while they are still in it.
constexpr int64_t kDefaultMaxColumnsBytes = int64_t(2) << 20;

struct CompileOptions {
  /// A registered target's name (flow/Target/Target.h): cpu, cuda.
  std::string target = "cpu";
  CpuTargetOptions cpu;
  CudaTargetOptions cuda;
  /// Stop after this phase (getPhaseNames; "fbin": the executable).
  std::string compileTo = "fbin";
  /// f32 matmuls as library GEMMs (else generated kernels).
  bool libraryMatmul = true;
  /// f32 convolutions as library convolution commands, their element-wise
  /// epilogues (residual add, relu) fused in and activations between them
  /// in the library's blocked layout; else im2col and a GEMM
  /// (flow-conv-to-gemm). With precision "bf16" library convolutions run
  /// in bf16 too (flow-build-host-schedule{bf16-convs}). Only on targets
  /// with a convolution library (Target::hasConvolutionLibrary: the CPU).
  bool libraryConv = true;
  /// Largest im2col buffer of a convolution as a library GEMM; larger ones
  /// run in blocks of output rows (flow-conv-to-gemm{max-columns-bytes}).
  int64_t maxColumnsBytes = kDefaultMaxColumnsBytes;
  /// Fuse ops into kernels (flow-form-dispatch-regions); false keeps one op
  /// per kernel.
  bool fusion = true;
  /// Join matrix products of one input by parameter weights into one GEMM
  /// (flow-fuse-sibling-matmuls); off by default (it measured no faster on
  /// the CPU, bench/joined_projections.py).
  bool siblingMatmuls = false;
  /// Run attention as one fused command where the target has an attention
  /// library (Target::hasAttentionLibrary: the CPU); false expands it into
  /// matmul, softmax and matmul (flow-decompose-attention).
  bool fusedAttention = true;
  /// "f32", or "bf16": matrix products (convolutions included) read bf16
  /// operands and sum in f32 (flow-matmuls-to-bf16); the rest stays f32.
  std::string precision = "f32";
  /// Let element-wise kernels write over a dying operand
  /// (flow-plan-memory{in-place}); off by default (it measured slower).
  bool inPlace = false;
  /// Run element-wise kernels tile by tile with the GEMM before them
  /// (flow-fuse-gemm-epilogues); off by default (it measured no faster).
  bool gemmEpilogues = false;
  /// Start collectives early and run them while later commands do
  /// (flow-overlap-collectives).
  bool overlapCollectives = true;
  /// When not empty, public functions without a `flow.mesh` run on a new
  /// mesh of this shape (`--mesh=4`, `--mesh=2x2`).
  std::vector<int64_t> mesh;
  /// The mesh description the SBP planner times its choices on: a preset
  /// or a JSON file (`--mesh-spec`; MeshSpec.h).
  std::string meshSpec = "cpu-mpi";
  /// Auto-parallel (`--auto-parallel`): the planner also places arguments
  /// without a `flow.sbp`, by its exact search.
  bool autoParallel = false;
  /// Bytes per device a plan may use (`--memory-limit`; 0: the device
  /// memory of the mesh description).
  int64_t memoryLimit = 0;
  /// Draw the SBP plan of the mesh functions (`--sbp-plan-graph`) into
  /// CompileResult::sbpPlanSvg.
  bool sbpPlanGraph = false;
};

/// What kind of value an option takes.
enum class OptionType { Bool, Choice, Integer, Bytes, MeshShape, Text };

/// One compile option.
struct CompileOptionInfo {
  /// flow-compile's flag without its dashes: "max-columns-bytes".
  const char *flag;
  /// Python's keyword: "max_columns_bytes".
  const char *keyword;
  OptionType type;
  /// How --help names a value: "name", "bytes".
  const char *valueName;
  const char *help;
  /// The values it accepts, in words ("one of cpu, cuda, cuda-emulated",
  /// "a byte count like 512MiB or 16GiB"), for errors and the docs.
  std::string (*accepts)();
  /// Checks `text` and sets the option; the reason when `text` is not a
  /// value it accepts (the caller names the option).
  std::optional<std::string> (*set)(CompileOptions &, StringRef text);
  /// The option's value in `options` as text (`set` reads it back); of a
  /// default CompileOptions, the default.
  std::string (*get)(const CompileOptions &);
};

/// Every compile option, in the order --help and the docs list them.
ArrayRef<CompileOptionInfo> getCompileOptions();

/// The option with flow-compile flag or Python keyword `name`; null if none.
const CompileOptionInfo *lookupCompileOption(StringRef name);

/// Sets option `name` (a flag or keyword) from `text`. On failure returns
/// one line naming the option as `spelling` (the caller's: "--precision",
/// "precision=") and what it accepts, e.g.
///   --precision: 'fp8' is not one of f32, bf16
std::optional<std::string> setCompileOption(CompileOptions &options,
                                            StringRef name, StringRef text,
                                            StringRef spelling);

/// Checks what no single option can: `compile-to` names a phase of
/// `target`. One line naming the option, as setCompileOption's, or nullopt.
/// `flagStyle` spells options as flags (--compile-to), else as keywords
/// (compile_to=).
std::optional<std::string> verifyCompileOptions(const CompileOptions &options,
                                                bool flagStyle);

/// The option table as Markdown (docs/reference/CompileOptions.md).
void printCompileOptionsReference(raw_ostream &os);

/// Parses a mesh shape: `4`, `2x2`, at most kMaxMeshDevices devices;
/// std::nullopt when malformed or too large, with the reason in \p why.
std::optional<std::vector<int64_t>> parseMeshShape(StringRef text,
                                                   std::string *why = nullptr);

/// Parses a byte count: `1048576`, `512MiB`, `16GiB`, `1.5GB`; std::nullopt
/// when malformed or negative.
std::optional<int64_t> parseByteCount(StringRef text);

/// The phases `target` (a registered target's name) can stop after, in
/// order: input, flow, host, linalg, its kernel phases, its text phase (if
/// any), fbin. Empty for an unknown target.
std::vector<std::string> getPhaseNames(StringRef target);

} // namespace flow
} // namespace mlir

#endif // FLOW_PIPELINES_OPTIONS_H
