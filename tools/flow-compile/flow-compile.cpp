//===- flow-compile.cpp - Flow's compiler driver --------------------------===//
//
// Part of the Flow project.
//
//   flow-compile IN.mlir -o OUT.fbin [--target=cpu|cuda] [--compile-to=PHASE]
//                [compile options] [--report=FILE.json] [--mlir-timing]
//                [--mlir-print-ir-after-all]
//   flow-compile IN.onnx -o OUT.fbin [--parameters=W.safetensors]
//
// A thin main over lib/Pipelines. The compile options' flags come from
// their table (flow/Pipelines/Options.h), which checks their values. An .onnx
// input is imported by Flow's Python importer (`python -m flow.onnx_import`,
// run with the Python the build was configured with, or $FLOW_PYTHON); its
// weights go to a safetensors archive next to the output, which the executable
// names.
//
//===----------------------------------------------------------------------===//

#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Pipelines/CompileCache.h"
#include "flow/Pipelines/Options.h"
#include "flow/Pipelines/Pipelines.h"
#include "flow/Support/ParseGuard.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::flow;
namespace cl = llvm::cl;

// --help lists these two categories; LLVM's code generation options (which
// the tool links) are hidden, shown by --help-hidden.
static cl::OptionCategory flowCategory("Flow options");
static cl::OptionCategory mlirCategory(
    "MLIR options (IR printing, timing, diagnostics)");

static cl::opt<std::string> inputFilename(cl::Positional, cl::cat(flowCategory),
                                          cl::desc("<input .mlir or .onnx>"),
                                          cl::init("-"));
static cl::opt<std::string> outputFilename("o", cl::cat(flowCategory),
                                           cl::desc("Output file"),
                                           cl::value_desc("filename"),
                                           cl::init("-"));
static cl::opt<std::string>
    reportFile("report", cl::cat(flowCategory),
               cl::desc("Write a JSON compile report to this file"),
               cl::value_desc("filename"), cl::init(""));
static cl::opt<std::string> memoryPlot(
    "memory-plot", cl::cat(flowCategory),
    cl::desc("Draw the arena plan of the function with the largest arena as "
             "SVG: buffers as rectangles over schedule position and offset, "
             "with the lower bound marked"),
    cl::value_desc("file.svg"), cl::init(""));

static cl::opt<std::string> sbpPlanGraph(
    "sbp-plan-graph", cl::cat(flowCategory),
    cl::desc("Draw each mesh function's SBP plan as SVG: ops in program "
             "order filled by their SBP, uses that need a collective in "
             "red with its name"),
    cl::value_desc("file.svg"), cl::init(""));

static cl::opt<bool> noCache(
    "no-cache", cl::cat(flowCategory),
    cl::desc("Compile even when the compile cache holds the executable, "
             "and do not store it (the cache: $FLOW_CACHE_DIR, else "
             "~/.cache/flow/compiled; python -m flow.cache info)"),
    cl::init(false));

static cl::opt<std::string> parametersFile(
    "parameters", cl::cat(flowCategory),
    cl::desc("For an .onnx input: the safetensors archive to write the "
             "weights to (default: the output with a .safetensors "
             "extension)"),
    cl::value_desc("filename"), cl::init(""));

static cl::list<std::string> dimBounds(
    "dim", cl::cat(flowCategory),
    cl::desc("For an .onnx input: keep the symbolic dimension NAME (a "
             "dim_param) as a size symbol of bounds MIN to MAX, e.g. "
             "--dim=batch=1:8 (repeatable)"),
    cl::value_desc("NAME=MIN:MAX"));

static cl::opt<std::string> train(
    "train", cl::cat(flowCategory),
    cl::desc("Compile a training step: give every public function with "
             "flow.requires_grad arguments this flow.optimizer, e.g. "
             "'{kind = \"adamw\", weight_decay = 0.1, max_grad_norm = 1.0}' "
             "(docs/training.md)"),
    cl::value_desc("optimizer"), cl::init(""));

static cl::opt<bool> printOptionsReference(
    "print-options-reference", cl::Hidden,
    cl::desc("Print the compile options as a Markdown table "
             "(docs/reference/CompileOptions.md) and exit"),
    cl::init(false));

/// The compile options' flags, one per row of the option table
/// (flow/Pipelines/Options.h), which checks their values.
struct CompileFlag {
  const CompileOptionInfo *info;
  /// The flag keeps a reference to its help text.
  std::unique_ptr<std::string> help;
  std::unique_ptr<cl::opt<std::string>> flag;
};
static std::vector<CompileFlag> makeCompileFlags() {
  std::vector<CompileFlag> flags;
  CompileOptions defaults;
  for (const CompileOptionInfo &info : getCompileOptions()) {
    std::string value = info.get(defaults);
    auto help = std::make_unique<std::string>(
        std::string(info.help) + " [" + info.accepts() +
        (value.empty() ? "" : "; default " + value) + "]");
    auto flag = std::make_unique<cl::opt<std::string>>(
        StringRef(info.flag), cl::cat(flowCategory), cl::desc(*help),
        cl::value_desc(info.valueName),
        // A boolean flag alone (--fusion) means true.
        info.type == OptionType::Bool ? cl::ValueOptional : cl::ValueRequired);
    flags.push_back({&info, std::move(help), std::move(flag)});
  }
  return flags;
}

/// The options the command line gives; false after printing why one is not
/// a value its option accepts.
static bool readCompileFlags(const std::vector<CompileFlag> &flags,
                             CompileOptions &options) {
  for (const CompileFlag &f : flags) {
    if (!f.flag->getNumOccurrences())
      continue;
    if (std::optional<std::string> why = setCompileOption(
            options, f.info->flag, *f.flag, "--" + std::string(f.info->flag))) {
      llvm::errs() << "flow-compile: error: " << *why << "\n";
      return false;
    }
  }
  if (std::optional<std::string> why =
          verifyCompileOptions(options, /*flagStyle=*/true)) {
    llvm::errs() << "flow-compile: error: " << *why << "\n";
    return false;
  }
  return true;
}

/// --train: sets the optimizer of the functions that have parameters.
static LogicalResult applyTrainOption(ModuleOp module) {
  Attribute parsed = parseAttribute(train, module.getContext());
  auto dict = dyn_cast_or_null<DictionaryAttr>(parsed);
  if (!dict) {
    llvm::errs() << "flow-compile: error: --train needs an optimizer "
                    "dictionary such as '{kind = \"sgd\", momentum = 0.9}', "
                    "got '"
                 << train << "'\n";
    return failure();
  }
  unsigned count = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func.isPrivate())
      continue;
    bool parameters = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      parameters |= static_cast<bool>(
          func.getArgAttr(i, mlir::flow::FlowDialect::getRequiresGradAttrName()));
    if (!parameters)
      continue;
    func->setAttr(mlir::flow::FlowDialect::getOptimizerAttrName(), dict);
    ++count;
  }
  if (count == 0) {
    llvm::errs() << "flow-compile: error: --train: no public function has "
                    "an argument marked flow.requires_grad (the parameters "
                    "to train)\n";
    return failure();
  }
  return success();
}

/// --help: MLIR's options in their category, every other one not Flow's
/// (LLVM's code generation options) hidden.
static void arrangeHelp() {
  for (auto &[name, option] : cl::getRegisteredOptions()) {
    if (name.starts_with("mlir-"))
      option->addCategory(mlirCategory);
    else if (!llvm::is_contained(option->Categories, &flowCategory) &&
             name != "help" && name != "help-list" && name != "version" &&
             option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
}

/// Whether a flag outside Flow's own (MLIR's timing, IR printing, debug
/// output) was given: its output would not come from a cached compile.
static bool givenLibraryFlag() {
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (option->getNumOccurrences() > 0 &&
        !llvm::is_contained(option->Categories, &flowCategory))
      return true;
  return false;
}

/// Whether the option `name` (one of the libraries') was given.
static bool givenOnCommandLine(llvm::StringRef name) {
  cl::Option *option = cl::getRegisteredOptions().lookup(name);
  return option && option->getNumOccurrences() > 0;
}

extern char **environ;

/// Imports the ONNX model at `path` with Flow's Python importer; returns
/// the flow-dialect text, or null after printing why not.
static std::unique_ptr<llvm::MemoryBuffer> importOnnx(llvm::StringRef path) {
  std::string archive = parametersFile;
  if (archive.empty()) {
    llvm::SmallString<256> base(outputFilename == "-"
                                    ? path.str()
                                    : std::string(outputFilename));
    llvm::sys::path::replace_extension(base, "safetensors");
    archive = std::string(base);
  }
  // The executable names the archive relative to its own directory when
  // the two sit side by side, so they can be moved together.
  llvm::SmallString<256> outDir(
      outputFilename == "-" ? std::string(".") : std::string(outputFilename));
  llvm::sys::path::remove_filename(outDir);
  llvm::SmallString<256> archiveDir(archive);
  llvm::sys::path::remove_filename(archiveDir);
  std::string name = archive;
  if (outputFilename != "-" && outDir == archiveDir)
    name = std::string(llvm::sys::path::filename(archive));

  llvm::SmallString<128> textFile;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("flow-onnx", "mlir", textFile)) {
    llvm::errs() << "flow-compile: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return nullptr;
  }
  llvm::FileRemover remover(textFile);
  const char *fromEnv = getenv("FLOW_PYTHON");
  std::string python = fromEnv && *fromEnv ? fromEnv : FLOW_PYTHON_EXECUTABLE;
  std::vector<llvm::StringRef> args = {python, "-m", "flow.onnx_import", path,
                                       "-o", textFile, "--parameters", archive,
                                       "--archive-name", name};
  for (const std::string &dim : dimBounds) {
    args.push_back("--dim");
    args.push_back(dim);
  }
  // The flow package of this build comes first on the module path.
  std::vector<std::string> env;
  std::string pythonPath = std::string("PYTHONPATH=") + FLOW_PYTHON_PATH;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef entry(*e);
    if (entry.starts_with("PYTHONPATH="))
      pythonPath += ":" + entry.drop_front(11).str();
    else
      env.push_back(entry.str());
  }
  env.push_back(pythonPath);
  std::vector<llvm::StringRef> envRefs(env.begin(), env.end());
  std::string error;
  int status = llvm::sys::ExecuteAndWait(python, args, envRefs, {}, 0, 0,
                                         &error);
  if (status != 0) {
    if (!error.empty())
      llvm::errs() << "flow-compile: error: cannot run the ONNX importer ("
                   << python << "): " << error << "\n";
    else
      llvm::errs() << "flow-compile: error: importing '" << path
                   << "' failed\n";
    return nullptr;
  }
  auto text = llvm::MemoryBuffer::getFile(textFile);
  if (!text) {
    llvm::errs() << "flow-compile: error: the ONNX importer wrote no IR\n";
    return nullptr;
  }
  return std::move(*text);
}

/// Keeps a written file, or reports why it could not be written (a full
/// disk, /dev/full) and removes it: an error, never LLVM's fatal one.
static bool finish(llvm::ToolOutputFile &file) {
  file.os().flush();
  if (file.os().has_error()) {
    llvm::errs() << "flow-compile: error: cannot write '" << file.getFilename()
                 << "': " << file.os().error().message() << "\n";
    file.os().clear_error();
    return false;
  }
  file.keep();
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerCompilerPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerDefaultTimingManagerCLOptions();
  arrangeHelp();
  std::vector<CompileFlag> compileFlags = makeCompileFlags();
  cl::ParseCommandLineOptions(argc, argv, "Flow compiler\n");
  if (printOptionsReference) {
    printCompileOptionsReference(llvm::outs());
    return 0;
  }
  // LLVM's own --threads (hidden, linked in) would take any integer and do
  // nothing a user of flow-compile expects.
  if (givenOnCommandLine("threads")) {
    llvm::errs() << "flow-compile: error: --threads: flow-compile takes no "
                    "thread count (it compiles with MLIR's threads; "
                    "--mlir-disable-threading turns them off); the threads "
                    "an executable runs on are flow-run's --threads\n";
    return 1;
  }
  CompileOptions options;
  if (!readCompileFlags(compileFlags, options))
    return 1;

  DialectRegistry registry;
  registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors name the source line; the op printed after each (the whole
  // module, for an error about an option) only with
  // --mlir-print-op-on-diagnostic.
  if (!givenOnCommandLine("mlir-print-op-on-diagnostic"))
    context.printOpOnDiagnostic(false);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input;
  if (llvm::StringRef(inputFilename).ends_with(".onnx")) {
    input = importOnnx(inputFilename);
    if (!input)
      return 1;
  } else {
    input = openInputFile(inputFilename, &error);
  }
  if (!input) {
    llvm::errs() << "flow-compile: error: " << error << "\n";
    return 1;
  }
  if (std::optional<ParserHazard> hazard =
          findParserHazard(input->getBuffer())) {
    llvm::errs() << formatParserHazard(input->getBufferIdentifier(),
                                       input->getBuffer(), *hazard)
                 << "\n";
    return 1;
  }
  // The compile cache serves a plain compile to an executable: no report,
  // plot or training step to make, no library flag whose output only a
  // compile prints.
  std::optional<CompileCacheEntry> entry;
  if (!noCache && reportFile.empty() && memoryPlot.empty() &&
      sbpPlanGraph.empty() && train.empty() && !givenLibraryFlag())
    entry = CompileCacheEntry::forCompile(input->getBuffer(), options);
  if (entry) {
    std::string diagnostics, warning;
    std::optional<std::vector<uint8_t>> bytes =
        entry->lookup(diagnostics, warning);
    if (!warning.empty())
      llvm::errs() << "flow-compile: warning: " << warning << "\n";
    if (bytes) {
      llvm::errs() << diagnostics;
      auto output = openOutputFile(outputFilename, &error);
      if (!output) {
        llvm::errs() << "flow-compile: error: " << error << "\n";
        return 1;
      }
      output->os().write(reinterpret_cast<const char *>(bytes->data()),
                         bytes->size());
      return finish(*output) ? 0 : 1;
    }
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  // A compile the cache keeps keeps its warnings too: they are collected,
  // then printed.
  std::string collected;
  llvm::raw_string_ostream collector(collected);
  SourceMgrDiagnosticHandler diagnostics(
      sourceMgr, &context,
      entry ? static_cast<llvm::raw_ostream &>(collector) : llvm::errs());
  auto printCollected =
      llvm::make_scope_exit([&] { llvm::errs() << collected; });

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  OwningOpRef<ModuleOp> module;
  {
    TimingScope parseTiming = timing.nest("parse");
    // With --mesh the module is verified once the mesh is applied (an
    // argument's flow.sbp needs its function's mesh).
    ParserConfig config(&context, /*verifyAfterParse=*/options.mesh.empty());
    module = parseSourceFile<ModuleOp>(sourceMgr, config);
  }
  if (!module)
    return 1;
  if (!train.empty() && failed(applyTrainOption(*module)))
    return 1;

  options.sbpPlanGraph = !sbpPlanGraph.empty();
  FailureOr<CompileResult> result = compile(*module, options, &timing);
  if (failed(result))
    return 1;

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "flow-compile: error: " << error << "\n";
    return 1;
  }
  if (options.compileTo == "fbin") {
    output->os().write(
        reinterpret_cast<const char *>(result->executable.data()),
        result->executable.size());
    if (entry) {
      std::string warning;
      entry->store(result->executable, collected, warning);
      if (!warning.empty())
        llvm::errs() << "flow-compile: warning: " << warning << "\n";
    }
  } else if (!result->module) {
    output->os() << result->text;
  } else {
    result->module->print(output->os());
    output->os() << "\n";
  }
  if (!finish(*output))
    return 1;

  if (!reportFile.empty()) {
    auto report = openOutputFile(reportFile, &error);
    if (!report) {
      llvm::errs() << "flow-compile: error: " << error << "\n";
      return 1;
    }
    result->report.writeJson(report->os());
    if (!finish(*report))
      return 1;
  }
  if (!sbpPlanGraph.empty()) {
    if (result->sbpPlanSvg.empty()) {
      llvm::errs() << "flow-compile: error: --sbp-plan-graph: no function "
                      "was placed on a mesh (give --mesh=N or a flow.mesh, "
                      "and compile at least to the flow phase)\n";
      return 1;
    }
    auto graph = openOutputFile(sbpPlanGraph, &error);
    if (!graph) {
      llvm::errs() << "flow-compile: error: " << error << "\n";
      return 1;
    }
    graph->os() << result->sbpPlanSvg;
    if (!finish(*graph))
      return 1;
  }
  if (!memoryPlot.empty()) {
    // The function with the largest arena.
    const ExecutableStats::FunctionPlan *largest = nullptr;
    for (const ExecutableStats::FunctionPlan &p :
         result->report.executable.plans)
      if (!largest || p.result.arenaBytes > largest->result.arenaBytes)
        largest = &p;
    if (!largest) {
      llvm::errs() << "flow-compile: error: --memory-plot needs an "
                      "executable (compile to fbin)\n";
      return 1;
    }
    auto plot = openOutputFile(memoryPlot, &error);
    if (!plot) {
      llvm::errs() << "flow-compile: error: " << error << "\n";
      return 1;
    }
    writeMemoryPlot(plot->os(), largest->buffers, largest->result,
                    "@" + largest->function, /*alignment=*/64);
    if (!finish(*plot))
      return 1;
  }
  return 0;
}
