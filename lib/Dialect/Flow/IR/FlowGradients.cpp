//===- FlowGradients.cpp - Vector-Jacobian products of flow ops -----------===//
//
// Part of the Flow project.
//
// One `gradients(Op, Grad &)` per differentiable op: given the gradient of
// the loss with respect to the op's results, the flow ops that compute it
// with respect to the op's operands (docs/training.md lists the rules).
// Rules are written in flow ops only, so the backward pass is fused,
// partitioned and planned like any other program. The interface model
// attaches them to the ops listed at the end; an op missing there has no
// gradient, and flow-autodiff names it.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowGradient.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::flow;

#include "flow/Dialect/Flow/IR/FlowGradientInterface.cpp.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isFloat(Value v) { return isa<FloatType>(typeOf(v).getElementType()); }

RankedTensorType withShape(RankedTensorType t, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, t.getElementType());
}

/// What a rule sees: the op's result gradients, the slots for its operand
/// gradients, and a builder with the flow ops rules are written in.
struct Grad {
  OpBuilder &b;
  Location loc;
  ArrayRef<Value> results;
  MutableArrayRef<Value> operands;

  /// The gradient of result `i` (null when the loss does not depend on it).
  Value out(unsigned i = 0) const { return results[i]; }

  /// Sets operand `i`'s gradient when that operand is a float tensor
  /// (integer operands and indices get none).
  void set(Operation *op, unsigned i, Value g) {
    if (!g || !isFloat(op->getOperand(i)))
      return;
    assert(g.getType() == op->getOperand(i).getType() &&
           "a gradient has its operand's type");
    operands[i] = g;
  }

  // Scalars (rank 0: numpy broadcasting gives them any shape, and a kernel
  // rebuilds them instead of reading a buffer).
  Value scalar(double v, Type element) {
    auto t = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getFloatAttr(element, v)));
  }
  Value scalar(double v, Value like) {
    return scalar(v, typeOf(like).getElementType());
  }
  Value zeros(RankedTensorType t) {
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0)));
  }

  // Element-wise arithmetic (numpy broadcasting).
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value mul(Value x, double c) { return mul(x, scalar(c, x)); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value compare(ComparePredicate p, Value x, Value y) {
    return CompareOp::create(b, loc, ComparePredicateAttr::get(b.getContext(), p),
                             x, y);
  }
  Value select(Value c, Value x, Value y) {
    return SelectOp::create(b, loc, c, x, y);
  }
  /// `g` where `c` holds, 0 elsewhere.
  Value where(Value c, Value g) { return select(c, g, scalar(0, g)); }
  /// A boolean as 0 or 1 of `like`'s element type.
  Value asFloat(Value c, Value like) {
    return CastOp::create(
        b, loc, withShape(typeOf(like), typeOf(c).getShape()), c);
  }

  // Shapes.
  Value reshape(Value v, RankedTensorType t) {
    if (v.getType() == t)
      return v;
    return ReshapeOp::create(b, loc, t, v);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    return reshape(v, withShape(typeOf(v), shape));
  }
  Value broadcast(Value v, RankedTensorType t) {
    if (v.getType() == t)
      return v;
    return BroadcastToOp::create(b, loc, t, v);
  }
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return v;
    return TransposeOp::create(b, loc, v, perm);
  }
  Value sum(Value v, ArrayRef<int64_t> axes, bool keepdims = true) {
    if (axes.empty())
      return v;
    return ReduceSumOp::create(b, loc, v, axes, keepdims);
  }
  Value mean(Value v, ArrayRef<int64_t> axes) {
    return ReduceMeanOp::create(b, loc, v, axes, /*keepdims=*/true);
  }
  /// Elements [from, to) of dimension `d`.
  Value cut(Value x, int64_t d, int64_t from, int64_t to) {
    RankedTensorType t = typeOf(x);
    if (from == 0 && to == t.getDimSize(d))
      return x;
    SmallVector<int64_t> starts(t.getRank(), 0), limits(t.getShape()),
        strides(t.getRank(), 1), shape(t.getShape());
    starts[d] = from;
    limits[d] = to;
    shape[d] = to - from;
    return SliceOp::create(b, loc, withShape(t, shape), x, starts, limits,
                           strides);
  }
  /// `low` and `high` elements of `value` around dimension `d`.
  Value zeroPad(Value x, int64_t d, int64_t low, int64_t high,
                double value = 0.0) {
    RankedTensorType t = typeOf(x);
    SmallVector<int64_t> lo(t.getRank(), 0), hi(t.getRank(), 0),
        shape(t.getShape());
    lo[d] = low;
    hi[d] = high;
    shape[d] += low + high;
    return PadOp::create(b, loc, withShape(t, shape), x,
                         b.getDenseI64ArrayAttr(lo), b.getDenseI64ArrayAttr(hi),
                         b.getF64FloatAttr(value));
  }
  /// `g` (shaped like a reduction's keepdims result, or with the reduced
  /// axes dropped) broadcast back over `axes` to `input`'s type.
  Value unreduce(Value g, ArrayRef<int64_t> axes, RankedTensorType input) {
    SmallVector<int64_t> kept(input.getShape());
    for (int64_t a : axes)
      kept[a] = 1;
    return broadcast(reshape(g, kept), withShape(input, input.getShape()));
  }
};

/// Axes [from, rank).
SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(from, rank));
}

/// `v` laid out along dimension `dim` of a tensor `extent` long: element i
/// at `offset + i * stride`, zeros everywhere else; elements that would land
/// outside `[0, extent)` are dropped. The inverse of a strided slice, and
/// how a window tap's gradient returns to the input of a convolution or a
/// pool.
Value place(Grad &g, Value v, int64_t dim, int64_t stride, int64_t offset,
            int64_t extent) {
  RankedTensorType t = typeOf(v);
  int64_t n = t.getDimSize(dim);
  SmallVector<int64_t> shape(t.getShape());
  int64_t length = n == 0 ? 0 : (n - 1) * stride + 1;
  if (stride > 1 && n > 1) {
    // [.., n, ..] -> [.., n, 1, ..] -> [.., n, stride, ..] -> [.., n stride, ..]
    // (each element followed by stride - 1 zeros), then the last zeros cut.
    shape.insert(shape.begin() + dim + 1, 1);
    v = g.zeroPad(g.reshape(v, shape), dim + 1, 0, stride - 1);
    shape.erase(shape.begin() + dim + 1);
    shape[dim] = n * stride;
    v = g.cut(g.reshape(v, shape), dim, 0, length);
  }
  // Keep the positions inside [0, extent).
  int64_t first = std::max<int64_t>(0, -offset);
  int64_t last = std::min<int64_t>(length, extent - offset);
  if (last <= first) {
    SmallVector<int64_t> zero(t.getShape());
    zero[dim] = extent;
    return g.zeros(withShape(t, zero));
  }
  if (first > 0 || last < length)
    v = g.cut(v, dim, first, last);
  int64_t low = offset + first, high = extent - (offset + last);
  if (low != 0 || high != 0)
    v = g.zeroPad(v, dim, low, high);
  return v;
}

//===----------------------------------------------------------------------===//
// Element-wise unary ops: dx = g * f'(x)
//===----------------------------------------------------------------------===//

LogicalResult gradients(NegOp op, Grad &g) {
  g.set(op, 0, g.neg(g.out()));
  return success();
}

LogicalResult gradients(AbsOp op, Grad &g) {
  // sign(x), with sign(0) = 0 (PyTorch's subgradient).
  Value x = op.getInput(), zero = g.scalar(0, x);
  Value sign = g.sub(g.asFloat(g.compare(ComparePredicate::gt, x, zero), x),
                     g.asFloat(g.compare(ComparePredicate::lt, x, zero), x));
  g.set(op, 0, g.mul(g.out(), sign));
  return success();
}

LogicalResult gradients(ExpOp op, Grad &g) {
  g.set(op, 0, g.mul(g.out(), op.getResult()));
  return success();
}

LogicalResult gradients(LogOp op, Grad &g) {
  g.set(op, 0, g.div(g.out(), op.getInput()));
  return success();
}

LogicalResult gradients(SqrtOp op, Grad &g) {
  g.set(op, 0, g.div(g.mul(g.out(), 0.5), op.getResult()));
  return success();
}

LogicalResult gradients(RsqrtOp op, Grad &g) {
  // d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3.
  Value y = op.getResult();
  g.set(op, 0, g.mul(g.mul(g.out(), -0.5), g.mul(y, g.mul(y, y))));
  return success();
}

LogicalResult gradients(TanhOp op, Grad &g) {
  Value y = op.getResult();
  g.set(op, 0, g.mul(g.out(), g.sub(g.scalar(1, y), g.mul(y, y))));
  return success();
}

LogicalResult gradients(SinOp op, Grad &g) {
  g.set(op, 0, g.mul(g.out(), CosOp::create(g.b, g.loc, op.getInput())));
  return success();
}

LogicalResult gradients(CosOp op, Grad &g) {
  g.set(op, 0,
        g.neg(g.mul(g.out(), SinOp::create(g.b, g.loc, op.getInput()))));
  return success();
}

/// Piecewise-constant functions: zero almost everywhere (as in PyTorch).
template <typename Op> LogicalResult zeroGradient(Op op, Grad &g) {
  g.set(op, 0, g.zeros(typeOf(op.getInput())));
  return success();
}
LogicalResult gradients(FloorOp op, Grad &g) { return zeroGradient(op, g); }
LogicalResult gradients(CeilOp op, Grad &g) { return zeroGradient(op, g); }
LogicalResult gradients(RoundOp op, Grad &g) { return zeroGradient(op, g); }

LogicalResult gradients(ErfOp op, Grad &g) {
  // 2 / sqrt(pi) * exp(-x^2).
  Value x = op.getInput();
  Value e = ExpOp::create(g.b, g.loc, g.neg(g.mul(x, x)));
  g.set(op, 0, g.mul(g.mul(g.out(), e), 2.0 / std::sqrt(M_PI)));
  return success();
}

LogicalResult gradients(SigmoidOp op, Grad &g) {
  Value y = op.getResult();
  g.set(op, 0, g.mul(g.out(), g.mul(y, g.sub(g.scalar(1, y), y))));
  return success();
}

LogicalResult gradients(ReluOp op, Grad &g) {
  // 0 at x = 0, as in PyTorch.
  Value x = op.getInput();
  g.set(op, 0, g.where(g.compare(ComparePredicate::gt, x, g.scalar(0, x)),
                       g.out()));
  return success();
}

LogicalResult gradients(SiluOp op, Grad &g) {
  // s (1 + x (1 - s)) with s = sigmoid(x).
  Value x = op.getInput();
  Value s = SigmoidOp::create(g.b, g.loc, x);
  Value d = g.mul(s, g.add(g.scalar(1, x), g.mul(x, g.sub(g.scalar(1, x), s))));
  g.set(op, 0, g.mul(g.out(), d));
  return success();
}

LogicalResult gradients(GeluOp op, Grad &g) {
  Value x = op.getInput();
  Value d;
  if (op.getApproximate() == GeluApproximation::tanh) {
    // u = sqrt(2/pi) (x + 0.044715 x^3), t = tanh(u):
    // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
    double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value x2 = g.mul(x, x);
    Value u = g.mul(g.mul(x, g.add(g.scalar(1, x), g.mul(x2, c))), k);
    Value t = TanhOp::create(g.b, g.loc, u);
    Value left = g.mul(g.add(g.scalar(1, x), t), 0.5);
    Value du = g.mul(g.add(g.scalar(1, x), g.mul(x2, 3 * c)), k);
    Value right = g.mul(g.mul(g.mul(x, g.sub(g.scalar(1, x), g.mul(t, t))), du),
                        0.5);
    d = g.add(left, right);
  } else {
    // Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2/2) / sqrt(2 pi).
    Value cdf = g.mul(
        g.add(g.scalar(1, x),
              ErfOp::create(g.b, g.loc, g.mul(x, 1.0 / std::sqrt(2.0)))),
        0.5);
    Value pdf = g.mul(ExpOp::create(g.b, g.loc, g.mul(g.mul(x, x), -0.5)),
                      1.0 / std::sqrt(2.0 * M_PI));
    d = g.add(cdf, g.mul(x, pdf));
  }
  g.set(op, 0, g.mul(g.out(), d));
  return success();
}

LogicalResult gradients(CastOp op, Grad &g) {
  // Float to float: the gradient converts back. From or to an integer or a
  // boolean there is none.
  if (!isFloat(op.getInput()) || !isFloat(op.getResult()))
    return success();
  g.set(op, 0,
        CastOp::create(g.b, g.loc, op.getInput().getType(), g.out()));
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise binary ops (numpy broadcasting: each gradient is summed back
// to its operand's shape)
//===----------------------------------------------------------------------===//

void setBroadcast(Operation *op, Grad &g, unsigned i, Value grad) {
  if (grad && isFloat(op->getOperand(i)))
    g.set(op, i, sumToType(g.b, g.loc, grad, typeOf(op->getOperand(i))));
}

LogicalResult gradients(AddOp op, Grad &g) {
  setBroadcast(op, g, 0, g.out());
  setBroadcast(op, g, 1, g.out());
  return success();
}

LogicalResult gradients(SubOp op, Grad &g) {
  setBroadcast(op, g, 0, g.out());
  setBroadcast(op, g, 1, g.neg(g.out()));
  return success();
}

LogicalResult gradients(MulOp op, Grad &g) {
  setBroadcast(op, g, 0, g.mul(g.out(), op.getRhs()));
  setBroadcast(op, g, 1, g.mul(g.out(), op.getLhs()));
  return success();
}

LogicalResult gradients(DivOp op, Grad &g) {
  // d(l/r)/dr = -l / r^2 = -(l/r) / r.
  setBroadcast(op, g, 0, g.div(g.out(), op.getRhs()));
  setBroadcast(op, g, 1,
               g.neg(g.div(g.mul(g.out(), op.getResult()), op.getRhs())));
  return success();
}

/// maximum/minimum: the gradient goes to the operand that won; on a tie it
/// is split evenly (as in PyTorch).
LogicalResult minMax(Operation *op, Grad &g, ComparePredicate wins) {
  Value l = op->getOperand(0), r = op->getOperand(1), out = g.out();
  Value tie = g.compare(ComparePredicate::eq, l, r);
  Value half = g.mul(out, 0.5);
  Value toLhs = g.select(g.compare(wins, l, r), out, g.where(tie, half));
  Value toRhs = g.select(g.compare(wins, r, l), out, g.where(tie, half));
  setBroadcast(op, g, 0, toLhs);
  setBroadcast(op, g, 1, toRhs);
  return success();
}
LogicalResult gradients(MaximumOp op, Grad &g) {
  return minMax(op, g, ComparePredicate::gt);
}
LogicalResult gradients(MinimumOp op, Grad &g) {
  return minMax(op, g, ComparePredicate::lt);
}

LogicalResult gradients(PowOp op, Grad &g) {
  // d/dl = r l^(r-1); d/dr = l^r log(l), taken as 0 where l = 0 (PyTorch).
  Value l = op.getLhs(), r = op.getRhs(), y = op.getResult(), out = g.out();
  Value rm1 = g.sub(r, g.scalar(1, r));
  setBroadcast(op, g, 0,
               g.mul(out, g.mul(r, PowOp::create(g.b, g.loc, l, rm1))));
  Value logL = LogOp::create(g.b, g.loc, l);
  Value dr = g.mul(out, g.mul(y, logL));
  Value lIsZero = g.compare(ComparePredicate::eq, l, g.scalar(0, l));
  setBroadcast(op, g, 1, g.select(lIsZero, g.scalar(0, l), dr));
  return success();
}

LogicalResult gradients(SelectOp op, Grad &g) {
  Value c = op.getCondition(), out = g.out(), zero = g.scalar(0, out);
  setBroadcast(op, g, 1, g.select(c, out, zero));
  setBroadcast(op, g, 2, g.select(c, zero, out));
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// One matmul of the backward pass: `a` times `b`, each transposed as asked,
/// summed in f32 when the forward product was.
Value product(Grad &g, Value a, Value b, bool ta, bool tb, bool accumulate) {
  return MatmulOp::create(g.b, g.loc, a, b, ta, tb, accumulate);
}

LogicalResult gradients(AttentionOp op, Grad &g) {
  // The probabilities P are recomputed (never kept); with o = P v:
  //   dv = P^T g, dP = g v^T, dS = P (dP - sum(dP P)) (zero where a key is
  //   hidden), dq = scale dS k, dk = scale dS^T q, and a float mask's
  //   gradient is dS.
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue(), out = g.out();
  Value p = buildAttentionProbabilities(g.b, g.loc, op);
  int64_t axis = typeOf(p).getRank() - 1;
  Value dp = product(g, out, v, false, true, false);
  Value ds = g.mul(p, g.sub(dp, g.sum(g.mul(dp, p), {axis})));
  double scale = op.getScale().convertToDouble();
  g.set(op, 0, g.mul(product(g, ds, k, false, false, false), scale));
  g.set(op, 1, g.mul(product(g, ds, q, true, false, false), scale));
  g.set(op, 2, product(g, p, out, true, false, false));
  if (Value mask = op.getMask())
    if (isFloat(mask))
      g.set(op, 3, sumToType(g.b, g.loc, ds, typeOf(mask)));
  return success();
}

/// `x` (at least 3-D) with its batch dimensions merged into its rows: the
/// product of a batch of activations and a shared 2-D weight is one GEMM
/// of `batch * m` rows.
Value mergeBatch(Grad &g, Value x) {
  ArrayRef<int64_t> s = typeOf(x).getShape();
  int64_t rows = 1;
  for (int64_t d : s.drop_back())
    rows *= d;
  return g.reshape(x, {rows, s.back()});
}

LogicalResult gradients(MatmulOp op, Grad &g) {
  Value lhs = op.getLhs(), rhs = op.getRhs(), out = g.out();
  if (!isFloat(lhs))
    return success();
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  bool acc = op.getAccumulateF32();
  Type operandElement = typeOf(lhs).getElementType();
  if (acc) // The products read narrow operands and sum in f32.
    out = CastOp::create(g.b, g.loc,
                         withShape(typeOf(lhs), typeOf(out).getShape()), out);
  auto finish = [&](unsigned i, Value grad) {
    if (!grad)
      return;
    if (acc)
      grad = CastOp::create(
          g.b, g.loc, withShape(typeOf(grad), typeOf(grad).getShape())
                          .clone(operandElement),
          grad);
    setBroadcast(op, g, i, grad);
  };
  int64_t lr = typeOf(lhs).getRank(), rr = typeOf(rhs).getRank();

  // The gradient of the left operand (in its stored layout).
  //   lhs = A [m, k]:  dA = g B^T;   lhs = A^T [k, m]: d = B g^T.
  if (!tl && rr == 2 && lr > 2) {
    // Rows of a batch against a shared weight: one 2-D product.
    Value d = tr ? product(g, mergeBatch(g, out), rhs, false, false, acc)
                 : product(g, mergeBatch(g, out), rhs, false, true, acc);
    SmallVector<int64_t> shape(typeOf(lhs).getShape());
    finish(0, d ? g.reshape(d, withShape(typeOf(d), shape)) : d);
  } else if (!tl) {
    finish(0, product(g, out, rhs, false, !tr, acc));
  } else {
    finish(0, product(g, rhs, out, tr, true, acc));
  }

  // The gradient of the right operand.
  //   rhs = B [k, n]: dB = A^T g;    rhs = B^T [n, k]: d = g^T A.
  if (!tl && rr == 2 && lr > 2) {
    Value a = mergeBatch(g, lhs), o = mergeBatch(g, out);
    finish(1, tr ? product(g, o, a, true, false, acc)
                 : product(g, a, o, true, false, acc));
  } else if (!tr) {
    finish(1, product(g, lhs, out, !tl, false, acc));
  } else {
    finish(1, product(g, out, lhs, true, tl, acc));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

LogicalResult gradients(ReduceSumOp op, Grad &g) {
  if (isFloat(op.getInput()))
    g.set(op, 0, g.unreduce(g.out(), op.getAxes(), typeOf(op.getInput())));
  return success();
}

LogicalResult gradients(ReduceMeanOp op, Grad &g) {
  RankedTensorType in = typeOf(op.getInput());
  int64_t count = 1;
  for (int64_t a : op.getAxes())
    count *= in.getDimSize(a);
  g.set(op, 0,
        g.unreduce(g.mul(g.out(), 1.0 / static_cast<double>(count)),
                   op.getAxes(), in));
  return success();
}

LogicalResult gradients(ReduceMaxOp op, Grad &g) {
  // Shared evenly by the elements equal to the maximum (PyTorch's amax).
  Value x = op.getInput();
  if (!isFloat(x))
    return success();
  RankedTensorType in = typeOf(x);
  Value y = g.unreduce(op.getResult(), op.getAxes(), in);
  Value hit = g.asFloat(g.compare(ComparePredicate::eq, x, y), x);
  Value count = g.sum(hit, op.getAxes());
  Value share = g.div(g.unreduce(g.out(), op.getAxes(), in),
                      g.broadcast(count, in));
  g.set(op, 0, g.mul(hit, share));
  return success();
}

LogicalResult gradients(CumsumOp op, Grad &g) {
  // Each input element reaches the sums on its other side.
  if (!isFloat(op.getInput()))
    return success();
  g.set(op, 0,
        CumsumOp::create(g.b, g.loc, g.out(), op.getAxis(), op.getExclusive(),
                         !op.getReverse()));
  return success();
}

LogicalResult gradients(SoftmaxOp op, Grad &g) {
  // y (g - sum(g y)).
  Value y = op.getResult(), out = g.out();
  Value dot = g.sum(g.mul(out, y), {op.getAxis()});
  g.set(op, 0, g.mul(y, g.sub(out, dot)));
  return success();
}

LogicalResult gradients(LogSoftmaxOp op, Grad &g) {
  // g - softmax(x) sum(g), softmax(x) = exp(y).
  Value y = op.getResult(), out = g.out();
  Value total = g.sum(out, {op.getAxis()});
  g.set(op, 0,
        g.sub(out, g.mul(ExpOp::create(g.b, g.loc, y).getResult(), total)));
  return success();
}

LogicalResult gradients(LayerNormOp op, Grad &g) {
  // x^ = (x - mean) r with r = 1 / sqrt(var + eps), over axes [axis, rank):
  //   dx = r (d - mean(d) - x^ mean(d x^)) with d = g w,
  //   dw = sum over the leading axes of g x^, db = sum of g.
  // The statistics are recomputed from x (one pass of reductions).
  Value x = op.getInput(), out = g.out();
  RankedTensorType in = typeOf(x);
  SmallVector<int64_t> axes = trailingAxes(op.getAxis(), in.getRank());
  Value mean = g.mean(x, axes);
  Value centered = g.sub(x, mean);
  Value var = g.mean(g.mul(centered, centered), axes);
  Value r = RsqrtOp::create(g.b, g.loc,
                            g.add(var, g.scalar(op.getEpsilon().convertToDouble(), x)));
  Value xhat = g.mul(centered, r);
  Value d = op.getWeight() ? g.mul(out, op.getWeight()) : out;
  Value dx = g.mul(r, g.sub(g.sub(d, g.mean(d, axes)),
                            g.mul(xhat, g.mean(g.mul(d, xhat), axes))));
  g.set(op, 0, dx);
  unsigned next = 1;
  if (Value w = op.getWeight())
    g.set(op, next++, sumToType(g.b, g.loc, g.mul(out, xhat), typeOf(w)));
  if (Value bias = op.getBias())
    g.set(op, next, sumToType(g.b, g.loc, out, typeOf(bias)));
  return success();
}

LogicalResult gradients(RmsNormOp op, Grad &g) {
  // x^ = x r with r = 1 / sqrt(mean(x^2) + eps):
  //   dx = r (d - x^ mean(d x^)) with d = g w;  dw = sum of g x^.
  Value x = op.getInput(), out = g.out();
  RankedTensorType in = typeOf(x);
  SmallVector<int64_t> axes = trailingAxes(op.getAxis(), in.getRank());
  Value r = RsqrtOp::create(
      g.b, g.loc,
      g.add(g.mean(g.mul(x, x), axes),
            g.scalar(op.getEpsilon().convertToDouble(), x)));
  Value xhat = g.mul(x, r);
  Value d = op.getWeight() ? g.mul(out, op.getWeight()) : out;
  g.set(op, 0, g.mul(r, g.sub(d, g.mul(xhat, g.mean(g.mul(d, xhat), axes)))));
  if (Value w = op.getWeight())
    g.set(op, 1, sumToType(g.b, g.loc, g.mul(out, xhat), typeOf(w)));
  return success();
}

LogicalResult gradients(BatchNormOp op, Grad &g) {
  // The inference form (stored statistics): an affine map per channel.
  Value x = op.getInput(), out = g.out();
  RankedTensorType in = typeOf(x);
  // A [C] vector as [C, 1, ...] so that it broadcasts along dimension 1.
  SmallVector<int64_t> column(in.getRank() - 1, 1);
  column[0] = in.getDimSize(1);
  auto perChannel = [&](Value v) { return g.reshape(v, column); };
  SmallVector<int64_t> others;
  for (int64_t a = 0; a < in.getRank(); ++a)
    if (a != 1)
      others.push_back(a);
  auto channelSum = [&](Value v) {
    return g.reshape(g.sum(v, others, /*keepdims=*/false),
                     typeOf(op.getScale()));
  };
  Value eps = g.scalar(op.getEpsilon().convertToDouble(), x);
  Value r = RsqrtOp::create(g.b, g.loc, g.add(perChannel(op.getVariance()), eps));
  Value scale = perChannel(op.getScale());
  Value centered = g.sub(x, perChannel(op.getMean()));
  Value gs = g.mul(out, g.mul(scale, r)); // dy/dx scaled
  g.set(op, 0, gs);
  g.set(op, 1, channelSum(g.mul(out, g.mul(centered, r))));
  g.set(op, 2, channelSum(out));
  g.set(op, 3, g.neg(channelSum(gs)));
  // d/dvar of (x - m) s (v + eps)^(-1/2) = -1/2 (x - m) s r^3.
  g.set(op, 4, channelSum(g.mul(g.mul(gs, centered), g.mul(g.mul(r, r), -0.5))));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutions and pooling (written as convolutions, slices and pads, so
// they run on the same library convolutions and kernels as the forward)
//===----------------------------------------------------------------------===//

LogicalResult gradients(Conv2dOp op, Grad &g) {
  Value x = op.getInput(), w = op.getWeight(), out = g.out();
  RankedTensorType xt = typeOf(x), wt = typeOf(w), yt = typeOf(op.getResult());
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), o = wt.getDimSize(0);
  int64_t groups = op.getGroups(), cg = c / groups, og = o / groups;
  int64_t k[2] = {wt.getDimSize(2), wt.getDimSize(3)};
  int64_t in[2] = {xt.getDimSize(2), xt.getDimSize(3)};
  int64_t os[2] = {yt.getDimSize(2), yt.getDimSize(3)};
  ArrayRef<int64_t> s = op.getStrides(), p = op.getPadding(),
                    d = op.getDilations();
  auto conv = [&](Value input, Value weight, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations) {
    return Conv2dOp::create(g.b, g.loc, input, weight, Value(),
                            g.b.getDenseI64ArrayAttr(strides),
                            g.b.getDenseI64ArrayAttr(padding),
                            g.b.getDenseI64ArrayAttr(dilations),
                            g.b.getI64IntegerAttr(groups))
        .getResult();
  };

  if (Value bias = op.getBias())
    g.set(op, 2, g.reshape(g.sum(out, {0, 2, 3}, /*keepdims=*/false),
                           typeOf(bias)));

  // The input's gradient, a transposed convolution: the gradient spread out
  // by the stride, convolved with the weights flipped and their channel
  // dimensions swapped within each group, padded so that output row h is
  // input row h (d (K - 1) - pad_top before, H + pad_top - the spread length
  // after; a negative padding is a crop of the result instead).
  {
    Value spread = out;
    for (int i = 0; i < 2; ++i)
      spread = place(g, spread, 2 + i, s[i], 0, (os[i] - 1) * s[i] + 1);
    Value wf = g.reshape(w, {groups, og, cg, k[0], k[1]});
    wf = g.reshape(g.transpose(wf, {0, 2, 1, 3, 4}), {c, og, k[0], k[1]});
    wf = ReverseOp::create(g.b, g.loc, wf, g.b.getDenseI64ArrayAttr({2, 3}));
    int64_t pad[4], crop[4];
    for (int i = 0; i < 2; ++i) {
      int64_t before = d[i] * (k[i] - 1) - p[i];
      int64_t after = in[i] + p[i] - ((os[i] - 1) * s[i] + 1);
      pad[i] = std::max<int64_t>(before, 0);
      crop[i] = std::max<int64_t>(-before, 0);
      pad[i + 2] = std::max<int64_t>(after, 0);
      crop[i + 2] = std::max<int64_t>(-after, 0);
    }
    Value dx = conv(spread, wf, {1, 1}, {pad[0], pad[1], pad[2], pad[3]},
                    {d[0], d[1]});
    for (int i = 0; i < 2; ++i)
      dx = g.cut(dx, 2 + i, crop[i], crop[i] + in[i]);
    g.set(op, 0, dx);
  }

  // The weights' gradient, dW[o, c, kh, kw] = sum over n, i, j of
  // g[n, o, i, j] x[n, c, i s + kh d - p, ...]: a convolution of the input
  // with its channels as the batch (and the batch, per group, as the
  // channels) by the gradient as weights, stride d and dilation s; its
  // first K taps.
  {
    Value xs = g.reshape(x, {n, groups, cg, in[0], in[1]});
    xs = g.reshape(g.transpose(xs, {2, 1, 0, 3, 4}),
                   {cg, groups * n, in[0], in[1]});
    Value gs = g.transpose(out, {1, 0, 2, 3});
    Value dw = conv(xs, gs, {d[0], d[1]}, {p[0], p[1], p[2], p[3]},
                    {s[0], s[1]});
    dw = g.cut(g.cut(dw, 2, 0, k[0]), 3, 0, k[1]);
    g.set(op, 1, g.transpose(dw, {1, 0, 2, 3}));
  }
  return success();
}

/// The gradient `share` of each window ([N, C, OH, OW]) returned to tap
/// (kh, kw) of its window in an input of `in`'s spatial size.
Value tapGradient(Grad &g, Value share, int64_t kh, int64_t kw,
                  ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                  ArrayRef<int64_t> d, RankedTensorType in) {
  Value v = place(g, share, 2, s[0], kh * d[0] - p[0], in.getDimSize(2));
  return place(g, v, 3, s[1], kw * d[1] - p[1], in.getDimSize(3));
}

LogicalResult gradients(AvgPool2dOp op, Grad &g) {
  // Each window's gradient divided by the forward's divisor (PyTorch's
  // rule, as the lowering computes it), then returned to every tap.
  RankedTensorType in = typeOf(op.getInput()), out = typeOf(op.getResult());
  ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(),
                    p = op.getPadding();
  int64_t bounds[2] = {in.getDimSize(2), in.getDimSize(3)};
  SmallVector<Attribute> inverse;
  Type element = in.getElementType();
  for (int64_t oh = 0; oh < out.getDimSize(2); ++oh)
    for (int64_t ow = 0; ow < out.getDimSize(3); ++ow) {
      int64_t count = 1, pos[2] = {oh, ow};
      for (int i = 0; i < 2; ++i) {
        int64_t start = pos[i] * s[i] - p[i];
        int64_t end = std::min(start + k[i], bounds[i] + p[i + 2]);
        if (!op.getCountIncludePad()) {
          start = std::max<int64_t>(start, 0);
          end = std::min(end, bounds[i]);
        }
        count *= end - start;
      }
      inverse.push_back(g.b.getFloatAttr(element, 1.0 / count));
    }
  auto mapType =
      RankedTensorType::get({out.getDimSize(2), out.getDimSize(3)}, element);
  Value divisor = ConstantOp::create(g.b, g.loc,
                                     DenseElementsAttr::get(mapType, inverse));
  Value share = g.mul(g.out(), divisor);
  Value dx;
  int64_t unit[2] = {1, 1};
  for (int64_t kh = 0; kh < k[0]; ++kh)
    for (int64_t kw = 0; kw < k[1]; ++kw) {
      Value tap = tapGradient(g, share, kh, kw, s, p, unit, in);
      dx = dx ? g.add(dx, tap) : tap;
    }
  g.set(op, 0, dx);
  return success();
}

LogicalResult gradients(MaxPool2dOp op, Grad &g) {
  // Each window's gradient goes to the first tap, in window order, that
  // holds the maximum (the index PyTorch's max pooling records). Padding
  // (and the windows ceil_mode adds) never wins: it reads -inf.
  Value x = op.getInput();
  if (!isFloat(x))
    return success();
  RankedTensorType in = typeOf(x), out = typeOf(op.getResult());
  ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(),
                    p = op.getPadding(), d = op.getDilations();
  double lowest = -std::numeric_limits<double>::infinity();
  Value padded = x;
  for (int i = 0; i < 2; ++i) {
    int64_t need = (out.getDimSize(2 + i) - 1) * s[i] + d[i] * (k[i] - 1) + 1;
    int64_t high = std::max<int64_t>(
        0, need - in.getDimSize(2 + i) - p[i]);
    padded = g.zeroPad(padded, 2 + i, p[i], high, lowest);
  }
  Value y = op.getResult(), taken, dx;
  for (int64_t kh = 0; kh < k[0]; ++kh)
    for (int64_t kw = 0; kw < k[1]; ++kw) {
      RankedTensorType pt = typeOf(padded);
      SmallVector<int64_t> starts{0, 0, kh * d[0], kw * d[1]};
      SmallVector<int64_t> limits{
          pt.getDimSize(0), pt.getDimSize(1),
          kh * d[0] + (out.getDimSize(2) - 1) * s[0] + 1,
          kw * d[1] + (out.getDimSize(3) - 1) * s[1] + 1};
      SmallVector<int64_t> strides{1, 1, s[0], s[1]};
      Value tapValues =
          SliceOp::create(g.b, g.loc, out, padded, starts, limits, strides);
      Value hit = g.asFloat(g.compare(ComparePredicate::eq, tapValues, y), y);
      if (taken) {
        hit = g.mul(hit, g.sub(g.scalar(1, y), taken));
        taken = g.add(taken, hit);
      } else {
        taken = hit;
      }
      Value tap = tapGradient(g, g.mul(g.out(), hit), kh, kw, s, p, d, in);
      dx = dx ? g.add(dx, tap) : tap;
    }
  g.set(op, 0, dx);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult gradients(ReshapeOp op, Grad &g) {
  g.set(op, 0, g.reshape(g.out(), typeOf(op.getInput())));
  return success();
}

LogicalResult gradients(TransposeOp op, Grad &g) {
  ArrayRef<int64_t> perm = op.getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  g.set(op, 0, g.transpose(g.out(), inverse));
  return success();
}

LogicalResult gradients(BroadcastToOp op, Grad &g) {
  setBroadcast(op, g, 0, g.out());
  return success();
}

LogicalResult gradients(AnnotateOp op, Grad &g) {
  g.set(op, 0, g.out());
  return success();
}

LogicalResult gradients(ConcatOp op, Grad &g) {
  int64_t axis = op.getAxis(), offset = 0;
  RankedTensorType result = typeOf(op.getResult());
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    RankedTensorType t = typeOf(input);
    SmallVector<int64_t> starts(t.getRank(), 0), limits(result.getShape()),
        strides(t.getRank(), 1);
    starts[axis] = offset;
    limits[axis] = offset + t.getDimSize(axis);
    offset = limits[axis];
    g.set(op, i, SliceOp::create(g.b, g.loc, t, g.out(), starts, limits, strides));
  }
  return success();
}

LogicalResult gradients(SliceOp op, Grad &g) {
  // The gradient lands at the sliced positions, zeros elsewhere.
  Value grad = g.out();
  RankedTensorType in = typeOf(op.getInput());
  for (int64_t d = 0; d < in.getRank(); ++d)
    grad = place(g, grad, d, op.getStrides()[d], op.getStarts()[d],
                 in.getDimSize(d));
  g.set(op, 0, grad);
  return success();
}

LogicalResult gradients(PadOp op, Grad &g) {
  RankedTensorType in = typeOf(op.getInput());
  SmallVector<int64_t> starts(op.getLow()), limits, strides(in.getRank(), 1);
  for (int64_t d = 0; d < in.getRank(); ++d)
    limits.push_back(starts[d] + in.getDimSize(d));
  g.set(op, 0, SliceOp::create(g.b, g.loc, in, g.out(), starts, limits, strides));
  return success();
}

LogicalResult gradients(ReverseOp op, Grad &g) {
  g.set(op, 0, ReverseOp::create(g.b, g.loc, g.out(), op.getAxes()));
  return success();
}

/// `indices` clamped into `[0, size)`, as the gathers clamp them: the
/// gradient must land where the gather read.
Value clampIndices(Grad &g, Value indices, int64_t size) {
  Type element = typeOf(indices).getElementType();
  auto scalar = [&](int64_t v) {
    return ConstantOp::create(
        g.b, g.loc,
        DenseElementsAttr::get(RankedTensorType::get({}, element),
                               g.b.getIntegerAttr(element, v)));
  };
  Value low = MaximumOp::create(g.b, g.loc, indices, scalar(0));
  return MinimumOp::create(g.b, g.loc, low, scalar(size - 1));
}

/// `updates` added into zeros of type `type` at the index tuples `tuples`.
Value scatterAdd(Grad &g, RankedTensorType type, Value tuples, Value updates) {
  return ScatterNdOp::create(
      g.b, g.loc, type, g.zeros(type), tuples, updates,
      ScatterReductionAttr::get(g.b.getContext(), ScatterReduction::add));
}

LogicalResult gradients(GatherOp op, Grad &g) {
  // Scatter-add of the gathered slices into zeros: the gathered axis is
  // moved to the front of the table (and the index dimensions to the front
  // of the gradient), so that each index names one slice.
  Value table = op.getInput(), indices = op.getIndices();
  if (!isFloat(table))
    return success();
  RankedTensorType in = typeOf(table), idx = typeOf(indices);
  int64_t axis = op.getAxis(), rank = in.getRank(), q = idx.getRank();
  Value clamped = clampIndices(g, indices, in.getDimSize(axis));
  SmallVector<int64_t> tupleShape(idx.getShape());
  tupleShape.push_back(1);
  Value tuples = g.reshape(clamped, tupleShape);
  // Table with `axis` first.
  SmallVector<int64_t> tablePerm{axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      tablePerm.push_back(d);
  SmallVector<int64_t> movedShape;
  for (int64_t d : tablePerm)
    movedShape.push_back(in.getDimSize(d));
  // Gradient [lead.., idx.., trail..] -> [idx.., lead.., trail..].
  SmallVector<int64_t> gradPerm;
  for (int64_t d = 0; d < q; ++d)
    gradPerm.push_back(axis + d);
  for (int64_t d = 0; d < axis; ++d)
    gradPerm.push_back(d);
  for (int64_t d = axis + q; d < rank - 1 + q; ++d)
    gradPerm.push_back(d);
  Value updates = g.transpose(g.out(), gradPerm);
  Value scattered =
      scatterAdd(g, withShape(in, movedShape), tuples, updates);
  SmallVector<int64_t> back(rank);
  for (auto [i, p] : llvm::enumerate(tablePerm))
    back[p] = i;
  g.set(op, 0, g.transpose(scattered, back));
  return success();
}

LogicalResult gradients(GatherElementsOp op, Grad &g) {
  // A scatter-add at full coordinate tuples: along `axis` the (clamped)
  // index, along every other dimension the element's own position.
  Value input = op.getInput();
  if (!isFloat(input))
    return success();
  RankedTensorType in = typeOf(input), idx = typeOf(op.getIndices());
  int64_t axis = op.getAxis(), rank = in.getRank();
  Type i64 = g.b.getI64Type();
  RankedTensorType idx64 = RankedTensorType::get(idx.getShape(), i64);
  Value clamped = clampIndices(
      g, CastOp::create(g.b, g.loc, idx64, op.getIndices()),
      in.getDimSize(axis));
  SmallVector<int64_t> column(idx.getShape());
  column.push_back(1);
  auto columnType = RankedTensorType::get(column, i64);
  SmallVector<Value> coordinates;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim == axis) {
      coordinates.push_back(g.reshape(clamped, columnType));
      continue;
    }
    // Position along `dim` of every element: an iota constant.
    SmallVector<int64_t> values(idx.getNumElements());
    int64_t inner = 1;
    for (int64_t e = dim + 1; e < rank; ++e)
      inner *= idx.getDimSize(e);
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i)
      values[i] = (i / inner) % idx.getDimSize(dim);
    coordinates.push_back(ConstantOp::create(
        g.b, g.loc,
        DenseElementsAttr::get(columnType, ArrayRef<int64_t>(values))));
  }
  Value tuples = ConcatOp::create(g.b, g.loc, coordinates,
                                  g.b.getI64IntegerAttr(rank));
  g.set(op, 0, scatterAdd(g, in, tuples, g.out()));
  return success();
}

//===----------------------------------------------------------------------===//
// The interface model
//===----------------------------------------------------------------------===//

template <typename Op>
struct GradientModel
    : GradientOpInterface::ExternalModel<GradientModel<Op>, Op> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ArrayRef<Value> resultGrads,
                               MutableArrayRef<Value> operandGrads) const {
    Grad g{builder, op->getLoc(), resultGrads, operandGrads};
    if (!g.out())
      return success();
    return gradients(cast<Op>(op), g);
  }
};

template <typename... Ops> void attach(MLIRContext *context) {
  (Ops::template attachInterface<GradientModel<Ops>>(*context), ...);
}

} // namespace

Value mlir::flow::sumToType(OpBuilder &b, Location loc, Value grad,
                            RankedTensorType target) {
  RankedTensorType from = typeOf(grad);
  int64_t lead = from.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < from.getRank(); ++d)
    if (d < lead || (target.getDimSize(d - lead) == 1 && from.getDimSize(d) != 1))
      axes.push_back(d);
  if (!axes.empty())
    grad = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/true);
  if (grad.getType() != target)
    grad = ReshapeOp::create(b, loc, target, grad);
  return grad;
}

void mlir::flow::registerGradientInterfaceModels(MLIRContext *context) {
  attach<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SinOp, CosOp,
         FloorOp, CeilOp, RoundOp, ErfOp, SigmoidOp, ReluOp, SiluOp, GeluOp,
         CastOp, AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp,
         SelectOp, MatmulOp, AttentionOp, ReduceSumOp, ReduceMeanOp,
         ReduceMaxOp, CumsumOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp,
         BatchNormOp, ReshapeOp, TransposeOp, BroadcastToOp, AnnotateOp,
         ConcatOp, SliceOp, PadOp, ReverseOp, GatherOp, GatherElementsOp,
         Conv2dOp, AvgPool2dOp, MaxPool2dOp>(context);
}
