//===- flow-opt.cpp - Flow's optimizer driver -----------------------------===//
//
// Part of the Flow project.
//
// mlir-opt with the flow dialect, Flow's passes and its phase pipelines
// (--flow-graph-pipeline, --flow-kernel-linalg-pipeline, ...), plus every
// upstream dialect and pass, so any pass or phase can be run alone. The
// input is checked for constructs the MLIR parser crashes on before it is
// parsed (flow/Support/ParseGuard.h).
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Codegen/Common/Passes.h"
#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "flow/Fusion/Passes.h"
#include "flow/Pipelines/Pipelines.h"
#include "flow/Support/ParseGuard.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  flow::registerFlowTransformsPasses();
  flow::registerFlowHostTransformsPasses();
  flow::registerFlowConversionPasses();
  flow::registerFlowFusionPasses();
  flow::registerFlowCodegenCommonPasses();
  flow::registerFlowCodegenCPUPasses();
  flow::registerFlowCodegenCUDAPasses();
  flow::registerCompilerPipelines();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<flow::FlowDialect, flow::HostDialect>();

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "Flow optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "flow-opt: " << error << "\n";
    return 1;
  }
  if (std::optional<flow::ParserHazard> hazard =
          flow::findParserHazard(input->getBuffer())) {
    llvm::errs() << flow::formatParserHazard(input->getBufferIdentifier(),
                                             input->getBuffer(), *hazard)
                 << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "flow-opt: " << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
