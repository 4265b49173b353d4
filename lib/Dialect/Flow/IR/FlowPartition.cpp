//===- FlowPartition.cpp - Flow ops written for one device of a mesh ------===//
//
// Part of the Flow project.
//
// The partition hook of SbpOpInterface: flow-partition asks each op to
// write itself for one device, given the device's pieces of its operands
// laid out as the chosen signature says. Most ops are the same op on
// pieces. The ops below speak of global sizes or positions (a mean's count,
// a slice's limits, a gather's rows) or reduce over a split dimension
// (softmax and the norms: partial statistics reduced across the splitting
// mesh axes), and rewrite themselves in local terms.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flow;

SmallVector<int64_t> DevicePlace::axesSplitting(ArrayRef<SbpDim> sbp,
                                                int64_t dim) const {
  SmallVector<int64_t> axes;
  for (auto [axis, d] : llvm::enumerate(sbp))
    if (d.isSplit() && d.dim == dim)
      axes.push_back(static_cast<int64_t>(axis));
  return axes;
}

int64_t DevicePlace::pieceSize(RankedTensorType global, ArrayRef<SbpDim> sbp,
                               int64_t dim) const {
  SmallVector<int64_t> shape, offset;
  localPiece(global.getShape(), sbp, meshShape, coords, shape, offset);
  return shape[dim];
}

Value mlir::flow::createPieceOffsets(OpBuilder &b, Location loc,
                                     ArrayRef<int64_t> shape,
                                     ArrayRef<SbpDim> sbp,
                                     ArrayRef<SbpDim> within) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({static_cast<int64_t>(shape.size())},
                                    b.getI64Type());
  bool splits = llvm::any_of(within, [](SbpDim d) { return d.isSplit(); });
  return PieceOffsetsOp::create(b, loc, type, SbpAttr::get(ctx, sbp),
                                splits ? SbpAttr::get(ctx, within) : nullptr,
                                b.getDenseI64ArrayAttr(shape));
}

Value DevicePlace::pieceOffset(OpBuilder &b, Location loc,
                               RankedTensorType global, ArrayRef<SbpDim> sbp,
                               int64_t dim) const {
  // The offset along `dim` alone: that of the piece of a 1-D tensor as long
  // as the dimension, split by the same mesh axes (no kernel to pick one
  // offset out of all of them).
  SmallVector<SbpDim> along;
  for (SbpDim d : sbp)
    along.push_back(d.isSplit() && d.dim == dim ? SbpDim::split(0)
                                                : SbpDim::broadcast());
  Value offset = createPieceOffsets(b, loc, {global.getDimSize(dim)}, along);
  return ReshapeOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()),
                           offset);
}

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Builds the local ops of one partitioned op.
struct Local {
  OpBuilder &b;
  Location loc;
  const DevicePlace &place;

  Value scalar(double v, Type element) {
    auto t = RankedTensorType::get({}, element);
    Attribute a = isa<FloatType>(element)
                      ? Attribute(b.getFloatAttr(element, v))
                      : Attribute(b.getIntegerAttr(element, (int64_t)v));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(t, a));
  }
  Value scalar(double v, Value like) {
    return scalar(v, typeOf(like).getElementType());
  }
  Value compare(ComparePredicate p, Value x, Value y) {
    return CompareOp::create(
        b, loc, ComparePredicateAttr::get(b.getContext(), p), x, y);
  }
  /// Reduces `v` across `axes` of the mesh.
  Value allReduce(ReductionKind kind, Value v, ArrayRef<int64_t> axes) {
    return AllReduceOp::create(b, loc, v.getType(), kind, v, place.mesh,
                               axes);
  }
  /// The sum over `dims` (kept as 1s), reduced across the mesh `axes`.
  Value globalSum(Value v, ArrayRef<int64_t> dims, ArrayRef<int64_t> axes) {
    Value local = ReduceSumOp::create(b, loc, v, dims, /*keepdims=*/true);
    return allReduce(ReductionKind::sum, local, axes);
  }

  /// A global index `index` into a dimension of global length `length`,
  /// clamped as gathers clamp, made local to the piece [offset, offset +
  /// size) (`offset` a 0-d i64 tensor): the local index and whether this
  /// device holds it.
  std::pair<Value, Value> localIndex(Value index, int64_t length,
                                     Value offset, int64_t size) {
    Value clamped = MinimumOp::create(
        b, loc, MaximumOp::create(b, loc, index, scalar(0, index)),
        scalar(static_cast<double>(length - 1), index));
    Type indexType = typeOf(index).getElementType();
    if (typeOf(offset).getElementType() != indexType)
      offset = CastOp::create(b, loc, RankedTensorType::get({}, indexType),
                              offset);
    Value local = SubOp::create(b, loc, clamped, offset);
    Value inside = MinimumOp::create(
        b, loc, MaximumOp::create(b, loc, local, scalar(0, local)),
        scalar(static_cast<double>(size - 1), local));
    return {inside, compare(ComparePredicate::eq, inside, local)};
  }
  /// `value` where `held` holds, zeros elsewhere; `held` is reshaped to
  /// broadcast along `value`'s dimensions [at, at + rank(held)).
  Value zeroUnheld(Value value, Value held, int64_t at) {
    RankedTensorType v = typeOf(value), h = typeOf(held);
    SmallVector<int64_t> shape(v.getRank(), 1);
    for (int64_t i = 0; i < h.getRank(); ++i)
      shape[at + i] = h.getDimSize(i);
    auto maskType = RankedTensorType::get(shape, h.getElementType());
    if (maskType != h)
      held = ReshapeOp::create(b, loc, maskType, held);
    return SelectOp::create(b, loc, held, value, scalar(0, value));
  }
};

/// The same op on the device's pieces.
Operation *cloneOnPieces(Operation *op, OpBuilder &b, ValueRange operands,
                         TypeRange resultTypes) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(resultTypes);
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName() != FlowDialect::getSbpAttrName() &&
        attr.getName() != FlowDialect::getOperandSbpAttrName())
      state.addAttribute(attr.getName(), attr.getValue());
  return b.create(state);
}

using Results = FailureOr<SmallVector<Value>>;

Results results(Operation *op) { return SmallVector<Value>(op->getResults()); }

Results partitionDefault(Operation *op, OpBuilder &b, ValueRange operands,
                         TypeRange types, const DevicePlace &) {
  return results(cloneOnPieces(op, b, operands, types));
}

/// A mean over a split axis: this device's sum over the global count, a
/// partial sum.
Results partitionOp(ReduceMeanOp mean, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  bool overSplit = llvm::any_of(place.operands[0], [&](SbpDim d) {
    return d.isSplit() && llvm::is_contained(mean.getAxes(), d.dim);
  });
  if (!overSplit)
    return partitionDefault(mean, b, operands, types, place);
  Local l{b, mean.getLoc(), place};
  RankedTensorType in = typeOf(mean.getInput());
  int64_t count = 1;
  for (int64_t a : mean.getAxes())
    count *= in.getDimSize(a);
  auto type = cast<RankedTensorType>(types[0]);
  Value sum = ReduceSumOp::create(b, l.loc, type, operands[0], mean.getAxes(),
                                  mean.getKeepdims());
  return SmallVector<Value>{MulOp::create(
      b, l.loc, type, sum,
      l.scalar(1.0 / static_cast<double>(count), type.getElementType()))};
}

/// A slice keeps a split only of a dimension it takes whole: its limit
/// there is the piece's length.
Results partitionOp(SliceOp slice, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  auto in = typeOf(operands[0]);
  SmallVector<int64_t> limits = llvm::to_vector(slice.getLimits());
  for (int64_t d = 0, e = in.getRank(); d < e; ++d)
    if (in.getDimSize(d) != slice.getInput().getType().getDimSize(d))
      limits[d] = in.getDimSize(d);
  Operation *local = cloneOnPieces(slice, b, operands, types);
  local->setAttr(slice.getLimitsAttrName(), b.getDenseI64ArrayAttr(limits));
  return results(local);
}

/// A reshape whose pieces differ in size (an uneven split it cannot keep).
Results partitionOp(ReshapeOp reshape, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  auto in = typeOf(operands[0]);
  auto out = cast<RankedTensorType>(types[0]);
  if (in.getNumElements() != out.getNumElements())
    return reshape.emitError("cannot partition this reshape: the device's "
                             "piece of the operand has ")
           << in.getNumElements() << " elements but its piece of the "
           << "result has " << out.getNumElements()
           << " (an uneven split the reshape does not keep)";
  return partitionDefault(reshape, b, operands, types, place);
}

/// Softmax over a split axis: the maximum and the sum of exponentials of
/// each piece, reduced across the splitting mesh axes.
template <typename Op>
Results partitionSoftmax(Op op, OpBuilder &b, ValueRange operands,
                         TypeRange types, const DevicePlace &place) {
  int64_t axis = op.getAxis();
  SmallVector<int64_t> axes = place.axesSplitting(place.operands[0], axis);
  if (axes.empty())
    return partitionDefault(op, b, operands, types, place);
  Local l{b, op.getLoc(), place};
  Value x = operands[0];
  Value max = l.allReduce(
      ReductionKind::max,
      ReduceMaxOp::create(b, l.loc, x, ArrayRef<int64_t>{axis}, true), axes);
  Value shifted = SubOp::create(b, l.loc, x, max);
  Value e = ExpOp::create(b, l.loc, shifted);
  Value sum = l.globalSum(e, {axis}, axes);
  if (isa<SoftmaxOp>(op))
    return SmallVector<Value>{DivOp::create(b, l.loc, e, sum)};
  return SmallVector<Value>{
      SubOp::create(b, l.loc, shifted, LogOp::create(b, l.loc, sum))};
}
Results partitionOp(SoftmaxOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  return partitionSoftmax(op, b, operands, types, place);
}
Results partitionOp(LogSoftmaxOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  return partitionSoftmax(op, b, operands, types, place);
}

/// The mesh axes splitting any of the normalized dimensions [axis, rank).
SmallVector<int64_t> normAxes(const DevicePlace &place, int64_t axis,
                              int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    llvm::append_range(axes, place.axesSplitting(place.operands[0], d));
  llvm::sort(axes);
  return axes;
}

/// The number of elements a norm over [axis, rank) of `input` reduces.
double normCount(Value input, int64_t axis) {
  RankedTensorType t = typeOf(input);
  double n = 1;
  for (int64_t d = axis; d < t.getRank(); ++d)
    n *= static_cast<double>(t.getDimSize(d));
  return n;
}

/// Layer norm over split dimensions: the mean, then the variance about it,
/// each a sum reduced across the splitting mesh axes (two passes, as the
/// local kernel: no cancellation from E[x^2] - E[x]^2).
Results partitionOp(LayerNormOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  int64_t axis = op.getAxis(), rank = typeOf(op.getInput()).getRank();
  SmallVector<int64_t> axes = normAxes(place, axis, rank);
  if (axes.empty())
    return partitionDefault(op, b, operands, types, place);
  Local l{b, op.getLoc(), place};
  Value x = operands[0];
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(axis, rank));
  Value scale = l.scalar(1.0 / normCount(op.getInput(), axis), x);
  Value mean = MulOp::create(b, l.loc, l.globalSum(x, dims, axes), scale);
  Value centered = SubOp::create(b, l.loc, x, mean);
  Value var = MulOp::create(
      b, l.loc,
      l.globalSum(MulOp::create(b, l.loc, centered, centered), dims, axes),
      scale);
  Value inv = RsqrtOp::create(
      b, l.loc,
      AddOp::create(b, l.loc, var,
                    l.scalar(op.getEpsilon().convertToDouble(), x)));
  Value y = MulOp::create(b, l.loc, centered, inv);
  size_t next = 1;
  if (op.getWeight())
    y = MulOp::create(b, l.loc, y, operands[next++]);
  if (op.getBias())
    y = AddOp::create(b, l.loc, y, operands[next++]);
  return SmallVector<Value>{y};
}

/// RMS norm over split dimensions: the sum of squares reduced across the
/// splitting mesh axes.
Results partitionOp(RmsNormOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  int64_t axis = op.getAxis(), rank = typeOf(op.getInput()).getRank();
  SmallVector<int64_t> axes = normAxes(place, axis, rank);
  if (axes.empty())
    return partitionDefault(op, b, operands, types, place);
  Local l{b, op.getLoc(), place};
  Value x = operands[0];
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(axis, rank));
  Value meanSquare = MulOp::create(
      b, l.loc, l.globalSum(MulOp::create(b, l.loc, x, x), dims, axes),
      l.scalar(1.0 / normCount(op.getInput(), axis), x));
  Value inv = RsqrtOp::create(
      b, l.loc,
      AddOp::create(b, l.loc, meanSquare,
                    l.scalar(op.getEpsilon().convertToDouble(), x)));
  Value y = MulOp::create(b, l.loc, x, inv);
  if (op.getWeight())
    y = MulOp::create(b, l.loc, y, operands[1]);
  return SmallVector<Value>{y};
}

/// A gather (or gather_elements) from an input split along the indexed
/// axis: a vocabulary-parallel embedding, or the target's logit of a
/// vocabulary-parallel cross-entropy. Each device takes what it holds and
/// zeros for the rest (a partial sum); the mask of held indices broadcasts
/// along the result from dimension `maskAt`.
template <typename Op>
Results partitionTake(Op op, OpBuilder &b, ValueRange operands,
                      TypeRange types, const DevicePlace &place,
                      int64_t maskAt) {
  int64_t axis = op.getAxis();
  if (place.axesSplitting(place.operands[0], axis).empty())
    return partitionDefault(op, b, operands, types, place);
  Local l{b, op.getLoc(), place};
  RankedTensorType input = typeOf(op.getInput());
  int64_t size = place.pieceSize(input, place.operands[0], axis);
  Value offset = place.pieceOffset(b, l.loc, input, place.operands[0], axis);
  auto [index, held] =
      l.localIndex(operands[1], input.getDimSize(axis), offset, size);
  Value taken = Op::create(b, l.loc, types[0], operands[0], index,
                           op.getAxisAttr());
  return SmallVector<Value>{l.zeroUnheld(taken, held, maskAt)};
}
Results partitionOp(GatherOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  // The result is input[:axis] + indices + input[axis + 1:].
  return partitionTake(op, b, operands, types, place, op.getAxis());
}
Results partitionOp(GatherElementsOp op, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  // The result is shaped like the indices.
  return partitionTake(op, b, operands, types, place, 0);
}

/// A grouped convolution over split channels: the device's groups.
Results partitionOp(Conv2dOp conv, OpBuilder &b, ValueRange operands,
                    TypeRange types, const DevicePlace &place) {
  int64_t global = typeOf(conv.getInput()).getDimSize(1);
  int64_t local = typeOf(operands[0]).getDimSize(1);
  if (conv.getGroups() == 1 || local == global)
    return partitionDefault(conv, b, operands, types, place);
  int64_t perGroup = global / conv.getGroups();
  if (local % perGroup != 0)
    return conv.emitError("cannot partition this convolution: the device's ")
           << local << " input channels are not whole groups of "
           << perGroup;
  Operation *piece = cloneOnPieces(conv, b, operands, types);
  piece->setAttr(conv.getGroupsAttrName(),
                 b.getI64IntegerAttr(local / perGroup));
  return results(piece);
}

} // namespace

FailureOr<SmallVector<Value>>
mlir::flow::partitionOnDevice(Operation *op, OpBuilder &b, ValueRange operands,
                              TypeRange types, const DevicePlace &place) {
  return llvm::TypeSwitch<Operation *, Results>(op)
      .Case<ReduceMeanOp, SliceOp, ReshapeOp, SoftmaxOp, LogSoftmaxOp,
            LayerNormOp, RmsNormOp, GatherOp, GatherElementsOp, Conv2dOp>(
          [&](auto typed) {
            return partitionOp(typed, b, operands, types, place);
          })
      .Default([&](Operation *other) {
        return partitionDefault(other, b, operands, types, place);
      });
}
