//===- Elementwise.cpp - Element-wise ops to linalg -----------------------===//
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
        rewriter, op.getLoc(), {adaptor.getSeed(), adaptor.getOffset()}, shape,
        type.getElementType(),
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
          Value bits =
              splitMix(b, loc,
                       arith::AddIOp::create(
                           b, loc, key,
                           arith::MulIOp::create(b, loc, index, c(golden))));
          Value top = arith::ShRUIOp::create(b, loc, bits, c(40));
          Value f = arith::UIToFPOp::create(b, loc, b.getF32Type(), top);
          return arith::MulFOp::create(
              b, loc, f, floatConst(b, loc, b.getF32Type(), 1.0 / (1 << 24)));
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::flow::tolinalg::populateElementwiseLowerings(
    RewritePatternSet &patterns) {
  patterns.add<ElementwiseLowering<NegOp>, ElementwiseLowering<AbsOp>,
               ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
               ElementwiseLowering<SqrtOp>, ElementwiseLowering<RsqrtOp>,
               ElementwiseLowering<TanhOp>, ElementwiseLowering<ErfOp>,
               ElementwiseLowering<SinOp>, ElementwiseLowering<CosOp>,
               ElementwiseLowering<FloorOp>, ElementwiseLowering<CeilOp>,
               ElementwiseLowering<RoundOp>, ElementwiseLowering<SigmoidOp>,
               ElementwiseLowering<ReluOp>, ElementwiseLowering<GeluOp>,
               ElementwiseLowering<SiluOp>, ElementwiseLowering<CastOp>,
               ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
               ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
               ElementwiseLowering<MaximumOp>, ElementwiseLowering<MinimumOp>,
               ElementwiseLowering<PowOp>, ElementwiseLowering<CompareOp>,
               ElementwiseLowering<SelectOp>, RandomUniformLowering>(
      patterns.getContext());
}
