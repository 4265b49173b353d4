//===- flow-opt.cpp - Flow's optimizer driver -----------------------------===//
//
// Part of the Flow project.
//
// mlir-opt with the flow dialect and Flow's passes, plus every upstream
// dialect and pass, so any phase of Flow's pipelines can be run alone.
//
//===----------------------------------------------------------------------===//

#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::flow::registerFlowTransformsPasses();
  mlir::flow::registerFlowConversionPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::flow::FlowDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Flow optimizer driver\n", registry));
}
