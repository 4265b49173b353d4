//===- FlowFolds.cpp - Flow folders and canonicalization patterns ---------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::flow;

/// True if `attr` is a splat whose every element is `value` (0 or 1). A
/// float zero of either sign counts as zero.
static bool isSplatOf(Attribute attr, int value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type elementType = dense.getElementType();
  if (isa<FloatType>(elementType)) {
    APFloat v = dense.getSplatValue<APFloat>();
    return value == 0 ? v.isZero() : v.isExactlyValue(1.0);
  }
  if (isa<IntegerType>(elementType)) {
    APInt v = dense.getSplatValue<APInt>();
    return value == 0 ? v.isZero() : v.isOne();
  }
  return false;
}

/// Folds `op(x, c)` to `x` when `c` is a splat of `identity` and `x` already
/// has the result type (the constant does not broadcast `x`).
static OpFoldResult foldRightIdentity(Operation *op, Attribute rhs,
                                      int identity) {
  Value lhs = op->getOperand(0);
  if (isSplatOf(rhs, identity) && lhs.getType() == op->getResult(0).getType())
    return lhs;
  return {};
}

/// Like foldRightIdentity, for either operand of a commutative op.
static OpFoldResult foldEitherIdentity(Operation *op, Attribute lhs,
                                       Attribute rhs, int identity) {
  if (OpFoldResult r = foldRightIdentity(op, rhs, identity))
    return r;
  Value rhsValue = op->getOperand(1);
  if (isSplatOf(lhs, identity) &&
      rhsValue.getType() == op->getResult(0).getType())
    return rhsValue;
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

// x + 0 -> x. For floats this also maps -0.0 + 0.0 (which is +0.0) to -0.0;
// the two compare equal and every Flow op treats them alike except division
// by them, which no model relies on.
OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldEitherIdentity(*this, adaptor.getLhs(), adaptor.getRhs(), 0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), 0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldEitherIdentity(*this, adaptor.getLhs(), adaptor.getRhs(), 1);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(*this, adaptor.getRhs(), 1);
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x).
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= (int64_t)i == p;
  if (identity)
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

namespace {
/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<TransposeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "operand is not a transpose");
    ArrayRef<int64_t> inner = producer.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : op.getPermutation())
      composed.push_back(inner[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(),
                                             producer.getInput(), composed);
    return success();
  }
};
} // namespace

namespace {
/// matmul(a, transpose(b, [0, .., r-1, r-2])) -> matmul(a, b) with
/// `transpose_rhs` flipped: the product reads `b` in place.
struct FoldTransposeIntoMatmulRhs : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto transpose = op.getRhs().getDefiningOp<TransposeOp>();
    if (!transpose)
      return rewriter.notifyMatchFailure(op, "rhs is not a transpose");
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = static_cast<int64_t>(perm.size());
    if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
      return rewriter.notifyMatchFailure(op, "not a swap of the last two");
    for (int64_t i = 0; i + 2 < rank; ++i)
      if (perm[i] != i)
        return rewriter.notifyMatchFailure(op, "moves a batch dimension");
    rewriter.modifyOpInPlace(op, [&] {
      op.getRhsMutable().assign(transpose.getInput());
      op.setTransposeRhs(!op.getTransposeRhs());
    });
    return success();
  }
};
} // namespace

namespace {
/// reshape(matmul(reshape(a), reshape(b))) -> matmul(a, b) where the inner
/// reshapes merge the same leading (batch) dimensions of `a` and `b` into
/// one and the outer reshape splits them back: a batched product over the
/// original batch dimensions (torch's decomposition of a 4-D `@` into
/// `bmm`). Keeping the dimensions lets a split of the inner one of them
/// (attention heads) pass through the product.
struct UnflattenBatchedMatmul : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto matmul = op.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not the only reader of a matmul");
    FailureOr<Extents> flat = getExtents(matmul.getType());
    FailureOr<Extents> out = getExtents(op.getType());
    if (failed(flat) || failed(out))
      return rewriter.notifyMatchFailure(op, "a dimension has no extent");
    int64_t rank = out->size();
    auto lastTwo = [](ArrayRef<Extent> e) { return e.take_back(2); };
    if (flat->size() != 3 || rank < 4 || lastTwo(*out) != lastTwo(*flat))
      return rewriter.notifyMatchFailure(op, "not [N, m, n] -> [..., m, n]");
    ArrayRef<Extent> batch = ArrayRef<Extent>(*out).drop_back(2);
    SmallVector<Value> unflat;
    for (Value operand : {matmul.getLhs(), matmul.getRhs()}) {
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      if (!reshape)
        return rewriter.notifyMatchFailure(op, "operand is not a reshape");
      FailureOr<Extents> in = getExtents(reshape.getInput().getType());
      FailureOr<Extents> merged = getExtents(reshape.getType());
      if (failed(in) || failed(merged) || (int64_t)in->size() != rank ||
          ArrayRef<Extent>(*in).drop_back(2) != batch ||
          lastTwo(*in) != lastTwo(*merged))
        return rewriter.notifyMatchFailure(op, "operand merges other dims");
      unflat.push_back(reshape.getInput());
    }
    auto outType = cast<RankedTensorType>(op.getType());
    auto product = MatmulOp::create(
        rewriter, matmul.getLoc(), outType, unflat[0], unflat[1],
        matmul.getTransposeLhsAttr(), matmul.getTransposeRhsAttr(),
        matmul.getAccumulateF32Attr());
    rewriter.replaceOp(op, product.getResult());
    return success();
  }
};
} // namespace

namespace {
/// slice(parameter) with unit strides -> the parameter's piece: the block
/// is read once when the executable is loaded instead of copied per call
/// (a device's piece of a split weight).
struct SliceOfParameter : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto parameter = op.getInput().getDefiningOp<ParameterOp>();
    if (!parameter)
      return rewriter.notifyMatchFailure(op, "input is not a parameter");
    if (parameter.getPieceSbp())
      return rewriter.notifyMatchFailure(
          op, "a piece by SBP: its offsets are the device's");
    if (llvm::any_of(op.getStrides(), [](int64_t s) { return s != 1; }))
      return rewriter.notifyMatchFailure(op, "strided");
    rewriter.replaceOp(op, createParameterPiece(rewriter, op.getLoc(),
                                                parameter, op.getStarts(),
                                                op.getType()));
    return success();
  }
};
} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<SliceOfParameter>(context);
}

namespace {
/// A reshape that repeats an earlier one (the same value, the same shape)
/// reads the earlier one: a view is free, and several consumers of one view
/// (q, k and v reading the flattened activations) then need it boxed once
/// on a mesh. (General CSE would also merge what recompute duplicated.)
struct MergeRepeatedReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    for (Operation *user : op.getInput().getUsers()) {
      auto earlier = dyn_cast<ReshapeOp>(user);
      if (earlier && earlier != op && earlier.getType() == op.getType() &&
          earlier->getBlock() == op->getBlock() &&
          earlier->isBeforeInBlock(op) && earlier->getAttrs() == op->getAttrs()) {
        rewriter.replaceOp(op, earlier.getResult());
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "no earlier equal reshape");
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<UnflattenBatchedMatmul, MergeRepeatedReshape>(context);
}

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<FoldTransposeIntoMatmulRhs>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}
