//===- FlowToLinalg.cpp - Lower flow ops to linalg on tensors -------------===//
//
// Part of the Flow project.
//
// Every flow compute op becomes upstream ops on tensors. Elementwise ops and
// reductions are linalg.generic ops whose indexing maps implement numpy
// broadcasting; windows (convolution, pooling) are linalg.generic ops over a
// padded input; data movement uses tensor ops. f16 and bf16 are computed in
// f32 and rounded once at the end of each op.
//
// Unsigned integers (`uiN`) become signless `iN` before the patterns run
// (arith computes on signless integers); each flow op that read or wrote an
// unsigned type is marked first, so its lowering picks the unsigned forms
// (division, comparisons, maximum and minimum, widening, conversion).
//
//===----------------------------------------------------------------------===//

#include "flow/Conversion/Passes.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CONVERTFLOWTOLINALGPASS
#include "flow/Conversion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;
using utils::IteratorType;

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

bool isHalf(Type t) { return t.isF16() || t.isBF16(); }

/// The type arithmetic on `t` is done in: f32 for f16/bf16, else `t`.
Type computeType(Type t) {
  return isHalf(t) ? Float32Type::get(t.getContext()) : t;
}

/// Widens a half-precision scalar to f32.
Value widen(OpBuilder &b, Location loc, Value v) {
  if (isHalf(v.getType()))
    return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

/// Rounds an f32 scalar back to the half type `t` (no-op otherwise).
Value narrow(OpBuilder &b, Location loc, Value v, Type t) {
  if (isHalf(t) && v.getType() != t)
    return arith::TruncFOp::create(b, loc, t, v);
  return v;
}

Value floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}

Value intConst(OpBuilder &b, Location loc, Type t, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v));
}

/// A scalar constant of numeric type `t` (float or integer).
Value numConst(OpBuilder &b, Location loc, Type t, double v) {
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

bool unsignedOperands(Operation *op) {
  return op->hasAttr(kUnsignedOperandsAttr);
}
bool unsignedResults(Operation *op) {
  return op->hasAttr(kUnsignedResultsAttr);
}

/// `t` (a scalar, tensor or function type) with unsigned integers made
/// signless.
Type signless(Type t) {
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

bool isUnsignedType(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  auto integer =
      dyn_cast<IntegerType>(tensor ? tensor.getElementType() : t);
  return integer && integer.isUnsigned();
}

/// Marks the flow ops that compute on unsigned integers, then gives every
/// value, function and constant of the module its signless type.
void makeSignless(ModuleOp module) {
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
TypedAttr lowestAttr(OpBuilder &b, Type t, bool isUnsigned = false) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(
        t, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/true));
  unsigned width = t.getIntOrFloatBitWidth();
  return b.getIntegerAttr(t, isUnsigned ? APInt::getZero(width)
                                        : APInt::getSignedMinValue(width));
}

/// The largest value of `t`: +inf for floats.
TypedAttr highestAttr(OpBuilder &b, Type t, bool isUnsigned = false) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(
        t, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/false));
  unsigned width = t.getIntOrFloatBitWidth();
  return b.getIntegerAttr(t, isUnsigned ? APInt::getMaxValue(width)
                                        : APInt::getSignedMaxValue(width));
}

/// max(a, b) or min(a, b) of integers of the given signedness.
Value intMax(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  return isUnsigned ? (Value)arith::MaxUIOp::create(b, loc, x, y)
                    : (Value)arith::MaxSIOp::create(b, loc, x, y);
}
Value intMin(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  return isUnsigned ? (Value)arith::MinUIOp::create(b, loc, x, y)
                    : (Value)arith::MinSIOp::create(b, loc, x, y);
}

/// Element-wise converts `v` from its type to `to`; integers are read as
/// unsigned with `fromUnsigned` (i1 always is) and written as unsigned with
/// `toUnsigned`.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to,
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

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The map reading a tensor of `shape` inside a loop nest over
/// `iterShape`: shapes align from the right and size-1 dimensions broadcast.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
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

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   TypedAttr value) {
  Value init = emptyTensor(b, loc, shape, value.getType());
  Value scalar = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, scalar, init).getResult(0);
}

/// A parallel linalg.generic over `shape` reading `inputs` with numpy
/// broadcasting and computing each element with `body`.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       ArrayRef<int64_t> shape, Type elementType, BodyFn body) {
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
SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> axes, bool keepdims) {
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
Value buildReduce(
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
Value reduceSum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                bool keepdims) {
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
Value reduceMax(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                bool keepdims, bool isUnsigned = false) {
  Type elt = tensorType(input).getElementType();
  return buildReduce(b, loc, input, axes, keepdims,
                     lowestAttr(b, elt, isUnsigned),
                     [&](OpBuilder &nb, Location nl, Value a, ValueRange x) {
                       if (isa<FloatType>(elt))
                         return (Value)arith::MaximumFOp::create(nb, nl, a,
                                                                 x[0]);
                       return intMax(nb, nl, a, x[0], isUnsigned);
                     });
}

/// Element-wise cast of a whole tensor.
Value castTensor(OpBuilder &b, Location loc, Value input, Type to) {
  if (tensorType(input).getElementType() == to)
    return input;
  return buildElementwise(b, loc, input, tensorType(input).getShape(), to,
                          [&](OpBuilder &nb, Location nl, ValueRange a) {
                            return convertScalar(nb, nl, a[0], to);
                          });
}

/// Pads a 4-D NCHW tensor's spatial dims with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input, int64_t top,
                 int64_t left, int64_t bottom, int64_t right, TypedAttr value) {
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

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Per-op scalar computation. `args` are the generic's block arguments (in
/// the operands' element types); the result is in the op's element type.
Value scalarOf(NegOp op, OpBuilder &b, Location loc, ValueRange args) {
  Type t = args[0].getType();
  if (isa<FloatType>(t))
    return arith::NegFOp::create(b, loc, args[0]);
  return arith::SubIOp::create(b, loc, intConst(b, loc, t, 0), args[0]);
}
Value scalarOf(AbsOp op, OpBuilder &b, Location loc, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return math::AbsFOp::create(b, loc, args[0]);
  if (unsignedOperands(op))
    return args[0];
  return math::AbsIOp::create(b, loc, args[0]);
}

/// Unary float math computed in f32 for half types.
template <typename MathOp>
Value floatUnary(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  return narrow(b, loc, MathOp::create(b, loc, widen(b, loc, x)), t);
}
Value scalarOf(ExpOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::ExpOp>(b, loc, a[0]);
}
Value scalarOf(LogOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::LogOp>(b, loc, a[0]);
}
Value scalarOf(SqrtOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::SqrtOp>(b, loc, a[0]);
}
Value scalarOf(RsqrtOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::RsqrtOp>(b, loc, a[0]);
}
Value scalarOf(TanhOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::TanhOp>(b, loc, a[0]);
}
Value scalarOf(SinOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::SinOp>(b, loc, a[0]);
}
Value scalarOf(CosOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::CosOp>(b, loc, a[0]);
}
Value scalarOf(FloorOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::FloorOp>(b, loc, a[0]);
}
Value scalarOf(CeilOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::CeilOp>(b, loc, a[0]);
}
Value scalarOf(RoundOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::RoundEvenOp>(b, loc, a[0]);
}
Value scalarOf(ErfOp, OpBuilder &b, Location loc, ValueRange a) {
  return floatUnary<math::ErfOp>(b, loc, a[0]);
}

/// 1 / (1 + exp(-x)) in the compute type.
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value one = floatConst(b, loc, t, 1.0);
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}
Value scalarOf(SigmoidOp, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  return narrow(b, loc, sigmoid(b, loc, widen(b, loc, a[0])), t);
}
Value scalarOf(SiluOp, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  Value x = widen(b, loc, a[0]);
  return narrow(b, loc, arith::MulFOp::create(b, loc, x, sigmoid(b, loc, x)),
                t);
}
Value scalarOf(ReluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  if (isa<FloatType>(t))
    return arith::MaximumFOp::create(b, loc, a[0], floatConst(b, loc, t, 0));
  if (unsignedOperands(op))
    return a[0];
  return arith::MaxSIOp::create(b, loc, a[0], intConst(b, loc, t, 0));
}
Value scalarOf(GeluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  Value x = widen(b, loc, a[0]);
  Type f = x.getType();
  Value half = floatConst(b, loc, f, 0.5), one = floatConst(b, loc, f, 1.0);
  Value inner;
  if (op.getApproximate() == GeluApproximation::tanh) {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
    Value x3 =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, floatConst(b, loc, f, 0.044715), x3));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, floatConst(b, loc, f, std::sqrt(2.0 / M_PI)), poly));
  } else {
    // erf(x / sqrt(2))
    inner = math::ErfOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, x, floatConst(b, loc, f, M_SQRT1_2)));
  }
  Value y =
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, half, x),
                            arith::AddFOp::create(b, loc, one, inner));
  return narrow(b, loc, y, t);
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
Value scalarOf(AddOp, OpBuilder &b, Location loc, ValueRange a) {
  return binary<arith::AddFOp, arith::AddIOp>(b, loc, a);
}
Value scalarOf(SubOp, OpBuilder &b, Location loc, ValueRange a) {
  return binary<arith::SubFOp, arith::SubIOp>(b, loc, a);
}
Value scalarOf(MulOp, OpBuilder &b, Location loc, ValueRange a) {
  return binary<arith::MulFOp, arith::MulIOp>(b, loc, a);
}
/// Float division is IEEE. Integer division truncates toward zero; where it
/// is undefined (and would trap) it is defined here: x / 0 = 0, and
/// INT_MIN / -1 = INT_MIN (two's complement wrap-around).
Value scalarOf(DivOp op, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  if (isa<FloatType>(t))
    return binary<arith::DivFOp, arith::DivSIOp>(b, loc, a);
  Value zero = intConst(b, loc, t, 0), one = intConst(b, loc, t, 1),
        minusOne = intConst(b, loc, t, -1);
  Value isZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a[1], zero);
  if (unsignedOperands(op)) {
    Value safe = arith::SelectOp::create(b, loc, isZero, one, a[1]);
    Value q = arith::DivUIOp::create(b, loc, a[0], safe);
    return arith::SelectOp::create(b, loc, isZero, zero, q);
  }
  Value isMinusOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a[1], minusOne);
  Value safe = arith::SelectOp::create(
      b, loc, arith::OrIOp::create(b, loc, isZero, isMinusOne), one, a[1]);
  Value q = arith::DivSIOp::create(b, loc, a[0], safe);
  Value negated = arith::SubIOp::create(b, loc, zero, a[0]);
  q = arith::SelectOp::create(b, loc, isMinusOne, negated, q);
  return arith::SelectOp::create(b, loc, isZero, zero, q);
}
Value scalarOf(MaximumOp op, OpBuilder &b, Location loc, ValueRange a) {
  if (!isa<FloatType>(a[0].getType()))
    return intMax(b, loc, a[0], a[1], unsignedOperands(op));
  return binary<arith::MaximumFOp, arith::MaxSIOp>(b, loc, a);
}
Value scalarOf(MinimumOp op, OpBuilder &b, Location loc, ValueRange a) {
  if (!isa<FloatType>(a[0].getType()))
    return intMin(b, loc, a[0], a[1], unsignedOperands(op));
  return binary<arith::MinimumFOp, arith::MinSIOp>(b, loc, a);
}
Value scalarOf(PowOp, OpBuilder &b, Location loc, ValueRange a) {
  return binary<math::PowFOp, arith::MulIOp>(b, loc, a);
}
/// Predicates by flow.compare predicate (eq, ne, lt, le, gt, ge). Floats
/// compare ordered except `ne` (true for NaN); integers signed, i1 unsigned
/// (false < true).
constexpr arith::CmpFPredicate kFloatPredicates[] = {
    arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
    arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
    arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
constexpr arith::CmpIPredicate kSignedPredicates[] = {
    arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
    arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
    arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
constexpr arith::CmpIPredicate kUnsignedPredicates[] = {
    arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
    arith::CmpIPredicate::ult, arith::CmpIPredicate::ule,
    arith::CmpIPredicate::ugt, arith::CmpIPredicate::uge};

Value scalarOf(CompareOp op, OpBuilder &b, Location loc, ValueRange a) {
  Type t = a[0].getType();
  auto index = static_cast<size_t>(op.getPredicate());
  if (isa<FloatType>(t))
    return arith::CmpFOp::create(b, loc, kFloatPredicates[index],
                                 widen(b, loc, a[0]), widen(b, loc, a[1]));
  arith::CmpIPredicate p = t.isInteger(1) || unsignedOperands(op)
                               ? kUnsignedPredicates[index]
                               : kSignedPredicates[index];
  return arith::CmpIOp::create(b, loc, p, a[0], a[1]);
}
Value scalarOf(SelectOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
}
Value scalarOf(CastOp op, OpBuilder &b, Location loc, ValueRange a) {
  return convertScalar(b, loc, a[0],
                       tensorType(op.getResult()).getElementType(),
                       unsignedOperands(op), unsignedResults(op));
}

/// Any op computed element by element from its (broadcast) operands.
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op.getResult());
    Value r =
        buildElementwise(rewriter, op.getLoc(), adaptor.getOperands(),
                         type.getShape(), type.getElementType(),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           return scalarOf(op, b, loc, args);
                         });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// The SplitMix64 finalizer on i64 scalars (wrapping arithmetic).
Value splitMix(OpBuilder &b, Location loc, Value z) {
  Type i64 = b.getI64Type();
  auto shiftXor = [&](Value v, int64_t s) {
    return arith::XOrIOp::create(
        b, loc, v, arith::ShRUIOp::create(b, loc, v, intConst(b, loc, i64, s)));
  };
  auto times = [&](Value v, uint64_t c) {
    return arith::MulIOp::create(
        b, loc, v, intConst(b, loc, i64, static_cast<int64_t>(c)));
  };
  z = times(shiftXor(z, 30), 0xBF58476D1CE4E5B9ULL);
  z = times(shiftXor(z, 27), 0x94D049BB133111EBULL);
  return shiftXor(z, 31);
}

/// random_uniform: each element hashes (seed, offset, stream) and its
/// row-major index (the formula in the op's description).
struct RandomUniformLowering : OpConversionPattern<RandomUniformOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RandomUniformOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op.getResult());
    ArrayRef<int64_t> shape = type.getShape();
    constexpr uint64_t golden = 0x9E3779B97F4A7C15ULL;
    int64_t stream = op.getStream();
    Value r = buildElementwise(
        rewriter, op.getLoc(), {adaptor.getSeed(), adaptor.getOffset()},
        shape, type.getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          auto c = [&](uint64_t v) {
            return intConst(b, loc, i64, static_cast<int64_t>(v));
          };
          // The per-op key (loop-invariant: hoisted out of the loops).
          Value counter = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, args[1], c(golden)),
              c(static_cast<uint64_t>(stream)));
          Value key =
              arith::AddIOp::create(b, loc, args[0], splitMix(b, loc, counter));
          // The row-major index of this element, plus one.
          Value index = c(1);
          int64_t stride = 1;
          for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0;
               --d) {
            Value i = arith::IndexCastUIOp::create(
                b, loc, i64, linalg::IndexOp::create(b, loc, d));
            index = arith::AddIOp::create(
                b, loc, index, arith::MulIOp::create(b, loc, i, c(stride)));
            stride *= shape[d];
          }
          Value bits = splitMix(
              b, loc,
              arith::AddIOp::create(
                  b, loc, key, arith::MulIOp::create(b, loc, index, c(golden))));
          Value top = arith::ShRUIOp::create(b, loc, bits, c(40));
          Value f = arith::UIToFPOp::create(b, loc, b.getF32Type(), top);
          return arith::MulFOp::create(b, loc, f,
                                       floatConst(b, loc, b.getF32Type(),
                                                  1.0 / (1 << 24)));
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

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
        op.getReverse()
            ? (op.getExclusive() ? arith::CmpIPredicate::ugt
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
    rewriter.replaceOp(op, castTensor(rewriter, loc, generic.getResult(0), elt));
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
            P better = isMax ? (last ? P::OGE : P::OGT)
                             : (last ? P::OLE : P::OLT);
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
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, reads, ctx),
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
                  b, l, offsets, ValueRange{arith::ConstantIndexOp::create(b, l, d)});
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
    SmallVector<AffineMap> maps(2, AffineMap::getMultiDimIdentityMap(rank, ctx));
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
            coords.push_back(j == axis ? idx
                                       : (Value)linalg::IndexOp::create(b, l, j));
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
                      Value left = tensor::ExtractOp::create(mb, ml, srcV,
                                                             coords(ic));
                      Value right = tensor::ExtractOp::create(mb, ml, srcV,
                                                              coords(jc));
                      using P = arith::CmpIPredicate;
                      Value rightLeft = arith::CmpIOp::create(mb, ml, P::slt,
                                                              j, hi);
                      Value leftDone = arith::CmpIOp::create(mb, ml, P::sge,
                                                             i, mid);
                      Value take = arith::AndIOp::create(
                          mb, ml, rightLeft,
                          arith::OrIOp::create(mb, ml, leftDone,
                                               before(mb, ml, right, left)));
                      Value from = arith::SelectOp::create(mb, ml, take, jc, ic);
                      Value v = arith::SelectOp::create(mb, ml, take, right,
                                                        left);
                      Value x = tensor::ExtractOp::create(mb, ml, srcI,
                                                          coords(from));
                      Value one = c(mb, ml, 1), zero = c(mb, ml, 0);
                      Value di = arith::SelectOp::create(mb, ml, take, zero,
                                                         one);
                      Value dj = arith::SelectOp::create(mb, ml, take, one,
                                                         zero);
                      scf::YieldOp::create(
                          mb, ml,
                          ValueRange{
                              arith::AddIOp::create(mb, ml, i, di),
                              arith::AddIOp::create(mb, ml, j, dj),
                              tensor::InsertOp::create(mb, ml, v, it[2],
                                                       coords(k)),
                              tensor::InsertOp::create(mb, ml, x, it[3],
                                                       coords(k))});
                    });
                scf::YieldOp::create(
                    bb, bl,
                    ValueRange{merge.getResult(2), merge.getResult(3)});
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
              auto [aV, aI] = pass(
                  qb, ql, bV, bI, it[0], it[1],
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
    Value zeros = filledTensor(rewriter, loc, shape, rewriter.getI64IntegerAttr(0));

    // a < b in the sort's order (NaN the largest), and a == b.
    auto less = [&](OpBuilder &b, Location l, Value x, Value y) -> Value {
      if (isa<FloatType>(elt)) {
        x = widen(b, l, x);
        y = widen(b, l, y);
        using P = arith::CmpFPredicate;
        Value lt = arith::CmpFOp::create(b, l, P::OLT, x, y);
        Value xNumber = arith::CmpFOp::create(b, l, P::ORD, x, x);
        Value yNaN = arith::CmpFOp::create(b, l, P::UNO, y, y);
        return arith::OrIOp::create(
            b, l, lt, arith::AndIOp::create(b, l, xNumber, yNaN));
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
          linalg::YieldOp::create(b, l,
                                  arith::AddIOp::create(b, l, a[2], one)
                                      .getResult());
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
            inBounds = inBounds ? arith::AndIOp::create(b, l, inBounds, ok)
                                : ok;
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
                      return {tensor::InsertOp::create(sb, sl, next, inner[0],
                                                       at)
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

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertFlowToLinalgPass
    : flow::impl::ConvertFlowToLinalgPassBase<ConvertFlowToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    makeSignless(module);
    // Ops with no single-device lowering: report every one, by name.
    bool unsupported = false;
    module.walk([&](Operation *op) {
      if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
              BroadcastOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' has no single-device lowering: collectives "
                           "need a compile for a device mesh";
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    target.addIllegalDialect<FlowDialect>();
    target.addLegalOp<MeshOp>();
    RewritePatternSet patterns(&getContext());
    populateFlowToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Meshes nothing refers to any more are dropped.
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      if (SymbolTable::symbolKnownUseEmpty(mesh, module))
        mesh.erase();
  }
};

} // namespace

void mlir::flow::populateFlowToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns
      .add<ElementwiseLowering<NegOp>, ElementwiseLowering<AbsOp>,
           ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
           ElementwiseLowering<SqrtOp>, ElementwiseLowering<RsqrtOp>,
           ElementwiseLowering<TanhOp>, ElementwiseLowering<ErfOp>,
           ElementwiseLowering<SinOp>, ElementwiseLowering<CosOp>,
           ElementwiseLowering<FloorOp>, ElementwiseLowering<CeilOp>,
           ElementwiseLowering<RoundOp>,
           ElementwiseLowering<SigmoidOp>,
           ElementwiseLowering<ReluOp>, ElementwiseLowering<GeluOp>,
           ElementwiseLowering<SiluOp>, ElementwiseLowering<CastOp>,
           ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
           ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
           ElementwiseLowering<MaximumOp>, ElementwiseLowering<MinimumOp>,
           ElementwiseLowering<PowOp>, ElementwiseLowering<CompareOp>,
           ElementwiseLowering<SelectOp>, RandomUniformLowering,
           MatmulLowering, Conv2dLowering,
           Im2ColLowering, ReduceSumLowering, ReduceMeanLowering,
           ReduceMaxLowering, SoftmaxLowering<SoftmaxOp, false>,
           SoftmaxLowering<LogSoftmaxOp, true>, LayerNormLowering,
           RmsNormLowering, BatchNormLowering, PoolLowering<MaxPool2dOp, true>,
           PoolLowering<AvgPool2dOp, false>, ConstantLowering, AnnotateLowering,
           ReshapeLowering, TransposeLowering, BroadcastToLowering,
           ConcatLowering, SliceLowering, DynamicSliceLowering, ReverseLowering, GatherLowering,
           GatherElementsLowering, ScatterNdLowering, SortLowering, CumsumLowering,
           ArgReduceLowering<ArgmaxOp, true>,
           ArgReduceLowering<ArgminOp, false>,
           PadLowering>(ctx);
}
