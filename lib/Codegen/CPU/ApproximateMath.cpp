//===- ApproximateMath.cpp - Polynomial math for vectorizable kernels -----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "flow/Codegen/CPU/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {
struct ApproximateMathPass
    : flow::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
