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
    // The functions MLIR's default set approximates, less sine and cosine:
    // their approximations reduce the argument with one f32 constant, so the
    // error grows with it (6e-6 at |x| = 100, 5e-5 at 1000, where rotary
    // position embeddings go), against 4e-8 for the C library's, which the
    // math-to-libm conversion then calls. Reciprocal square roots stay
    // exact, as in the default set without AVX2 estimates.
    auto approximated = [](StringRef name) {
      return llvm::is_contained(
          {"math.acos", "math.asin", "math.atan", "math.atan2", "math.cbrt",
           "math.erf", "math.erfc", "math.exp", "math.expm1", "math.log",
           "math.log2", "math.log1p", "math.tanh"},
          name);
    };
    populateMathF32ExpansionPatterns(patterns, approximated);
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
