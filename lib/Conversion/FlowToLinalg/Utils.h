//===- Utils.h - Helpers of the flow-to-linalg lowerings --------*- C++ -*-===//
//
// Part of the Flow project.
//
// Scalar and tensor helpers the lowerings of every op family share, and the
// families' pattern lists (private to lib/Conversion/FlowToLinalg).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_LIB_CONVERSION_FLOWTOLINALG_UTILS_H
#define FLOW_LIB_CONVERSION_FLOWTOLINALG_UTILS_H

#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir {
namespace flow {
namespace tolinalg {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;
using utils::IteratorType;

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

inline bool isHalf(Type t) { return t.isF16() || t.isBF16(); }

/// The type arithmetic on `t` is done in: f32 for f16/bf16, else `t`.
inline Type computeType(Type t) {
  return isHalf(t) ? Float32Type::get(t.getContext()) : t;
}

/// Widens a half-precision scalar to f32.
inline Value widen(OpBuilder &b, Location loc, Value v) {
  if (isHalf(v.getType()))
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

/// Rounds an f32 scalar back to the half type `t` (no-op otherwise).
inline Value narrow(OpBuilder &b, Location loc, Value v, Type t) {
  if (isHalf(t) && v.getType() != t)
    return arith::TruncFOp::create(b, loc, t, v);
  return v;
}

inline Value floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}

inline Value intConst(OpBuilder &b, Location loc, Type t, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v));
}

/// A scalar constant of numeric type `t` (float or integer).
inline Value numConst(OpBuilder &b, Location loc, Type t, double v) {
  if (isa<FloatType>(t))
    return floatConst(b, loc, t, v);
  return intConst(b, loc, t, (int64_t)v);
}

//===----------------------------------------------------------------------===//
// Signedness
//===----------------------------------------------------------------------===//

/// Marks on a flow op whose operands (results) were unsigned before the
/// types became signless.
constexpr StringLiteral kUnsignedOperandsAttr = "flow.unsigned_operands";
constexpr StringLiteral kUnsignedResultsAttr = "flow.unsigned_results";

inline bool unsignedOperands(Operation *op) {
  return op->hasAttr(kUnsignedOperandsAttr);
}
inline bool unsignedResults(Operation *op) {
  return op->hasAttr(kUnsignedResultsAttr);
}

/// `t` (a scalar, tensor or function type) with unsigned integers made
/// signless.
inline Type signless(Type t) {
  if (auto integer = dyn_cast<IntegerType>(t))
    return integer.isUnsigned()
               ? IntegerType::get(t.getContext(), integer.getWidth())
               : t;
  if (auto tensor = dyn_cast<RankedTensorType>(t))
    return tensor.clone(signless(tensor.getElementType()));
  if (auto fn = dyn_cast<FunctionType>(t)) {
    SmallVector<Type> inputs, results;
    for (Type in : fn.getInputs())
      inputs.push_back(signless(in));
    for (Type r : fn.getResults())
      results.push_back(signless(r));
    return FunctionType::get(t.getContext(), inputs, results);
  }
  return t;
}

inline bool isUnsignedType(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  auto integer = dyn_cast<IntegerType>(tensor ? tensor.getElementType() : t);
  return integer && integer.isUnsigned();
}

/// Marks the flow ops that compute on unsigned integers, then gives every
/// value, function and constant of the module its signless type.
inline void makeSignless(ModuleOp module) {
  UnitAttr unit = UnitAttr::get(module.getContext());
  module.walk([&](Operation *op) {
    if (!isa<FlowDialect>(op->getDialect()))
      return;
    if (llvm::any_of(op->getOperandTypes(), isUnsignedType))
      op->setAttr(kUnsignedOperandsAttr, unit);
    if (llvm::any_of(op->getResultTypes(), isUnsignedType))
      op->setAttr(kUnsignedResultsAttr, unit);
  });
  module.walk([&](Operation *op) {
    for (Value r : op->getResults())
      r.setType(signless(r.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(signless(arg.getType()));
    if (auto fn = dyn_cast<FunctionOpInterface>(op))
      fn.setType(signless(fn.getFunctionType()));
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto type = cast<ShapedType>(constant.getValue().getType());
      auto to = cast<ShapedType>(signless(type));
      if (to == type)
        return;
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
        constant.setValueAttr(dense.bitcast(to.getElementType()));
      else if (auto resource =
                   dyn_cast<DenseResourceElementsAttr>(constant.getValue()))
        constant.setValueAttr(
            DenseResourceElementsAttr::get(to, resource.getRawHandle()));
    }
  });
}

/// The identity of max: -inf for floats, the smallest integer otherwise.
inline TypedAttr lowestAttr(OpBuilder &b, Type t, bool isUnsigned = false) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(
        t, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/true));
  unsigned width = t.getIntOrFloatBitWidth();
  return b.getIntegerAttr(t, isUnsigned ? APInt::getZero(width)
                                        : APInt::getSignedMinValue(width));
}

/// The largest value of `t`: +inf for floats.
inline TypedAttr highestAttr(OpBuilder &b, Type t, bool isUnsigned = false) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(
        t, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/false));
  unsigned width = t.getIntOrFloatBitWidth();
  return b.getIntegerAttr(t, isUnsigned ? APInt::getMaxValue(width)
                                        : APInt::getSignedMaxValue(width));
}

/// max(a, b) or min(a, b) of integers of the given signedness.
inline Value intMax(OpBuilder &b, Location loc, Value x, Value y,
                    bool isUnsigned) {
  return isUnsigned ? (Value)arith::MaxUIOp::create(b, loc, x, y)
                    : (Value)arith::MaxSIOp::create(b, loc, x, y);
}
inline Value intMin(OpBuilder &b, Location loc, Value x, Value y,
                    bool isUnsigned) {
  return isUnsigned ? (Value)arith::MinUIOp::create(b, loc, x, y)
                    : (Value)arith::MinSIOp::create(b, loc, x, y);
}

/// Element-wise converts `v` from its type to `to`; integers are read as
/// unsigned with `fromUnsigned` (i1 always is) and written as unsigned with
/// `toUnsigned`.
inline Value convertScalar(OpBuilder &b, Location loc, Value v, Type to,
                           bool fromUnsigned = false, bool toUnsigned = false) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) {
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   floatConst(b, loc, from, 0.0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 intConst(b, loc, from, 0));
  }
  bool fromBool = from.isInteger(1) || fromUnsigned;
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // f16 <-> bf16: through f32.
    return arith::TruncFOp::create(
        b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
  }
  if (isa<FloatType>(to))
    return fromBool ? (Value)arith::UIToFPOp::create(b, loc, to, v)
                    : (Value)arith::SIToFPOp::create(b, loc, to, v);
  if (isa<FloatType>(from))
    return toUnsigned ? (Value)arith::FPToUIOp::create(b, loc, to, v)
                      : (Value)arith::FPToSIOp::create(b, loc, to, v);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return fromBool ? (Value)arith::ExtUIOp::create(b, loc, to, v)
                    : (Value)arith::ExtSIOp::create(b, loc, to, v);
  return arith::TruncIOp::create(b, loc, to, v);
}

//===----------------------------------------------------------------------===//
// Tensor helpers
//===----------------------------------------------------------------------===//

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The map reading a tensor of `shape` inside a loop nest over
/// `iterShape`: shapes align from the right and size-1 dimensions broadcast.
inline AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> iterShape) {
  int64_t rank = iterShape.size(), offset = rank - (int64_t)shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(shape)) {
    int64_t dim = offset + (int64_t)i;
    if (d == 1 && iterShape[dim] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

inline Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

inline Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          TypedAttr value) {
  Value init = emptyTensor(b, loc, shape, value.getType());
  Value scalar = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
}

/// A parallel linalg.generic over `shape` reading `inputs` with numpy
/// broadcasting and computing each element with `body`.
inline Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                              ArrayRef<int64_t> shape, Type elementType,
                              BodyFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx, tensorType(in).getShape(), shape));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  SmallVector<IteratorType> iters(shape.size(), IteratorType::parallel);
  Value init = emptyTensor(b, loc, shape, elementType);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args.drop_back()));
      });
  return generic.getResult(0);
}

/// Shape of `shape` reduced over `axes` (kept as 1 with `keepdims`).
inline SmallVector<int64_t>
reducedShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes, bool keepdims) {
  SmallVector<int64_t> out;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, (int64_t)i))
      out.push_back(d);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

/// Reduces over `axes` of the loop nest spanned by `inputs[0]`'s shape.
/// Extra inputs have the keepdims-reduced shape and are read at the output
/// position. `combine(acc, args...)` returns the new accumulator; the
/// accumulator starts at `init` (whose type is the accumulator type).
inline Value buildReduce(
    OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<int64_t> axes,
    bool keepdims, TypedAttr init,
    function_ref<Value(OpBuilder &, Location, Value acc, ValueRange args)>
        combine) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = tensorType(inputs[0]).getShape();
  int64_t rank = shape.size();
  SmallVector<AffineExpr> outExprs, keptExprs;
  SmallVector<IteratorType> iters;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = llvm::is_contained(axes, i);
    iters.push_back(reduced ? IteratorType::reduction : IteratorType::parallel);
    keptExprs.push_back(reduced ? getAffineConstantExpr(0, ctx)
                                : getAffineDimExpr(i, ctx));
    if (!reduced || keepdims)
      outExprs.push_back(keptExprs.back());
  }
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  for (size_t i = 1; i < inputs.size(); ++i)
    maps.push_back(AffineMap::get(rank, 0, keptExprs, ctx));
  maps.push_back(AffineMap::get(rank, 0, outExprs, ctx));
  Value out = filledTensor(b, loc, reducedShape(shape, axes, keepdims), init);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{out.getType()}, inputs, ValueRange{out}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl,
                                combine(nb, nl, args.back(), args.drop_back()));
      });
  return generic.getResult(0);
}

/// Sum over `axes`, accumulated in the compute type of the element type.
inline Value reduceSum(OpBuilder &b, Location loc, Value input,
                       ArrayRef<int64_t> axes, bool keepdims) {
  Type acc = computeType(tensorType(input).getElementType());
  TypedAttr zero = isa<FloatType>(acc) ? (TypedAttr)b.getFloatAttr(acc, 0.0)
                                       : (TypedAttr)b.getIntegerAttr(acc, 0);
  return buildReduce(b, loc, input, axes, keepdims, zero,
                     [&](OpBuilder &nb, Location nl, Value a, ValueRange x) {
                       Value v = widen(nb, nl, x[0]);
                       if (isa<FloatType>(acc))
                         return (Value)arith::AddFOp::create(nb, nl, a, v);
                       return (Value)arith::AddIOp::create(nb, nl, a, v);
                     });
}

/// Maximum over `axes` in the element type (NaN propagates).
inline Value reduceMax(OpBuilder &b, Location loc, Value input,
                       ArrayRef<int64_t> axes, bool keepdims,
                       bool isUnsigned = false) {
  Type elt = tensorType(input).getElementType();
  return buildReduce(
      b, loc, input, axes, keepdims, lowestAttr(b, elt, isUnsigned),
      [&](OpBuilder &nb, Location nl, Value a, ValueRange x) {
        if (isa<FloatType>(elt))
          return (Value)arith::MaximumFOp::create(nb, nl, a, x[0]);
        return intMax(nb, nl, a, x[0], isUnsigned);
      });
}

/// Element-wise cast of a whole tensor.
inline Value castTensor(OpBuilder &b, Location loc, Value input, Type to) {
  if (tensorType(input).getElementType() == to)
    return input;
  return buildElementwise(b, loc, input, tensorType(input).getShape(), to,
                          [&](OpBuilder &nb, Location nl, ValueRange a) {
                            return convertScalar(nb, nl, a[0], to);
                          });
}

/// Pads a 4-D NCHW tensor's spatial dims with `value`.
inline Value padSpatial(OpBuilder &b, Location loc, Value input, int64_t top,
                        int64_t left, int64_t bottom, int64_t right,
                        TypedAttr value) {
  if (top == 0 && left == 0 && bottom == 0 && right == 0)
    return input;
  RankedTensorType type = tensorType(input);
  if (top < 0 || left < 0 || bottom < 0 || right < 0) {
    // Negative padding crops: a view of the rows and columns kept, then
    // the positive padding.
    SmallVector<int64_t> shape(type.getShape());
    int64_t cropTop = std::max<int64_t>(0, -top);
    int64_t cropLeft = std::max<int64_t>(0, -left);
    shape[2] -= cropTop + std::max<int64_t>(0, -bottom);
    shape[3] -= cropLeft + std::max<int64_t>(0, -right);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                         b.getIndexAttr(cropTop),
                                         b.getIndexAttr(cropLeft)};
    SmallVector<OpFoldResult> sizes, unit(4, b.getIndexAttr(1));
    for (int64_t d : shape)
      sizes.push_back(b.getIndexAttr(d));
    input = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), input,
        offsets, sizes, unit);
    return padSpatial(b, loc, input, std::max<int64_t>(0, top),
                      std::max<int64_t>(0, left), std::max<int64_t>(0, bottom),
                      std::max<int64_t>(0, right), value);
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[2] += top + bottom;
  shape[3] += left + right;
  SmallVector<OpFoldResult> low = {b.getIndexAttr(0), b.getIndexAttr(0),
                                   b.getIndexAttr(top), b.getIndexAttr(left)};
  SmallVector<OpFoldResult> high = {b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(bottom),
                                    b.getIndexAttr(right)};
  Value pad = arith::ConstantOp::create(b, loc, value);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), input, low,
      high, pad);
}

/// Binary arithmetic, in f32 for half types.
template <typename FloatOp, typename IntOp>
Value binary(OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  if (isa<FloatType>(t))
    return narrow(
        b, loc,
        FloatOp::create(b, loc, widen(b, loc, a[0]), widen(b, loc, a[1])), t);
  return IntOp::create(b, loc, a[0], a[1]);
}

/// Each op family's lowerings.
void populateElementwiseLowerings(RewritePatternSet &patterns);
void populateContractionLowerings(RewritePatternSet &patterns);
void populateReductionLowerings(RewritePatternSet &patterns);
void populateDataMovementLowerings(RewritePatternSet &patterns);

} // namespace tolinalg
} // namespace flow
} // namespace mlir

#endif // FLOW_LIB_CONVERSION_FLOWTOLINALG_UTILS_H
