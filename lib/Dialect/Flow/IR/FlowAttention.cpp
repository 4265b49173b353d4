//===- FlowAttention.cpp - flow.attention: types and its expansion --------===//
//
// Part of the Flow project.
//
// The fused attention op's shape rule, and the expansion into matmul,
// softmax and matmul that targets without an attention library run and
// the gradient rule differentiates.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Flow/IR/FlowVerifiers.h"
#include "flow/runtime/rules/Attention.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::opsupport;

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType q = tensorTypeOf(adaptor.getQuery());
  RankedTensorType k = tensorTypeOf(adaptor.getKey());
  RankedTensorType v = tensorTypeOf(adaptor.getValue());
  if (!q || !k || !v)
    return report.fail("operands must be ranked tensors");
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return report.fail("query, key and value need one element type, got ",
                       q.getElementType(), ", ", k.getElementType(), " and ",
                       v.getElementType());
  FailureOr<Extents> qe = getExtents(q), ke = getExtents(k), ve = getExtents(v);
  if (failed(qe) || failed(ke) || failed(ve))
    return report.fail("operands need a #flow.shape for each dynamic "
                       "dimension");
  std::vector<Extent> maskShape;
  if (Value m = adaptor.getMask()) {
    RankedTensorType mask = tensorTypeOf(m);
    FailureOr<Extents> me = getExtents(mask);
    if (!mask || failed(me))
      return report.fail("mask must be a ranked tensor with a #flow.shape "
                         "for each dynamic dimension");
    Type e = mask.getElementType();
    if (!e.isInteger(1) && e != q.getElementType())
      return report.fail("mask must be i1 or ", q.getElementType(),
                         " (the operands' type), got ", e);
    maskShape.assign(me->begin(), me->end());
  }
  std::vector<Extent> shape;
  std::string error = ::flow::rules::attentionShapeError(
      std::vector<Extent>(qe->begin(), qe->end()),
      std::vector<Extent>(ke->begin(), ke->end()),
      std::vector<Extent>(ve->begin(), ve->end()),
      adaptor.getMask() ? &maskShape : nullptr, shape);
  if (!error.empty())
    return report.fail(error);
  results.push_back(getTensorType(context, shape, q.getElementType()));
  return success();
}

RankedTensorType AttentionOp::getScoresType() {
  RankedTensorType q = getQuery().getType();
  Extents shape = *getExtents(q);
  shape.back() = (*getExtents(getKey().getType()))[q.getRank() - 2];
  return getTensorType(getContext(), shape, q.getElementType());
}

Value mlir::flow::buildAttentionProbabilities(OpBuilder &b, Location loc,
                                              AttentionOp op) {
  RankedTensorType scoresType = op.getScoresType();
  Type element = scoresType.getElementType();
  auto scalar = [&](double v) -> Value {
    auto t = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getFloatAttr(element, v)));
  };
  double inf = std::numeric_limits<double>::infinity();
  Value scores = MatmulOp::create(b, loc, op.getQuery(), op.getKey(),
                                  /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true,
                                  /*accumulate_f32=*/false);
  scores =
      MulOp::create(b, loc, scores, scalar(op.getScale().convertToDouble()));
  Value hidden = scalar(-inf);
  if (Value mask = op.getMask()) {
    if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
      scores = SelectOp::create(b, loc, mask, scores, hidden);
    else
      scores = AddOp::create(b, loc, scores, mask);
  }
  if (op.getCausal()) {
    int64_t rank = scoresType.getRank();
    int64_t lq = scoresType.getDimSize(rank - 2);
    int64_t lk = scoresType.getDimSize(rank - 1);
    SmallVector<bool> keep(lq * lk);
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        keep[i * lk + j] = j <= i;
    auto type = RankedTensorType::get({lq, lk}, b.getI1Type());
    Value tril = ConstantOp::create(b, loc, DenseElementsAttr::get(type, keep));
    scores = SelectOp::create(b, loc, tril, scores, hidden);
  }
  int64_t axis = scoresType.getRank() - 1;
  Value probs = SoftmaxOp::create(b, loc, scores, axis);
  // A causal mask keeps each query's first key; any other mask may hide
  // every key from a query: its row is zeros, not 0/0.
  if (op.getMask()) {
    Value peak = ReduceMaxOp::create(b, loc, scores, ArrayRef<int64_t>{axis},
                                     /*keepdims=*/true);
    Value empty = CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq),
        peak, hidden);
    probs = SelectOp::create(b, loc, empty, scalar(0), probs);
  }
  return probs;
}

Value mlir::flow::expandAttention(OpBuilder &b, AttentionOp op) {
  Value probs = buildAttentionProbabilities(b, op.getLoc(), op);
  return MatmulOp::create(b, op.getLoc(), probs, op.getValue(),
                          /*transpose_lhs=*/false, /*transpose_rhs=*/false,
                          /*accumulate_f32=*/false);
}
