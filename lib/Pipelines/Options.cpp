//===- Options.cpp - Flow's compile options, one table --------------------===//
//
// Part of the Flow project.
//
// One row per option: flag, keyword, type, help, what it accepts, and how it
// sets and reads CompileOptions. A new option is a new row here and a field
// in CompileOptions; flow-compile, Python and the docs follow.
//
//===----------------------------------------------------------------------===//

#include "flow/Pipelines/Options.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "flow/Target/CUDA.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::flow;

using Reason = std::optional<std::string>;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::flow::parseByteCount(StringRef text) {
  text = text.trim();
  static const std::pair<StringRef, double> units[] = {
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"B", 1.0}};
  double scale = 1;
  for (auto [suffix, factor] : units)
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.trim().getAsDouble(value) || !(value >= 0) || value * scale > 9.0e18)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
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

//===----------------------------------------------------------------------===//
// Option types
//===----------------------------------------------------------------------===//

namespace {
std::string quoted(StringRef text) { return "'" + text.str() + "'"; }

/// true, false, 1, 0, on, off (flow-compile's --flag alone: "").
std::optional<bool> parseBool(StringRef text) {
  std::string lower = text.lower();
  if (lower.empty() || lower == "true" || lower == "1" || lower == "on")
    return true;
  if (lower == "false" || lower == "0" || lower == "off")
    return false;
  return std::nullopt;
}

Reason setBool(bool &field, StringRef text) {
  std::optional<bool> value = parseBool(text);
  if (!value)
    return quoted(text) + " is not true or false";
  field = *value;
  return std::nullopt;
}

Reason setChoice(std::string &field, StringRef text,
                 const std::vector<std::string> &choices) {
  if (!llvm::is_contained(choices, text))
    return quoted(text) + " is not one of " + llvm::join(choices, ", ");
  field = text.str();
  return std::nullopt;
}

std::string boolText(bool value) { return value ? "true" : "false"; }

std::string acceptsBool() { return "true or false"; }

std::vector<std::string> precisions() { return {"f32", "bf16"}; }
std::vector<std::string> convs() { return {"library", "gemm"}; }
} // namespace

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

static const CompileOptionInfo kCompileOptions[] = {
    {"target", "target", OptionType::Choice, "name", "Target device",
     [] { return "one of " + llvm::join(getTargetNames(), ", "); },
     [](CompileOptions &o, StringRef text) -> Reason {
       return setChoice(o.target, text, getTargetNames());
     },
     [](const CompileOptions &o) { return o.target; }},
    {"compile-to", "compile_to", OptionType::Choice, "phase",
     "Stop after a phase and print its IR: input, flow, host, linalg, then "
     "the target's (cpu: bufferized, llvm; cuda: bufferized, gpu, nvvm, "
     "ptx), fbin (the executable)",
     [] {
       return std::string("a phase of the target (docs/compile-and-run.md)");
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       // Which phases exist depends on the target: verifyCompileOptions.
       if (text.empty())
         return std::string("a phase name is needed");
       o.compileTo = text.str();
       return std::nullopt;
     },
     [](const CompileOptions &o) { return o.compileTo; }},
    {"cpu", "cpu", OptionType::Text, "name",
     "The LLVM CPU the CPU kernels are compiled for (host: this machine)",
     [] {
       return std::string("host, or a processor LLVM knows (x86-64-v3, "
                          "skylake-avx512, znver4, ...)");
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       if (Reason why = checkCpuName(text))
         return why;
       o.cpu.cpu = text.str();
       return std::nullopt;
     },
     [](const CompileOptions &o) { return o.cpu.cpu; }},
    {"gpu-arch", "gpu_arch", OptionType::Text, "sm_XY",
     "For the CUDA targets: the GPU's compute capability (sm_90: H100, "
     "H200; sm_80: A100)",
     [] {
       return "an architecture CUDA 13 compiles for: " +
              llvm::join(getGpuArchs(), ", ");
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       if (Reason why = checkGpuArch(text))
         return why;
       o.cuda.arch = text.str();
       return std::nullopt;
     },
     [](const CompileOptions &o) { return o.cuda.arch; }},
    {"allow-tf32", "allow_tf32", OptionType::Bool, "bool",
     "For the CUDA targets: let f32 library GEMMs multiply in TF32 (10-bit "
     "mantissas, f32 sums; faster on tensor cores, less exact)",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.cuda.allowTf32, text);
     },
     [](const CompileOptions &o) { return boolText(o.cuda.allowTf32); }},
    {"precision", "precision", OptionType::Choice, "name",
     "f32, or bf16: matrix products and convolutions read bf16 operands and "
     "sum in f32; everything else stays f32",
     [] { return "one of " + llvm::join(precisions(), ", "); },
     [](CompileOptions &o, StringRef text) -> Reason {
       return setChoice(o.precision, text, precisions());
     },
     [](const CompileOptions &o) { return o.precision; }},
    {"fusion", "fusion", OptionType::Bool, "bool",
     "Fuse ops into kernels (false: one op per kernel, for comparison)",
     [] { return std::string("true or false (on, off)"); },
     [](CompileOptions &o, StringRef text) { return setBool(o.fusion, text); },
     [](const CompileOptions &o) { return boolText(o.fusion); }},
    {"sibling-matmuls", "sibling_matmuls", OptionType::Bool, "bool",
     "Join matrix products that read one input with weights of the "
     "parameter archive (attention's q, k and v) into one GEMM, the weights "
     "concatenated once at load (off by default: it measured no faster on "
     "the CPU)",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.siblingMatmuls, text);
     },
     [](const CompileOptions &o) { return boolText(o.siblingMatmuls); }},
    {"fused-attention", "fused_attention", OptionType::Bool, "bool",
     "Run attention (PyTorch's scaled_dot_product_attention) as one fused "
     "command on targets with an attention library (the CPU); false: "
     "matmul, softmax and matmul as separate ops",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.fusedAttention, text);
     },
     [](const CompileOptions &o) { return boolText(o.fusedAttention); }},
    {"library-matmul", "library_matmul", OptionType::Bool, "bool",
     "Run f32 matmuls as library GEMMs (false: generated kernels)", acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.libraryMatmul, text);
     },
     [](const CompileOptions &o) { return boolText(o.libraryMatmul); }},
    {"conv", "conv", OptionType::Choice, "how",
     "How f32 convolutions run: library (the runtime's convolution library, "
     "epilogues fused, activations blocked between convolutions) or gemm "
     "(im2col and a library GEMM)",
     [] { return "one of " + llvm::join(convs(), ", "); },
     [](CompileOptions &o, StringRef text) -> Reason {
       std::string value;
       if (Reason why = setChoice(value, text, convs()))
         return why;
       o.libraryConv = value == "library";
       return std::nullopt;
     },
     [](const CompileOptions &o) {
       return std::string(o.libraryConv ? "library" : "gemm");
     }},
    {"max-columns-bytes", "max_columns_bytes", OptionType::Integer, "bytes",
     "Largest im2col buffer of a convolution run as a library GEMM; larger "
     "ones run in blocks of output rows (0: no limit)",
     [] { return std::string("an integer >= 0"); },
     [](CompileOptions &o, StringRef text) -> Reason {
       int64_t value;
       if (text.getAsInteger(10, value) || value < 0)
         return quoted(text) + " is not an integer >= 0";
       o.maxColumnsBytes = value;
       return std::nullopt;
     },
     [](const CompileOptions &o) { return std::to_string(o.maxColumnsBytes); }},
    {"in-place", "in_place", OptionType::Bool, "bool",
     "Let element-wise kernels write over an operand that dies at them (off "
     "by default: it measured slower)",
     acceptsBool,
     [](CompileOptions &o, StringRef text) { return setBool(o.inPlace, text); },
     [](const CompileOptions &o) { return boolText(o.inPlace); }},
    {"gemm-epilogues", "gemm_epilogues", OptionType::Bool, "bool",
     "Run element-wise kernels tile by tile with the GEMM before them (off "
     "by default: it measured no faster)",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.gemmEpilogues, text);
     },
     [](const CompileOptions &o) { return boolText(o.gemmEpilogues); }},
    {"mesh", "mesh", OptionType::MeshShape, "shape",
     "Run public functions without a flow.mesh on a mesh of this shape: 4, "
     "2x2 (one process per device)",
     [] {
       return "positive axis sizes joined by 'x' (4, 2x2), at most " +
              std::to_string(kMaxMeshDevices) + " devices";
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       std::string why;
       std::optional<std::vector<int64_t>> shape = parseMeshShape(text, &why);
       if (!shape)
         return why;
       o.mesh = *shape;
       return std::nullopt;
     },
     [](const CompileOptions &o) {
       return llvm::join(
           llvm::map_range(o.mesh, [](int64_t n) { return std::to_string(n); }),
           "x");
     }},
    {"mesh-spec", "mesh_spec", OptionType::Text, "name|file",
     "The mesh's hardware, which the SBP planner times its choices on: a "
     "preset or a JSON file (docs/distributed.md)",
     [] {
       return "a preset (" + llvm::join(meshSpecPresets(), ", ") +
              ") or a JSON file";
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       std::string why;
       if (!loadMeshSpec(text, why))
         return why;
       o.meshSpec = text.str();
       return std::nullopt;
     },
     [](const CompileOptions &o) { return o.meshSpec; }},
    {"auto-parallel", "auto_parallel", OptionType::Bool, "bool",
     "Let the SBP planner place the arguments without a flow.sbp too "
     "(inputs, parameters, optimizer state), by its exact search; the "
     "report compares the plan with plain data and tensor parallel",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.autoParallel, text);
     },
     [](const CompileOptions &o) { return boolText(o.autoParallel); }},
    {"memory-limit", "memory_limit", OptionType::Bytes, "bytes",
     "Bytes per device a mesh plan may use (default: the device memory of "
     "the mesh spec)",
     [] {
       return std::string(
           "a positive byte count like 1073741824, 512MiB or 16GiB");
     },
     [](CompileOptions &o, StringRef text) -> Reason {
       std::optional<int64_t> bytes = parseByteCount(text);
       if (!bytes || *bytes == 0)
         return quoted(text) +
                " is not a positive byte count like 1073741824, 512MiB or "
                "16GiB";
       o.memoryLimit = *bytes;
       return std::nullopt;
     },
     [](const CompileOptions &o) {
       return o.memoryLimit ? std::to_string(o.memoryLimit) : std::string();
     }},
    {"overlap-collectives", "overlap_collectives", OptionType::Bool, "bool",
     "Mesh programs: start each collective as early as its operand allows "
     "and run it while the next commands do, waiting where its result is "
     "needed",
     acceptsBool,
     [](CompileOptions &o, StringRef text) {
       return setBool(o.overlapCollectives, text);
     },
     [](const CompileOptions &o) { return boolText(o.overlapCollectives); }},
};

ArrayRef<CompileOptionInfo> mlir::flow::getCompileOptions() {
  return kCompileOptions;
}

const CompileOptionInfo *mlir::flow::lookupCompileOption(StringRef name) {
  for (const CompileOptionInfo &info : kCompileOptions)
    if (name == info.flag || name == info.keyword)
      return &info;
  return nullptr;
}

std::optional<std::string> mlir::flow::setCompileOption(CompileOptions &options,
                                                        StringRef name,
                                                        StringRef text,
                                                        StringRef spelling) {
  const CompileOptionInfo *info = lookupCompileOption(name);
  if (!info)
    return "unknown compile option '" + name.str() + "'";
  if (Reason why = info->set(options, text))
    return spelling.str() + ": " + *why;
  return std::nullopt;
}

std::optional<std::string>
mlir::flow::verifyCompileOptions(const CompileOptions &options,
                                 bool flagStyle) {
  // Each option alone, as setCompileOption would check it (for options set
  // in C++ directly).
  for (const CompileOptionInfo &info : kCompileOptions) {
    std::string text = info.get(options);
    CompileOptions copy = options;
    if (text.empty() && info.type != OptionType::Text &&
        info.type != OptionType::Choice)
      continue; // Not set: mesh, memory-limit.
    if (Reason why = info.set(copy, text))
      return (flagStyle ? "--" + std::string(info.flag)
                        : std::string(info.keyword)) +
             ": " + *why;
  }
  std::vector<std::string> phases = getPhaseNames(options.target);
  if (!llvm::is_contained(phases, options.compileTo))
    return std::string(flagStyle ? "--compile-to" : "compile_to") + ": " +
           quoted(options.compileTo) + " is not a phase of target '" +
           options.target + "' (" + llvm::join(phases, ", ") + ")";
  return std::nullopt;
}

void mlir::flow::printCompileOptionsReference(raw_ostream &os) {
  os << "<!-- Generated by `flow-compile --print-options-reference` from "
        "lib/Pipelines/Options.cpp; `cmake --build build --target flow-doc` "
        "refreshes it. -->\n\n"
        "# Compile options\n\n"
        "Each option is a `flow-compile` flag and a keyword of Python's "
        "`flow.compile`, `flow.compile_mlir` and `flow.compile_ir`. A value "
        "it does not accept is an error naming the option and what it "
        "accepts.\n\n"
        "| flow-compile | Python | default | accepts | what it does |\n"
        "|---|---|---|---|---|\n";
  CompileOptions defaults;
  for (const CompileOptionInfo &info : kCompileOptions) {
    std::string value = info.get(defaults);
    os << "| `--" << info.flag << "` | `" << info.keyword << "` | "
       << (value.empty() ? std::string("(none)") : "`" + value + "`") << " | "
       << info.accepts() << " | " << info.help << " |\n";
  }
}
