//===- DataMovement.cpp - Data movement ops to linalg ---------------------===//
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
// Data movement
//===----------------------------------------------------------------------===//

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct AnnotateLowering : OpConversionPattern<AnnotateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AnnotateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// Row-major reshape: collapse to 1-D, then expand to the result shape.
struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value v = adaptor.getInput();
    RankedTensorType in = tensorType(v), out = tensorType(op);
    auto all = [](int64_t rank) {
      ReassociationIndices r;
      for (int64_t i = 0; i < rank; ++i)
        r.push_back(i);
      return SmallVector<ReassociationIndices>{r};
    };
    if (in.getRank() == 0) {
      v = tensor::ExpandShapeOp::create(rewriter, loc, out, v,
                                        SmallVector<ReassociationIndices>{});
    } else if (out.getRank() == 0) {
      v = tensor::CollapseShapeOp::create(rewriter, loc, out, v,
                                          SmallVector<ReassociationIndices>{});
    } else {
      if (in.getRank() > 1)
        v = tensor::CollapseShapeOp::create(rewriter, loc, v,
                                            all(in.getRank()));
      if (out.getRank() > 1)
        v = tensor::ExpandShapeOp::create(rewriter, loc, out, v,
                                          all(out.getRank()));
    }
    rewriter.replaceOp(op, v);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op);
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(),
                             type.getElementType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       adaptor.getInput(), init,
                                                       op.getPermutation())
                               .getResult());
    return success();
  }
};

struct BroadcastToLowering : OpConversionPattern<BroadcastToOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastToOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op);
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(),
                                            adaptor.getInput(), type.getShape(),
                                            type.getElementType(),
                                            [](OpBuilder &, Location,
                                               ValueRange a) { return a[0]; }));
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op);
    Value result =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    int64_t offset = 0, axis = op.getAxis();
    for (Value in : adaptor.getInputs()) {
      ArrayRef<int64_t> shape = tensorType(in).getShape();
      if (tensorType(in).getNumElements() == 0)
        continue; // Nothing to insert (and its offset may be past the end).
      SmallVector<OpFoldResult> offsets(shape.size(), rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides;
      for (int64_t d : shape) {
        sizes.push_back(rewriter.getIndexAttr(d));
        strides.push_back(rewriter.getIndexAttr(1));
      }
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result, offsets,
                                             sizes, strides);
      offset += shape[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// reverse: a copy reading index dim - 1 - i along each reversed axis.
struct ReverseLowering : OpConversionPattern<ReverseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReverseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    unsigned rank = type.getRank();
    SmallVector<AffineExpr> reads;
    for (unsigned d = 0; d < rank; ++d) {
      AffineExpr index = getAffineDimExpr(d, ctx);
      if (llvm::is_contained(op.getAxes(), static_cast<int64_t>(d)))
        index = getAffineConstantExpr(type.getDimSize(d) - 1, ctx) - index;
      reads.push_back(index);
    }
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, reads, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(),
                             type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), TypeRange{type}, ValueRange{adaptor.getInput()},
        ValueRange{init}, maps, iters,
        [](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l, a[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op);
    if (type.getNumElements() == 0) {
      // An empty slice may start at the end of a dimension, which
      // tensor.extract_slice rejects.
      rewriter.replaceOp(op, emptyTensor(rewriter, op.getLoc(), type.getShape(),
                                         type.getElementType()));
      return success();
    }
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [start, size, stride] :
         llvm::zip(op.getStarts(), type.getShape(), op.getStrides())) {
      offsets.push_back(rewriter.getIndexAttr(start));
      sizes.push_back(rewriter.getIndexAttr(size));
      strides.push_back(rewriter.getIndexAttr(stride));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(), offsets, sizes, strides);
    return success();
  }
};

/// result[i.., j.., k..] = input[i.., clamp(indices[j..]), k..]. Indices
/// outside [0, dim) are clamped into range so no access leaves the tensor.
/// An index value (i32 or i64) as an `index` clamped into [0, dimSize), so
/// that no gather reads outside its input.
Value clampedIndex(OpBuilder &b, Location l, Value raw, int64_t dimSize) {
  Value idx = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value last =
      arith::ConstantIndexOp::create(b, l, std::max<int64_t>(0, dimSize - 1));
  return arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, idx, zero),
                                last);
}

/// A block at offsets read from a tensor, each clamped so that the block
/// lies in the input: over the result's positions, the input element at the
/// position plus the offsets (read inside the loop, as a gather reads its
/// indices, so that a GPU kernel's threads read them too).
struct DynamicSliceLowering : OpConversionPattern<DynamicSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op);
    RankedTensorType in = tensorType(adaptor.getInput());
    Value input = adaptor.getInput(), offsets = adaptor.getOffsets();
    int64_t rank = type.getRank();
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(rank, getContext())};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{init}, maps,
        iters, [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> at;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(b, l, d);
            int64_t last = in.getDimSize(d) - type.getDimSize(d);
            if (last > 0) {
              Value raw = tensor::ExtractOp::create(
                  b, l, offsets,
                  ValueRange{arith::ConstantIndexOp::create(b, l, d)});
              // An offset in [0, last], as a gather clamps an index.
              i = arith::AddIOp::create(b, l, i,
                                        clampedIndex(b, l, raw, last + 1));
            }
            at.push_back(i);
          }
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, input, at).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    Value input = adaptor.getInput();
    RankedTensorType inType = tensorType(input);
    int64_t axis = op.getAxis(),
            idxRank = tensorType(adaptor.getIndices()).getRank(),
            rank = type.getRank();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < idxRank; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, idxExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    int64_t dimSize = inType.getDimSize(axis);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{adaptor.getIndices()},
        ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value idx = clampedIndex(b, l, a[0], dimSize);
          SmallVector<Value> coords;
          for (int64_t j = 0; j < inType.getRank(); ++j) {
            if (j < axis)
              coords.push_back(linalg::IndexOp::create(b, l, j));
            else if (j == axis)
              coords.push_back(idx);
            else
              coords.push_back(linalg::IndexOp::create(b, l, j - 1 + idxRank));
          }
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, input, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// gather_elements: over the result's (the indices') positions, the input
/// element at the same coordinates with the axis one from the index.
struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    RankedTensorType type = tensorType(op);
    Value input = adaptor.getInput();
    int64_t axis = op.getAxis(), rank = type.getRank();
    int64_t dimSize = tensorType(input).getDimSize(axis);
    SmallVector<AffineMap> maps(2,
                                AffineMap::getMultiDimIdentityMap(rank, ctx));
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{adaptor.getIndices()},
        ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value idx = clampedIndex(b, l, a[0], dimSize);
          SmallVector<Value> coords;
          for (int64_t j = 0; j < rank; ++j)
            coords.push_back(
                j == axis ? idx : (Value)linalg::IndexOp::create(b, l, j));
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, input, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// The bounds of an scf loop nest over [0, dims[i]) with step 1.
struct LoopBounds {
  SmallVector<Value> lbs, ubs, steps;
};
LoopBounds loopBounds(OpBuilder &b, Location loc, ArrayRef<int64_t> dims) {
  LoopBounds bounds;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d : dims) {
    bounds.lbs.push_back(zero);
    bounds.ubs.push_back(arith::ConstantIndexOp::create(b, loc, d));
    bounds.steps.push_back(one);
  }
  return bounds;
}

/// Rows at least this long sort by merging (n log n comparisons, one row
/// after another); shorter ones by counting ranks (n * n comparisons, all
/// of them parallel).
constexpr int64_t kMergeSortFrom = 128;

/// A stable bottom-up merge sort of `values` (with their `indices`) along
/// `axis`, row by row: pass p merges neighbouring runs of 2^p elements
/// from one pair of tensors into the other, taking the right run's element
/// only when it sorts strictly before the left run's (`before`), so equal
/// elements keep their order. The passes go in pairs (a into b, b back into
/// a) so that the loops carry each tensor in place; a pair whose first pass
/// already covers the row copies it back unchanged.
std::pair<Value, Value>
mergeSortRows(OpBuilder &b, Location loc, Value values, Value indices,
              int64_t axis,
              function_ref<Value(OpBuilder &, Location, Value, Value)> before) {
  auto type = cast<RankedTensorType>(values.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t n = shape[axis];
  int64_t passes = llvm::Log2_64_Ceil(n);
  auto c = [&](OpBuilder &ob, Location l, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, l, v);
  };
  // The loops over rows: every dimension but the axis.
  SmallVector<int64_t> rowShape(shape);
  rowShape.erase(rowShape.begin() + axis);
  LoopBounds rows = loopBounds(b, loc, rowShape);
  Value scratchValues = emptyTensor(b, loc, shape, type.getElementType());
  Value scratchIndices = emptyTensor(b, loc, shape, b.getI64Type());
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, rows.lbs, rows.ubs, rows.steps,
      ValueRange{values, indices, scratchValues, scratchIndices},
      [&](OpBuilder &rb, Location l, ValueRange at,
          ValueRange row) -> scf::ValueVector {
        auto coords = [&](Value i) {
          SmallVector<Value> to(at);
          to.insert(to.begin() + axis, i);
          return to;
        };
        Value nV = c(rb, l, n), last = c(rb, l, n - 1);
        // One pass: runs of `width` in (srcV, srcI) merged into (dstV, dstI).
        auto pass = [&](OpBuilder &pb, Location pl, Value srcV, Value srcI,
                        Value dstV, Value dstI,
                        Value width) -> std::pair<Value, Value> {
          Value pair = arith::MulIOp::create(pb, pl, width, c(pb, pl, 2));
          auto blocks = scf::ForOp::create(
              pb, pl, c(pb, pl, 0), nV, pair, ValueRange{dstV, dstI},
              [&](OpBuilder &bb, Location bl, Value lo, ValueRange dst) {
                Value mid = arith::MinSIOp::create(
                    bb, bl, arith::AddIOp::create(bb, bl, lo, width), nV);
                Value hi = arith::MinSIOp::create(
                    bb, bl, arith::AddIOp::create(bb, bl, lo, pair), nV);
                auto merge = scf::ForOp::create(
                    bb, bl, lo, hi, c(bb, bl, 1),
                    ValueRange{lo, mid, dst[0], dst[1]},
                    [&](OpBuilder &mb, Location ml, Value k, ValueRange it) {
                      Value i = it[0], j = it[1];
                      Value ic = arith::MinSIOp::create(mb, ml, i, last);
                      Value jc = arith::MinSIOp::create(mb, ml, j, last);
                      Value left =
                          tensor::ExtractOp::create(mb, ml, srcV, coords(ic));
                      Value right =
                          tensor::ExtractOp::create(mb, ml, srcV, coords(jc));
                      using P = arith::CmpIPredicate;
                      Value rightLeft =
                          arith::CmpIOp::create(mb, ml, P::slt, j, hi);
                      Value leftDone =
                          arith::CmpIOp::create(mb, ml, P::sge, i, mid);
                      Value take = arith::AndIOp::create(
                          mb, ml, rightLeft,
                          arith::OrIOp::create(mb, ml, leftDone,
                                               before(mb, ml, right, left)));
                      Value from =
                          arith::SelectOp::create(mb, ml, take, jc, ic);
                      Value v =
                          arith::SelectOp::create(mb, ml, take, right, left);
                      Value x =
                          tensor::ExtractOp::create(mb, ml, srcI, coords(from));
                      Value one = c(mb, ml, 1), zero = c(mb, ml, 0);
                      Value di =
                          arith::SelectOp::create(mb, ml, take, zero, one);
                      Value dj =
                          arith::SelectOp::create(mb, ml, take, one, zero);
                      scf::YieldOp::create(
                          mb, ml,
                          ValueRange{arith::AddIOp::create(mb, ml, i, di),
                                     arith::AddIOp::create(mb, ml, j, dj),
                                     tensor::InsertOp::create(mb, ml, v, it[2],
                                                              coords(k)),
                                     tensor::InsertOp::create(mb, ml, x, it[3],
                                                              coords(k))});
                    });
                scf::YieldOp::create(
                    bb, bl, ValueRange{merge.getResult(2), merge.getResult(3)});
              });
          return {blocks.getResult(0), blocks.getResult(1)};
        };
        auto pairs = scf::ForOp::create(
            rb, l, c(rb, l, 0), c(rb, l, (passes + 1) / 2), c(rb, l, 1),
            ValueRange(row),
            [&](OpBuilder &qb, Location ql, Value q, ValueRange it) {
              // width = 4^q, then 2 * 4^q.
              Value width = arith::ShLIOp::create(
                  qb, ql, c(qb, ql, 1),
                  arith::MulIOp::create(qb, ql, q, c(qb, ql, 2)));
              auto [bV, bI] = pass(qb, ql, it[0], it[1], it[2], it[3], width);
              auto [aV, aI] =
                  pass(qb, ql, bV, bI, it[0], it[1],
                       arith::MulIOp::create(qb, ql, width, c(qb, ql, 2)));
              scf::YieldOp::create(qb, ql, ValueRange{aV, aI, bV, bI});
            });
        return {pairs.getResult(0), pairs.getResult(1), pairs.getResult(2),
                pairs.getResult(3)};
      });
  return {nest.results[0], nest.results[1]};
}

/// sort: rows of kMergeSortFrom elements or more by mergeSortRows; shorter
/// ones by counting: each element's rank is the number of elements that
/// sort before it (smaller, or equal and earlier: a stable order; NaN the
/// largest), n * n parallel comparisons per row; then each element and its
/// index are stored at their rank.
struct SortLowering : OpConversionPattern<SortOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SortOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value input = adaptor.getInput();
    RankedTensorType inType = tensorType(input);
    Type elt = inType.getElementType();
    int64_t rank = inType.getRank(), axis = op.getAxis();
    bool isUnsigned = unsignedOperands(op), descending = op.getDescending();
    ArrayRef<int64_t> shape = inType.getShape();
    Type i64 = rewriter.getI64Type();
    // Loops: the input's dimensions, then one more (k) along the axis.
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> own, other;
    for (int64_t i = 0; i < rank; ++i) {
      own.push_back(d(i));
      other.push_back(i == axis ? d(rank) : d(i));
    }
    AffineMap ownMap = AffineMap::get(rank + 1, 0, own, ctx);
    AffineMap otherMap = AffineMap::get(rank + 1, 0, other, ctx);
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    iters.push_back(IteratorType::reduction);
    Value zeros =
        filledTensor(rewriter, loc, shape, rewriter.getI64IntegerAttr(0));

    // a < b in the sort's order (NaN the largest), and a == b.
    auto less = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isa<FloatType>(elt)) {
        x = widen(b, l, x);
        y = widen(b, l, y);
        using P = arith::CmpFPredicate;
        Value lt = arith::CmpFOp::create(b, l, P::OLT, x, y);
        Value xNumber = arith::CmpFOp::create(b, l, P::ORD, x, x);
        Value yNaN = arith::CmpFOp::create(b, l, P::UNO, y, y);
        return arith::OrIOp::create(b, l, lt,
                                    arith::AndIOp::create(b, l, xNumber, yNaN));
      }
      return arith::CmpIOp::create(b, l,
                                   isUnsigned ? arith::CmpIPredicate::ult
                                              : arith::CmpIPredicate::slt,
                                   x, y);
    };
    auto equal = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isa<FloatType>(elt)) {
        x = widen(b, l, x);
        y = widen(b, l, y);
        using P = arith::CmpFPredicate;
        Value eq = arith::CmpFOp::create(b, l, P::OEQ, x, y);
        Value bothNaN = arith::AndIOp::create(
            b, l, arith::CmpFOp::create(b, l, P::UNO, x, x),
            arith::CmpFOp::create(b, l, P::UNO, y, y));
        return arith::OrIOp::create(b, l, eq, bothNaN);
      }
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, y);
    };

    if (shape[axis] >= kMergeSortFrom) {
      // The indices start as 0, 1, ... along the axis.
      SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx)};
      auto iota = linalg::GenericOp::create(
          rewriter, loc, TypeRange{zeros.getType()}, ValueRange{},
          ValueRange{zeros}, maps,
          SmallVector<IteratorType>(rank, IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange) {
            Value i = linalg::IndexOp::create(b, l, axis);
            linalg::YieldOp::create(
                b, l, arith::IndexCastOp::create(b, l, i64, i).getResult());
          });
      auto [values, indices] = mergeSortRows(
          rewriter, loc, input, iota.getResult(0), axis,
          [&](OpBuilder &b, Location l, Value x, Value y) {
            return descending ? less(b, l, y, x) : less(b, l, x, y);
          });
      rewriter.replaceOp(op, ValueRange{values, indices});
      return success();
    }

    // ranks[.., i, ..] = #{k : x[.., k, ..] sorts before x[.., i, ..]}.
    auto ranks = linalg::GenericOp::create(
        rewriter, loc, TypeRange{zeros.getType()}, ValueRange{input, input},
        ValueRange{zeros}, {ownMap, otherMap, ownMap}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value x = a[0], y = a[1];
          Value i = linalg::IndexOp::create(b, l, axis);
          Value k = linalg::IndexOp::create(b, l, rank);
          Value strictly = descending ? less(b, l, x, y) : less(b, l, y, x);
          Value earlier = arith::AndIOp::create(
              b, l, equal(b, l, x, y),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, k, i));
          Value before = arith::OrIOp::create(b, l, strictly, earlier);
          Value one = arith::ExtUIOp::create(b, l, i64, before);
          linalg::YieldOp::create(
              b, l, arith::AddIOp::create(b, l, a[2], one).getResult());
        });
    // Each element goes to its rank: indices[.., r, ..] = k and
    // values[.., r, ..] = x[.., k, ..] where r = ranks[.., k, ..]; a loop
    // over the elements, n stores per row (the ranks are a permutation).
    LoopBounds all = loopBounds(rewriter, loc, shape);
    Value rankOf = ranks.getResult(0);
    scf::LoopNest placed = scf::buildLoopNest(
        rewriter, loc, all.lbs, all.ubs, all.steps,
        ValueRange{emptyTensor(rewriter, loc, shape, elt), zeros},
        [&](OpBuilder &b, Location l, ValueRange at,
            ValueRange acc) -> scf::ValueVector {
          Value r = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              tensor::ExtractOp::create(b, l, rankOf, at));
          SmallVector<Value> to(at);
          to[axis] = r;
          Value k = arith::IndexCastOp::create(b, l, i64, at[axis]);
          Value x = tensor::ExtractOp::create(b, l, input, at);
          return {tensor::InsertOp::create(b, l, x, acc[0], to).getResult(),
                  tensor::InsertOp::create(b, l, k, acc[1], to).getResult()};
        });
    rewriter.replaceOp(op, placed.results);
    return success();
  }
};

/// scatter_nd: a loop over the index tuples (in order, so a later update
/// of one slice wins) and, for each tuple in bounds, over its slice, each
/// element read, combined and inserted into the result carried by the
/// loops. One-shot bufferization turns the inserts into stores in place.
struct ScatterNdLowering : OpConversionPattern<ScatterNdOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterNdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    RankedTensorType inType = tensorType(input), idxType = tensorType(indices);
    int64_t q = idxType.getShape().back();
    Type elt = inType.getElementType(), idxElt = idxType.getElementType();
    ScatterReduction kind = op.getReduction();
    bool isUnsigned = unsignedOperands(op);
    auto c = [&](OpBuilder &b, Location l, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, l, v);
    };
    // The element ops' own arithmetic (f16 and bf16 in f32).
    auto combine = [&](OpBuilder &b, Location l, Value old,
                       Value update) -> Value {
      Value both[] = {old, update};
      bool isFloat = isa<FloatType>(elt);
      switch (kind) {
      case ScatterReduction::none:
        return update;
      case ScatterReduction::add:
        return binary<arith::AddFOp, arith::AddIOp>(b, l, both);
      case ScatterReduction::mul:
        return binary<arith::MulFOp, arith::MulIOp>(b, l, both);
      case ScatterReduction::max:
        return isFloat ? binary<arith::MaximumFOp, arith::MaxSIOp>(b, l, both)
                       : intMax(b, l, old, update, isUnsigned);
      case ScatterReduction::min:
        return isFloat ? binary<arith::MinimumFOp, arith::MinSIOp>(b, l, both)
                       : intMin(b, l, old, update, isUnsigned);
      }
      llvm_unreachable("unknown scatter reduction");
    };

    LoopBounds rows = loopBounds(rewriter, loc, idxType.getShape().drop_back());
    scf::LoopNest tuples = scf::buildLoopNest(
        rewriter, loc, rows.lbs, rows.ubs, rows.steps, ValueRange{input},
        [&](OpBuilder &b, Location l, ValueRange row,
            ValueRange acc) -> scf::ValueVector {
          // The tuple's coordinates, and whether all are in bounds.
          SmallVector<Value> coords;
          Value inBounds;
          for (int64_t t = 0; t < q; ++t) {
            SmallVector<Value> at(row);
            at.push_back(c(b, l, t));
            Value v = tensor::ExtractOp::create(b, l, indices, at);
            Value low = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                              v, intConst(b, l, idxElt, 0));
            Value high = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, v,
                intConst(b, l, idxElt, inType.getDimSize(t)));
            Value ok = arith::AndIOp::create(b, l, low, high);
            inBounds =
                inBounds ? arith::AndIOp::create(b, l, inBounds, ok) : ok;
            coords.push_back(
                arith::IndexCastOp::create(b, l, b.getIndexType(), v));
          }
          auto ifOp = scf::IfOp::create(
              b, l, inBounds,
              [&](OpBuilder &tb, Location tl) {
                LoopBounds cols =
                    loopBounds(tb, tl, inType.getShape().drop_front(q));
                scf::LoopNest slice = scf::buildLoopNest(
                    tb, tl, cols.lbs, cols.ubs, cols.steps, acc,
                    [&](OpBuilder &sb, Location sl, ValueRange pos,
                        ValueRange inner) -> scf::ValueVector {
                      SmallVector<Value> at(coords), from(row);
                      llvm::append_range(at, pos);
                      llvm::append_range(from, pos);
                      Value update =
                          tensor::ExtractOp::create(sb, sl, updates, from);
                      Value next = update;
                      if (kind != ScatterReduction::none)
                        next = combine(
                            sb, sl,
                            tensor::ExtractOp::create(sb, sl, inner[0], at),
                            update);
                      return {
                          tensor::InsertOp::create(sb, sl, next, inner[0], at)
                              .getResult()};
                    });
                scf::YieldOp::create(tb, tl, slice.results);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, acc);
              });
          return {ifOp.getResult(0)};
        });
    rewriter.replaceOp(op, tuples.results);
    return success();
  }
};

struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op);
    Type elt = type.getElementType();
    double value = op.getValue().convertToDouble();
    Value pad = elt.isInteger(1) ? intConst(rewriter, loc, elt, value != 0)
                                 : numConst(rewriter, loc, elt, value);
    SmallVector<OpFoldResult> low, high;
    for (auto [l, h] : llvm::zip(op.getLow(), op.getHigh())) {
      low.push_back(rewriter.getIndexAttr(l));
      high.push_back(rewriter.getIndexAttr(h));
    }
    rewriter.replaceOpWithNewOp<tensor::PadOp>(op, type, adaptor.getInput(),
                                               low, high, pad);
    return success();
  }
};

} // namespace

void mlir::flow::tolinalg::populateDataMovementLowerings(
    RewritePatternSet &patterns) {
  patterns.add<ConstantLowering, AnnotateLowering, ReshapeLowering,
               TransposeLowering, BroadcastToLowering, ConcatLowering,
               SliceLowering, DynamicSliceLowering, ReverseLowering,
               GatherLowering, GatherElementsLowering, ScatterNdLowering,
               SortLowering, PadLowering>(patterns.getContext());
}
