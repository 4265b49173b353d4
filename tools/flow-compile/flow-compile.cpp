//===- flow-compile.cpp - Flow's compiler driver --------------------------===//
//
// Part of the Flow project.
//
//   flow-compile IN.mlir -o OUT.fbin --target=cpu [--compile-to=PHASE]
//                [--report=FILE.json] [--mlir-timing]
//                [--mlir-print-ir-after-all]
//
// A thin main over lib/Pipelines.
//
//===----------------------------------------------------------------------===//

#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Pipelines/Pipelines.h"
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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::flow;
namespace cl = llvm::cl;

static cl::opt<std::string>
    inputFilename(cl::Positional, cl::desc("<input .mlir>"), cl::init("-"));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("filename"),
                                           cl::init("-"));
static cl::opt<std::string>
    target("target", cl::desc("Target device: cpu (default)"), cl::init("cpu"));
static cl::opt<std::string>
    compileTo("compile-to",
              cl::desc("Stop after a phase and print its IR: input, flow, "
                       "linalg, bufferized, llvm, fbin (default)"),
              cl::init("fbin"));
static cl::opt<std::string>
    reportFile("report", cl::desc("Write a JSON compile report to this file"),
               cl::value_desc("filename"), cl::init(""));
static cl::opt<std::string> cpu("cpu",
                                cl::desc("LLVM CPU name for CPU kernels "
                                         "(default: host)"),
                                cl::init("host"));
static cl::opt<bool>
    libraryMatmul("library-matmul",
                  cl::desc("Run f32 matmuls as library GEMMs (default on)"),
                  cl::init(true));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerCompilerPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv, "Flow compiler\n");

  std::optional<Phase> phase = parsePhase(compileTo);
  if (!phase) {
    llvm::errs() << "flow-compile: error: unknown phase '" << compileTo
                 << "' for --compile-to (input, flow, linalg, bufferized, "
                    "llvm, fbin)\n";
    return 1;
  }

  DialectRegistry registry;
  registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  auto input = openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "flow-compile: error: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  OwningOpRef<ModuleOp> module;
  {
    TimingScope parseTiming = timing.nest("parse");
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (!module)
    return 1;

  CompileOptions options;
  options.target = target;
  options.cpu.cpu = cpu;
  options.compileTo = *phase;
  options.libraryMatmul = libraryMatmul;
  FailureOr<CompileResult> result = compile(*module, options, &timing);
  if (failed(result))
    return 1;

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "flow-compile: error: " << error << "\n";
    return 1;
  }
  if (*phase == Phase::Fbin) {
    output->os().write(
        reinterpret_cast<const char *>(result->executable.data()),
        result->executable.size());
  } else {
    result->module->print(output->os());
    output->os() << "\n";
  }
  output->keep();

  if (!reportFile.empty()) {
    auto report = openOutputFile(reportFile, &error);
    if (!report) {
      llvm::errs() << "flow-compile: error: " << error << "\n";
      return 1;
    }
    result->report.writeJson(report->os());
    report->keep();
  }
  return 0;
}
