//===- ExpandBf16.cpp - bf16 without conversion instructions --------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_EXPANDBF16PASS
#include "flow/Codegen/CPU/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {
bool isBf16(Type type) { return getElementTypeOrSelf(type).isBF16(); }

/// \p type with f32 elements in place of bf16 ones.
Type widened(Type type) {
  Type f32 = Float32Type::get(type.getContext());
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(f32);
  return f32;
}

/// True for ops this pass computes in f32 when they touch bf16: arithmetic
/// of the arith and math dialects, and vector reductions and FMAs. Moves
/// of bits (constants, selects, bitcasts) and the conversions themselves
/// stay as they are.
bool computesInF32(Operation *op) {
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::ConstantOp, arith::SelectOp,
          arith::BitcastOp>(op))
    return false;
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if (dialect != "arith" && dialect != "math" &&
      !isa<vector::ReductionOp, vector::FMAOp>(op))
    return false;
  if (op->getNumRegions() != 0)
    return false;
  return llvm::any_of(op->getOperandTypes(), isBf16) ||
         llvm::any_of(op->getResultTypes(), isBf16);
}

/// Rewrites a bf16 op as its f32 twin between widening and rounding.
struct ComputeInF32 : RewritePattern {
  ComputeInF32(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!computesInF32(op))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(
          isBf16(operand.getType())
              ? arith::ExtFOp::create(rewriter, loc,
                                      widened(operand.getType()), operand)
                    .getResult()
              : operand);
    SmallVector<Type> types;
    for (Type type : op->getResultTypes())
      types.push_back(isBf16(type) ? widened(type) : type);
    OperationState state(loc, op->getName(), operands, types,
                         op->getAttrs());
    Operation *wide = rewriter.create(state);
    SmallVector<Value> results;
    for (auto [old, value] : llvm::zip(op->getResults(), wide->getResults()))
      results.push_back(
          isBf16(old.getType())
              ? arith::TruncFOp::create(rewriter, loc, old.getType(), value)
                    .getResult()
              : value);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// f64 (or any type wider than f32) to bf16 in two steps, through f32.
struct TruncThroughF32 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = getElementTypeOrSelf(op.getIn().getType());
    if (!isBf16(op.getType()) || from.isF32() ||
        from.getIntOrFloatBitWidth() <= 32)
      return failure();
    Value f32 = arith::TruncFOp::create(
        rewriter, op.getLoc(), widened(op.getType()), op.getIn());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), f32);
    return success();
  }
};

struct ExpandBf16Pass : flow::impl::ExpandBf16PassBase<ExpandBf16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ComputeInF32, TruncThroughF32>(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // What LLVM would still round in software is an error here, not a
    // library that fails to load.
    WalkResult left = getOperation()->walk([](arith::TruncFOp op) {
      if (!isBf16(op.getType()))
        return WalkResult::advance();
      op.emitError("cannot expand this rounding to bf16 for a CPU without "
                   "bf16 conversion instructions");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
