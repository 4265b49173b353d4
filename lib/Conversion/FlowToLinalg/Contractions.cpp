//===- Contractions.cpp - Matmuls and convolutions to linalg --------------===//
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
// Contractions
//===----------------------------------------------------------------------===//

struct MatmulLowering : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op.getResult());
    int64_t rank = type.getRank(), batch = rank - 2;
    // Loops: batch dims, m, n, then k.
    AffineExpr m = getAffineDimExpr(batch, ctx),
               n = getAffineDimExpr(batch + 1, ctx),
               k = getAffineDimExpr(batch + 2, ctx);
    auto operandMap = [&](Value v, AffineExpr row, AffineExpr col,
                          bool transposed) {
      ArrayRef<int64_t> shape = tensorType(v).getShape();
      int64_t vb = shape.size() - 2;
      SmallVector<AffineExpr> exprs;
      for (int64_t i = 0; i < vb; ++i) {
        int64_t dim = batch - vb + i;
        exprs.push_back(shape[i] == 1 && type.getDimSize(dim) != 1
                            ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(dim, ctx));
      }
      exprs.push_back(transposed ? col : row);
      exprs.push_back(transposed ? row : col);
      return AffineMap::get(rank + 1, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (int64_t i = 0; i < rank; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {
        operandMap(adaptor.getLhs(), m, k, op.getTransposeLhs()),
        operandMap(adaptor.getRhs(), k, n, op.getTransposeRhs()),
        AffineMap::get(rank + 1, 0, outExprs, ctx)};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    iters.push_back(IteratorType::reduction);
    Type elt = type.getElementType(), acc = computeType(elt);
    TypedAttr zero = isa<FloatType>(acc)
                         ? (TypedAttr)rewriter.getFloatAttr(acc, 0.0)
                         : (TypedAttr)rewriter.getIntegerAttr(acc, 0);
    Value init = filledTensor(rewriter, loc, type.getShape(), zero);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{adaptor.getLhs(), adaptor.getRhs()}, ValueRange{init}, maps,
        iters, [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = widen(b, l, args[0]), y = widen(b, l, args[1]);
          Value r;
          if (isa<FloatType>(acc))
            r = arith::AddFOp::create(b, l, args[2],
                                      arith::MulFOp::create(b, l, x, y));
          else
            r = arith::AddIOp::create(b, l, args[2],
                                      arith::MulIOp::create(b, l, x, y));
          linalg::YieldOp::create(b, l, r);
        });
    rewriter.replaceOp(op,
                       castTensor(rewriter, loc, generic.getResult(0), elt));
    return success();
  }
};

struct Conv2dLowering : OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op.getResult());
    Type elt = type.getElementType(), acc = computeType(elt);
    ArrayRef<int64_t> pad = op.getPadding(), strides = op.getStrides(),
                      dil = op.getDilations();
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), pad[0], pad[1],
                             pad[2], pad[3], rewriter.getFloatAttr(elt, 0.0));
    ArrayRef<int64_t> w = tensorType(adaptor.getWeight()).getShape();
    int64_t groups = op.getGroups(), outPerGroup = w[0] / groups,
            inPerGroup = w[1];
    // Loops: n, o, oh, ow (parallel); c, kh, kw (reduction).
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap inMap = AffineMap::get(
        7, 0,
        {d(0), d(1).floorDiv(outPerGroup) * inPerGroup + d(4),
         d(2) * strides[0] + d(5) * dil[0], d(3) * strides[1] + d(6) * dil[1]},
        ctx);
    AffineMap wMap = AffineMap::get(7, 0, {d(1), d(4), d(5), d(6)}, ctx);
    AffineMap outMap = AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx);
    SmallVector<IteratorType> iters(4, IteratorType::parallel);
    iters.append(3, IteratorType::reduction);
    Value init;
    if (Value bias = adaptor.getBias())
      init = buildElementwise(rewriter, loc, bias, type.getShape(), acc,
                              [&](OpBuilder &b, Location l, ValueRange a) {
                                return widen(b, l, a[0]);
                              });
    else
      init = filledTensor(rewriter, loc, type.getShape(),
                          rewriter.getFloatAttr(acc, 0.0));
    // The bias [O] broadcasts along dim 1 of [N, O, OH, OW]: fix its map.
    if (adaptor.getBias()) {
      auto generic = init.getDefiningOp<linalg::GenericOp>();
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      maps[0] = AffineMap::get(4, 0, {d(1)}, ctx);
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    }
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{input, adaptor.getWeight()}, ValueRange{init},
        {inMap, wMap, outMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value prod = arith::MulFOp::create(b, l, widen(b, l, args[0]),
                                             widen(b, l, args[1]));
          Value sum = arith::AddFOp::create(b, l, args[2], prod);
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(op,
                       castTensor(rewriter, loc, generic.getResult(0), elt));
    return success();
  }
};

/// im2col: a copy over (n, c, i, j, y, x) reading the padded input at
/// (n, c, y * sh + i * dh, x * sw + j * dw).
struct Im2ColLowering : OpConversionPattern<Im2ColOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Im2ColOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    Type elt = type.getElementType();
    ArrayRef<int64_t> p = op.getPadding(), s = op.getStrides(),
                      dil = op.getDilations();
    TypedAttr zero = isa<FloatType>(elt)
                         ? (TypedAttr)rewriter.getFloatAttr(elt, 0.0)
                         : (TypedAttr)rewriter.getIntegerAttr(elt, 0);
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), p[0], p[1],
                             p[2], p[3], zero);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap inMap = AffineMap::get(
        6, 0,
        {d(0), d(1), d(4) * s[0] + d(2) * dil[0], d(5) * s[1] + d(3) * dil[1]},
        ctx);
    SmallVector<AffineMap> maps = {inMap,
                                   AffineMap::getMultiDimIdentityMap(6, ctx)};
    SmallVector<IteratorType> iters(6, IteratorType::parallel);
    Value init = emptyTensor(rewriter, loc, type.getShape(), elt);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{input}, ValueRange{init},
        maps, iters, [](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l, a[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void mlir::flow::tolinalg::populateContractionLowerings(
    RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, Conv2dLowering, Im2ColLowering>(
      patterns.getContext());
}
