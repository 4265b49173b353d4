//===- Reductions.cpp - Reductions, norms and pools to linalg -------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::tolinalg;

namespace {

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

struct ReduceSumLowering : OpConversionPattern<ReduceSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value sum = reduceSum(rewriter, op.getLoc(), adaptor.getInput(),
                          op.getAxes(), op.getKeepdims());
    rewriter.replaceOp(op, castTensor(rewriter, op.getLoc(), sum,
                                      tensorType(op).getElementType()));
    return success();
  }
};

struct ReduceMeanLowering : OpConversionPattern<ReduceMeanOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceMeanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value sum = reduceSum(rewriter, loc, adaptor.getInput(), op.getAxes(),
                          op.getKeepdims());
    int64_t count = 1;
    for (int64_t a : op.getAxes())
      count *= tensorType(adaptor.getInput()).getDimSize(a);
    RankedTensorType type = tensorType(op);
    Value mean = buildElementwise(
        rewriter, loc, sum, type.getShape(), type.getElementType(),
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value n = floatConst(b, l, a[0].getType(), (double)count);
          return narrow(b, l, arith::DivFOp::create(b, l, a[0], n),
                        type.getElementType());
        });
    rewriter.replaceOp(op, mean);
    return success();
  }
};

struct ReduceMaxLowering : OpConversionPattern<ReduceMaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceMaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reduceMax(rewriter, op.getLoc(), adaptor.getInput(),
                                     op.getAxes(), op.getKeepdims(),
                                     unsignedOperands(op)));
    return success();
  }
};

/// cumsum: a reduction over a second index k of the axis, adding the
/// elements whose k is on the summed side of the result's index i.
struct CumsumLowering : OpConversionPattern<CumsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CumsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    Type elt = type.getElementType(), acc = computeType(elt);
    unsigned rank = type.getRank(), axis = op.getAxis();
    SmallVector<AffineExpr> reads;
    for (unsigned d = 0; d < rank; ++d)
      reads.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    // Dimensions 0..rank-1 index the result, dimension `rank` is k.
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank + 1, 0, reads, ctx),
        AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank)};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    iters.push_back(IteratorType::reduction);
    TypedAttr zero = isa<FloatType>(acc)
                         ? (TypedAttr)rewriter.getFloatAttr(acc, 0.0)
                         : (TypedAttr)rewriter.getIntegerAttr(acc, 0);
    Value init = filledTensor(rewriter, loc, type.getShape(), zero);
    arith::CmpIPredicate keep =
        op.getReverse() ? (op.getExclusive() ? arith::CmpIPredicate::ugt
                                             : arith::CmpIPredicate::uge)
                        : (op.getExclusive() ? arith::CmpIPredicate::ult
                                             : arith::CmpIPredicate::ule);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{adaptor.getInput()}, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value i = linalg::IndexOp::create(b, l, axis);
          Value k = linalg::IndexOp::create(b, l, rank);
          Value inRange = arith::CmpIOp::create(b, l, keep, k, i);
          Value x = widen(b, l, a[0]);
          Value none = arith::ConstantOp::create(b, l, zero);
          Value term = arith::SelectOp::create(b, l, inRange, x, none);
          Value sum = isa<FloatType>(acc)
                          ? (Value)arith::AddFOp::create(b, l, a[1], term)
                          : (Value)arith::AddIOp::create(b, l, a[1], term);
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(op,
                       castTensor(rewriter, loc, generic.getResult(0), elt));
    return success();
  }
};

/// argmax / argmin: one reduction carrying the best value and its index.
/// A candidate replaces the best when strictly better (or equal, for the
/// last index), or when it is the first NaN.
template <typename OpTy, bool isMax>
struct ArgReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = this->getContext();
    Value input = adaptor.getInput();
    RankedTensorType inType = tensorType(input);
    Type elt = inType.getElementType();
    int64_t rank = inType.getRank(), axis = op.getAxis();
    bool last = op.getSelectLastIndex();
    SmallVector<AffineExpr> outExprs;
    SmallVector<IteratorType> iters;
    for (int64_t d = 0; d < rank; ++d) {
      iters.push_back(d == axis ? IteratorType::reduction
                                : IteratorType::parallel);
      if (d != axis)
        outExprs.push_back(getAffineDimExpr(d, ctx));
      else if (op.getKeepdims())
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    }
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   outMap, outMap};
    ArrayRef<int64_t> shape = tensorType(op).getShape();
    bool isUnsigned = unsignedOperands(op);
    TypedAttr worst = isMax ? lowestAttr(rewriter, elt, isUnsigned)
                            : highestAttr(rewriter, elt, isUnsigned);
    Value bestInit = filledTensor(rewriter, loc, shape, worst);
    Value indexInit =
        filledTensor(rewriter, loc, shape, rewriter.getI64IntegerAttr(0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{bestInit.getType(), indexInit.getType()},
        ValueRange{input}, ValueRange{bestInit, indexInit}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = a[0], best = a[1], bestIndex = a[2];
          Value k = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value take;
          if (isa<FloatType>(elt)) {
            using P = arith::CmpFPredicate;
            P better =
                isMax ? (last ? P::OGE : P::OGT) : (last ? P::OLE : P::OLT);
            Value wins = arith::CmpFOp::create(b, l, better, x, best);
            Value xNaN = arith::CmpFOp::create(b, l, P::UNO, x, x);
            Value bestNaN = arith::CmpFOp::create(b, l, P::UNO, best, best);
            Value notBestNaN = arith::XOrIOp::create(
                b, l, bestNaN,
                arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
            take = arith::OrIOp::create(
                b, l, wins, arith::AndIOp::create(b, l, xNaN, notBestNaN));
          } else {
            using P = arith::CmpIPredicate;
            P better = isUnsigned ? (isMax ? (last ? P::uge : P::ugt)
                                           : (last ? P::ule : P::ult))
                                  : (isMax ? (last ? P::sge : P::sgt)
                                           : (last ? P::sle : P::slt));
            take = arith::CmpIOp::create(b, l, better, x, best);
          }
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, take, x, best),
                         arith::SelectOp::create(b, l, take, k, bestIndex)});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

/// softmax and log_softmax: m = max(x); s = sum(exp(x - m)); then
/// exp(x - m) / s, or x - m - log(s).
template <typename OpTy, bool isLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    RankedTensorType type = tensorType(x);
    Type elt = type.getElementType(), f = computeType(elt);
    int64_t axis = op.getAxis();
    Value max = reduceMax(rewriter, loc, x, axis, /*keepdims=*/true);
    Value sum =
        buildReduce(rewriter, loc, ValueRange{x, max}, axis, /*keepdims=*/true,
                    rewriter.getFloatAttr(f, 0.0),
                    [&](OpBuilder &b, Location l, Value a, ValueRange args) {
                      Value shifted = arith::SubFOp::create(
                          b, l, widen(b, l, args[0]), widen(b, l, args[1]));
                      return (Value)arith::AddFOp::create(
                          b, l, a, math::ExpOp::create(b, l, shifted));
                    });
    Value r = buildElementwise(
        rewriter, loc, ValueRange{x, max, sum}, type.getShape(), elt,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value shifted =
              arith::SubFOp::create(b, l, widen(b, l, a[0]), widen(b, l, a[1]));
          Value y;
          if (isLog)
            y = arith::SubFOp::create(b, l, shifted,
                                      math::LogOp::create(b, l, a[2]));
          else
            y = arith::DivFOp::create(b, l, math::ExpOp::create(b, l, shifted),
                                      a[2]);
          return narrow(b, l, y, elt);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

SmallVector<int64_t> trailingAxes(int64_t axis, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

int64_t countOver(RankedTensorType type, ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= type.getDimSize(a);
  return n;
}

/// Builds `(x - mean) * rsqrt(var + eps) * weight + bias` (layer norm) or
/// `x * rsqrt(meansq + eps) * weight` (RMS norm, `centered` false).
Value normalize(OpBuilder &rewriter, Location loc, Value x, Value weight,
                Value bias, int64_t axis, double epsilon, bool centered) {
  RankedTensorType type = tensorType(x);
  Type elt = type.getElementType(), f = computeType(elt);
  SmallVector<int64_t> axes = trailingAxes(axis, type.getRank());
  double n = (double)countOver(type, axes);
  Value mean;
  if (centered)
    mean = reduceSum(rewriter, loc, x, axes, /*keepdims=*/true);
  // Sum of squares of x (or of x - mean).
  SmallVector<Value> sqInputs = {x};
  if (centered)
    sqInputs.push_back(mean);
  Value sq = buildReduce(
      rewriter, loc, sqInputs, axes, /*keepdims=*/true,
      rewriter.getFloatAttr(f, 0.0),
      [&](OpBuilder &b, Location l, Value a, ValueRange args) {
        Value v = widen(b, l, args[0]);
        if (centered)
          v = arith::SubFOp::create(
              b, l, v,
              arith::DivFOp::create(b, l, args[1], floatConst(b, l, f, n)));
        return (Value)arith::AddFOp::create(b, l, a,
                                            arith::MulFOp::create(b, l, v, v));
      });
  SmallVector<Value> inputs = {x, sq};
  if (centered)
    inputs.push_back(mean);
  int64_t weightIndex = weight ? inputs.size() : -1;
  if (weight)
    inputs.push_back(weight);
  int64_t biasIndex = bias ? inputs.size() : -1;
  if (bias)
    inputs.push_back(bias);
  return buildElementwise(
      rewriter, loc, inputs, type.getShape(), elt,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value count = floatConst(b, l, f, n);
        Value v = widen(b, l, a[0]);
        if (centered)
          v = arith::SubFOp::create(b, l, v,
                                    arith::DivFOp::create(b, l, a[2], count));
        Value var = arith::DivFOp::create(b, l, a[1], count);
        Value scale = math::RsqrtOp::create(
            b, l,
            arith::AddFOp::create(b, l, var, floatConst(b, l, f, epsilon)));
        Value y = arith::MulFOp::create(b, l, v, scale);
        if (weightIndex >= 0)
          y = arith::MulFOp::create(b, l, y, widen(b, l, a[weightIndex]));
        if (biasIndex >= 0)
          y = arith::AddFOp::create(b, l, y, widen(b, l, a[biasIndex]));
        return narrow(b, l, y, elt);
      });
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, normalize(rewriter, op.getLoc(), adaptor.getInput(),
                      adaptor.getWeight(), adaptor.getBias(), op.getAxis(),
                      op.getEpsilon().convertToDouble(), /*centered=*/true));
    return success();
  }
};

struct RmsNormLowering : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, normalize(rewriter, op.getLoc(), adaptor.getInput(),
                                     adaptor.getWeight(), Value(), op.getAxis(),
                                     op.getEpsilon().convertToDouble(),
                                     /*centered=*/false));
    return success();
  }
};

struct BatchNormLowering : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    int64_t rank = type.getRank();
    Type elt = type.getElementType(), f = computeType(elt);
    double eps = op.getEpsilon().convertToDouble();
    SmallVector<Value> inputs = {adaptor.getInput(), adaptor.getScale(),
                                 adaptor.getBias(), adaptor.getMean(),
                                 adaptor.getVariance()};
    AffineMap channel = AffineMap::get(rank, 0, getAffineDimExpr(1, ctx));
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    SmallVector<AffineMap> maps = {identity, channel, channel,
                                   channel,  channel, identity};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    Value init = emptyTensor(rewriter, loc, type.getShape(), elt);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = widen(b, l, a[0]), scale = widen(b, l, a[1]),
                bias = widen(b, l, a[2]), mean = widen(b, l, a[3]),
                var = widen(b, l, a[4]);
          Value inv = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, floatConst(b, l, f, eps)));
          Value y =
              arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, x, mean),
                                    arith::MulFOp::create(b, l, scale, inv));
          y = arith::AddFOp::create(b, l, y, bias);
          linalg::YieldOp::create(b, l, narrow(b, l, y, elt));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Pooling: a generic over (n, c, oh, ow, kh, kw) on the padded input.
template <typename OpTy, bool isMax>
struct PoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = tensorType(op.getResult());
    RankedTensorType inType = tensorType(adaptor.getInput());
    Type elt = type.getElementType(), f = computeType(elt);
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(),
                      p = op.getPadding();
    SmallVector<int64_t> dil = {1, 1};
    if constexpr (isMax)
      dil.assign(op.getDilations().begin(), op.getDilations().end());
    // With ceil_mode the last window may run past the end padding: pad
    // further so every window reads in bounds. Those extra positions never
    // count (-inf for max; excluded from the average's divisor).
    int64_t extra[2];
    for (int i = 0; i < 2; ++i) {
      int64_t need =
          (type.getDimSize(2 + i) - 1) * s[i] + dil[i] * (k[i] - 1) + 1;
      extra[i] = std::max<int64_t>(
          0, need - (inType.getDimSize(2 + i) + p[i] + p[i + 2]));
    }
    bool isUnsigned = unsignedOperands(op);
    TypedAttr padValue =
        isMax ? lowestAttr(rewriter, elt, isUnsigned)
              : (isa<FloatType>(elt)
                     ? (TypedAttr)rewriter.getFloatAttr(elt, 0)
                     : (TypedAttr)rewriter.getIntegerAttr(elt, 0));
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), p[0], p[1],
                             p[2] + extra[0], p[3] + extra[1], padValue);
    // Loops: n, c, oh (parallel), kh, kw (the window), ow (parallel,
    // innermost): each window tap sweeps a whole output row, so the row
    // stays in cache and the inner loop vectorizes. Each output element
    // still takes its taps in the same order (kh, then kw).
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap inMap = AffineMap::get(
        6, 0,
        {d(0), d(1), d(2) * s[0] + d(3) * dil[0], d(5) * s[1] + d(4) * dil[1]},
        ctx);
    // The window shape only feeds the iteration domain.
    Value window = emptyTensor(rewriter, loc, {k[0], k[1]}, f);
    AffineMap winMap = AffineMap::get(6, 0, {d(3), d(4)}, ctx);
    AffineMap outMap = AffineMap::get(6, 0, {d(0), d(1), d(2), d(5)}, ctx);
    SmallVector<IteratorType> iters(3, IteratorType::parallel);
    iters.append(2, IteratorType::reduction);
    iters.push_back(IteratorType::parallel);
    Type acc = isMax ? elt : f;
    TypedAttr init = isMax ? lowestAttr(rewriter, elt, isUnsigned)
                           : (TypedAttr)rewriter.getFloatAttr(f, 0.0);
    Value out = filledTensor(rewriter, loc, type.getShape(), init);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out.getType()}, ValueRange{input, window},
        ValueRange{out}, {inMap, winMap, outMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value r;
          if (isMax)
            r = isa<FloatType>(acc)
                    ? (Value)arith::MaximumFOp::create(b, l, a[2], a[0])
                    : intMax(b, l, a[2], a[0], isUnsigned);
          else
            r = arith::AddFOp::create(b, l, a[2], widen(b, l, a[0]));
          linalg::YieldOp::create(b, l, r);
        });
    Value result = generic.getResult(0);
    if constexpr (!isMax) {
      // Divide by the window size: PyTorch's rule, with
      // hstart = oh * s - pad_top, hend = min(hstart + k, H + pad_bottom),
      // and (without count_include_pad) both clamped to [0, H].
      bool includePad = op.getCountIncludePad();
      int64_t bounds[2] = {inType.getDimSize(2), inType.getDimSize(3)};
      result = buildElementwise(
          rewriter, loc, result, type.getShape(), elt,
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value count = intConst(b, l, b.getI64Type(), 1);
            for (int i = 0; i < 2; ++i) {
              Value o = arith::IndexCastOp::create(
                  b, l, b.getI64Type(),
                  linalg::IndexOp::create(b, l, 2 + i).getResult());
              auto c = [&](int64_t v) {
                return intConst(b, l, b.getI64Type(), v);
              };
              Value start = arith::SubIOp::create(
                  b, l, arith::MulIOp::create(b, l, o, c(s[i])), c(p[i]));
              Value end = arith::MinSIOp::create(
                  b, l, arith::AddIOp::create(b, l, start, c(k[i])),
                  c(bounds[i] + p[i + 2]));
              if (!includePad) {
                start = arith::MaxSIOp::create(b, l, start, c(0));
                end = arith::MinSIOp::create(b, l, end, c(bounds[i]));
              }
              count = arith::MulIOp::create(
                  b, l, count, arith::SubIOp::create(b, l, end, start));
            }
            Value n = arith::SIToFPOp::create(b, l, f, count);
            return narrow(b, l, arith::DivFOp::create(b, l, a[0], n), elt);
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::flow::tolinalg::populateReductionLowerings(
    RewritePatternSet &patterns) {
  patterns.add<
      ReduceSumLowering, ReduceMeanLowering, ReduceMaxLowering,
      SoftmaxLowering<SoftmaxOp, false>, SoftmaxLowering<LogSoftmaxOp, true>,
      LayerNormLowering, RmsNormLowering, BatchNormLowering,
      PoolLowering<MaxPool2dOp, true>, PoolLowering<AvgPool2dOp, false>,
      CumsumLowering, ArgReduceLowering<ArgmaxOp, true>,
      ArgReduceLowering<ArgminOp, false>>(patterns.getContext());
}
