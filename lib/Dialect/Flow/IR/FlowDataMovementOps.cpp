//===- FlowDataMovementOps.cpp - Data movement and collective ops ---------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Flow/IR/FlowVerifiers.h"
#include "flow/runtime/rules/Pieces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::opsupport;

// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  FailureOr<Extents> in = getExtents(getInput().getType());
  FailureOr<Extents> out = getExtents(getType());
  if (failed(in) || failed(out))
    return emitOpError() << "needs a #flow.shape for each dynamic dimension";
  Extent inCount = productOf(*in), outCount = productOf(*out);
  if (!inCount.valid() || !outCount.valid())
    return emitOpError() << "tensor has too many elements";
  if (inCount != outCount)
    return emitOpError() << "cannot reshape " << extentsStr(*in) << " ("
                         << inCount.str() << " elements) to "
                         << extentsStr(*out) << " (" << outCount.str()
                         << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  FailureOr<Extents> extents = getExtents(input);
  if (!input || failed(extents))
    return report.fail("input must be a ranked tensor with a #flow.shape for "
                       "each dynamic dimension");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if ((int64_t)perm.size() != input.getRank())
    return report.fail("permutation has ", perm.size(),
                       " entries but the input has rank ", input.getRank());
  if (failed(checkAxes(perm, input.getRank(), "permutation entry", report)))
    return failure();
  Extents shape;
  for (int64_t p : perm)
    shape.push_back((*extents)[p]);
  results.push_back(getTensorType(context, shape, input.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  FailureOr<Extents> inExtents = getExtents(getInput().getType());
  FailureOr<Extents> outExtents = getExtents(getType());
  if (failed(inExtents) || failed(outExtents))
    return emitOpError() << "needs a #flow.shape for each dynamic dimension";
  ArrayRef<Extent> in = *inExtents, out = *outExtents;
  if (in.size() > out.size())
    return emitOpError() << "cannot broadcast rank " << in.size()
                         << " to the lower rank " << out.size();
  for (size_t i = 0; i < in.size(); ++i) {
    const Extent &d = in[in.size() - 1 - i], &r = out[out.size() - 1 - i];
    if (d != r && !d.is(1))
      return emitOpError() << "cannot broadcast " << extentsStr(in) << " to "
                           << extentsStr(out) << ": dimension "
                           << -(int64_t)i - 1 << " is " << d.str()
                           << ", not 1 or " << r.str();
  }
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return report.fail("needs at least one input");
  RankedTensorType first = tensorTypeOf(inputs.front());
  FailureOr<Extents> firstExtents = getExtents(first);
  if (!first || failed(firstExtents))
    return report.fail("inputs must be ranked tensors with a #flow.shape for "
                       "each dynamic dimension");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, first.getRank(), "axis", report)))
    return failure();
  Extents shape = *firstExtents;
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType type = tensorTypeOf(v);
    FailureOr<Extents> extents = getExtents(type);
    if (!type || failed(extents) || type.getRank() != first.getRank())
      return report.fail("input #", i + 1, " does not have rank ",
                         first.getRank());
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == axis)
        continue;
      if ((*extents)[d] != (*firstExtents)[d])
        return report.fail(
            "input #", i + 1, " has shape ", extentsStr(*extents),
            " but input #0 has ", extentsStr(*firstExtents),
            "; only the concatenated axis ", axis, " may differ");
    }
    shape[axis] = shape[axis] + (*extents)[axis];
    if (!shape[axis].valid())
      return report.fail("concatenated size is too large");
  }
  results.push_back(getTensorType(context, shape, first.getElementType()));
  return success();
}

LogicalResult ReverseOp::verify() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : getAxes()) {
    if (axis < 0 || axis >= rank)
      return emitOpError() << "axis " << axis << " is out of range for rank "
                           << rank;
    if (!seen.insert(axis).second)
      return emitOpError() << "axis " << axis << " is listed twice";
  }
  return success();
}

LogicalResult DynamicSliceOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from the input's "
           << input.getElementType();
  if (input.getRank() != result.getRank())
    return emitOpError("result rank ")
           << result.getRank() << " differs from the input's "
           << input.getRank();
  RankedTensorType offsets = getOffsets().getType();
  if (offsets.getRank() != 1 || offsets.getDimSize(0) != input.getRank() ||
      !offsets.getElementType().isInteger(64))
    return emitOpError("needs one i64 offset per input dimension: ")
           << "tensor<" << input.getRank() << "xi64>, got " << offsets;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (result.getDimSize(d) > input.getDimSize(d))
      return emitOpError("dimension ")
             << d << " of the result (" << result.getDimSize(d)
             << ") is longer than the input's (" << input.getDimSize(d) << ")";
  return success();
}

/// A piece's offsets (flow.piece_offsets and its host form): one i64 per
/// dimension of `of`; splits within range; where `within` differs from
/// `sbp`, `within` does not split (so the piece lies in `within`'s).
LogicalResult
mlir::flow::opsupport::verifyPieceOffsets(Operation *op, SbpAttr sbp,
                                        SbpAttr within, ArrayRef<int64_t> of,
                                        ShapedType result) {
  if (result.getRank() != 1 ||
      result.getDimSize(0) != static_cast<int64_t>(of.size()))
    return op->emitOpError("gives one offset per dimension of the tensor: ")
           << of.size() << " values, got " << result;
  if (llvm::any_of(of, [](int64_t n) { return n < 0; }))
    return op->emitOpError("the tensor's shape has a negative dimension");
  auto checkSplits = [&](SbpAttr a) -> LogicalResult {
    for (SbpDim d : a.getDims())
      if (d.isSplit() && (d.dim < 0 || d.dim >= static_cast<int64_t>(of.size())))
        return op->emitOpError("splits dimension ")
               << d.dim << " of a rank-" << of.size() << " tensor";
    return success();
  };
  if (failed(checkSplits(sbp)))
    return failure();
  if (!within)
    return success();
  if (failed(checkSplits(within)))
    return failure();
  ArrayRef<SbpDim> to = sbp.getDims(), from = within.getDims();
  if (to.size() != from.size())
    return op->emitOpError("'within' describes ")
           << from.size() << " mesh axes, the piece " << to.size();
  for (size_t axis = 0; axis < to.size(); ++axis) {
    if (to[axis] == from[axis] || (!to[axis].isSplit() && !from[axis].isSplit()))
      continue;
    if (from[axis].isSplit())
      return op->emitOpError("mesh axis ")
             << axis << " splits the 'within' piece otherwise than the piece";
    for (size_t later = axis + 1; later < to.size(); ++later)
      if (from[later].isSplit() && from[later].dim == to[axis].dim)
        return op->emitOpError("mesh axis ")
               << later << " splits dimension " << to[axis].dim
               << " of the 'within' piece before axis " << axis << " does";
  }
  return success();
}

LogicalResult PieceOffsetsOp::verify() {
  return verifyPieceOffsets(*this, getSbp(), getWithinAttr(), getOf(),
                            getType());
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  FailureOr<Extents> extents = getExtents(input);
  if (!input || failed(extents))
    return report.fail("input must be a ranked tensor with a #flow.shape for "
                       "each dynamic dimension");
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  size_t rank = input.getRank();
  if (starts.size() != rank || limits.size() != rank || strides.size() != rank)
    return report.fail("starts, limits and strides need one entry per input "
                       "dimension (",
                       rank, "), got ", starts.size(), ", ", limits.size(),
                       " and ", strides.size());
  Extents shape;
  for (size_t d = 0; d < rank; ++d) {
    const Extent &extent = (*extents)[d];
    if (!extent.isConstant()) {
      // A symbolic dimension is taken whole: its limit is kSliceToEnd.
      if (starts[d] != 0 || strides[d] != 1 || limits[d] != kSliceToEnd)
        return report.fail("dimension ", d, " is symbolic (", extent.str(),
                           "): a slice takes it whole (start 0, stride 1, "
                           "limit ",
                           kSliceToEnd, ")");
      shape.push_back(extent);
      continue;
    }
    int64_t size = extent.constant();
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > size)
      return report.fail("dimension ", d, ": need 0 <= start (", starts[d],
                         ") <= limit (", limits[d], ") <= size (", size, ")");
    if (strides[d] < 1)
      return report.fail("dimension ", d, ": stride must be at least 1, got ",
                         strides[d]);
    int64_t length = limits[d] - starts[d];
    shape.push_back(Extent(length == 0 ? 0 : (length - 1) / strides[d] + 1));
  }
  results.push_back(getTensorType(context, shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  RankedTensorType indices = tensorTypeOf(adaptor.getIndices());
  FailureOr<Extents> in = getExtents(input), idx = getExtents(indices);
  if (!input || !indices || failed(in) || failed(idx))
    return report.fail("operands must be ranked tensors with a #flow.shape "
                       "for each dynamic dimension");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, input.getRank(), "axis", report)))
    return failure();
  if (!(*in)[axis].isConstant())
    return report.fail("cannot gather along dimension ", axis, " of size ",
                       (*in)[axis].str(),
                       ": the gathered dimension must be static");
  if ((*in)[axis].is(0) && !productOf(*idx).is(0))
    return report.fail("cannot gather from dimension ", axis,
                       ", which is empty: no index is valid");
  Extents shape(ArrayRef<Extent>(*in).take_front(axis));
  llvm::append_range(shape, *idx);
  llvm::append_range(shape, ArrayRef<Extent>(*in).drop_front(axis + 1));
  results.push_back(getTensorType(context, shape, input.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  RankedTensorType indices = tensorTypeOf(adaptor.getIndices());
  if (!input || !indices)
    return report.fail("operands must be ranked tensors");
  if (input.getRank() != indices.getRank())
    return report.fail("indices must have the input's rank ",
                       input.getRank(), ", got ", indices.getRank());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, input.getRank(), "axis", report)))
    return failure();
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > input.getDimSize(d))
      return report.fail("indices dimension ", d, " (", indices.getDimSize(d),
                         ") is larger than the input's (",
                         input.getDimSize(d), ")");
  if (input.getDimSize(axis) == 0 && indices.getNumElements() > 0)
    return report.fail("cannot gather from dimension ", axis,
                       ", which is empty: no index is valid");
  results.push_back(
      RankedTensorType::get(indices.getShape(), input.getElementType()));
  return success();
}

LogicalResult ScatterNdOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  RankedTensorType indices = tensorTypeOf(adaptor.getIndices());
  RankedTensorType updates = tensorTypeOf(adaptor.getUpdates());
  if (!input || !indices || !updates)
    return report.fail("operands must be ranked tensors");
  if (indices.getRank() < 1)
    return report.fail("indices must have rank 1 or more");
  int64_t q = indices.getShape().back();
  if (q < 1 || q > input.getRank())
    return report.fail("index tuples of ", q, " coordinates for an input of ",
                       "rank ", input.getRank(), " (1 to the rank)");
  SmallVector<int64_t> want(indices.getShape().drop_back());
  llvm::append_range(want, input.getShape().drop_front(q));
  if (updates.getShape() != ArrayRef<int64_t>(want))
    return report.fail("updates must have shape [", ArrayRef<int64_t>(want),
                       "] (the indices' ",
                       "leading dimensions, then the input's after the ", q,
                       " indexed), got [", updates.getShape(), "]");
  if (updates.getElementType() != input.getElementType())
    return report.fail("updates must have the input's element type ",
                       input.getElementType(), ", got ",
                       updates.getElementType());
  if (input.getElementType().isInteger(1) &&
      adaptor.getReduction() != ScatterReduction::none)
    return report.fail("reduction '",
                       stringifyScatterReduction(adaptor.getReduction()),
                       "' of i1 elements");
  results.push_back(input);
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  if (!input)
    return report.fail("input must be a ranked tensor");
  size_t rank = input.getRank();
  if (failed(checkSizes(adaptor.getLow(), rank, 0, "low padding", report)) ||
      failed(checkSizes(adaptor.getHigh(), rank, 0, "high padding", report)))
    return failure();
  FailureOr<Extents> extents = getExtents(input);
  if (failed(extents))
    return report.fail("input needs a #flow.shape for each dynamic "
                       "dimension");
  Extents shape;
  for (size_t d = 0; d < rank; ++d) {
    Extent size = (*extents)[d] + Extent(adaptor.getLow()[d]) +
                  Extent(adaptor.getHigh()[d]);
    if (!size.valid())
      return report.fail("padded size of dimension ", d, " is too large");
    shape.push_back(size);
  }
  results.push_back(
      getTensorType(input.getContext(), shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks what does not need the mesh: axes and tensor dimensions.
LogicalResult
mlir::flow::opsupport::verifyCollective(Operation *op, ArrayRef<int64_t> axes,
                 ArrayRef<std::pair<StringRef, int64_t>> dims) {
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t a : axes) {
    if (a < 0)
      return op->emitOpError() << "mesh axis " << a << " is negative";
    if (!seen.insert(a).second)
      return op->emitOpError()
             << "mesh axis " << a << " appears more than once";
  }
  int64_t rank = cast<ShapedType>(op->getOperand(0).getType()).getRank();
  for (auto [name, d] : dims)
    if (d < 0 || d >= rank)
      return op->emitOpError()
             << name << " " << d << " is out of range [0, " << rank << ")";
  return success();
}

/// Resolves the mesh of a collective and the size of its device group.
FailureOr<int64_t>
mlir::flow::opsupport::resolveGroup(Operation *op, FlatSymbolRefAttr name,
                                       ArrayRef<int64_t> axes,
                                       SymbolTableCollection &symbolTable) {
  MeshOp mesh = lookupMesh(op, name, &symbolTable);
  if (!mesh)
    return op->emitOpError()
           << "refers to " << name << ", which is not a flow.mesh in scope";
  int64_t group = 1;
  for (int64_t a : axes) {
    if (a >= mesh.getRank())
      return op->emitOpError()
             << "mesh axis " << a << " is out of range: " << name
             << " has rank " << mesh.getRank();
    group *= mesh.getShape()[a];
  }
  return group;
}

#define FLOW_COLLECTIVE_GROUP_SIZE(OP)                                         \
  int64_t OP::getGroupSize(SymbolTableCollection &symbolTable) {               \
    FailureOr<int64_t> g =                                                     \
        resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);        \
    return succeeded(g) ? *g : 0;                                              \
  }
FLOW_COLLECTIVE_GROUP_SIZE(AllReduceOp)
FLOW_COLLECTIVE_GROUP_SIZE(AllGatherOp)
FLOW_COLLECTIVE_GROUP_SIZE(ReduceScatterOp)
FLOW_COLLECTIVE_GROUP_SIZE(AllToAllOp)
FLOW_COLLECTIVE_GROUP_SIZE(BroadcastOp)
#undef FLOW_COLLECTIVE_GROUP_SIZE

/// Checks the shapes of a collective over a group of devices that joins
/// pieces along the `gathered` dimensions (the result holds the whole
/// dimension, the operand this device's piece) and cuts the `scattered`
/// ones (the operand holds the whole, the result a piece). A dimension of
/// N over g devices is cut as evenly as it can be: every piece is
/// floor(N / g) or ceil(N / g) long (the first N mod g devices hold the
/// longer ones), so a device's piece tells the whole only up to that.
LogicalResult
mlir::flow::opsupport::verifyPieces(Operation *op, RankedTensorType input, RankedTensorType result,
             ArrayRef<std::pair<int64_t, int64_t>> gathered,
             ArrayRef<std::pair<int64_t, int64_t>> scattered) {
  using ::flow::rules::isPiece;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t in = input.getDimSize(d), out = result.getDimSize(d);
    auto gather = llvm::find_if(gathered, [&](auto p) { return p.first == d; });
    auto scatter =
        llvm::find_if(scattered, [&](auto p) { return p.first == d; });
    bool isGathered = gather != gathered.end();
    bool isScattered = scatter != scattered.end();
    if (isGathered && isScattered) {
      if (in != out)
        return op->emitOpError()
               << "dimension " << d << " is both cut and joined, so it keeps "
               << "its size " << in << ", got " << out;
      continue;
    }
    if (isGathered) {
      if (!isPiece(in, out, gather->second))
        return op->emitOpError()
               << "operand dimension " << d << " (" << in
               << ") is not a piece of the result's " << out << " over "
               << gather->second << " devices (pieces of " << out << " are "
               << out / gather->second << " or "
               << (out + gather->second - 1) / gather->second << " long)";
      continue;
    }
    if (isScattered) {
      if (in < scatter->second)
        return op->emitOpError()
               << "dimension " << d << " of size " << in
               << " is shorter than the group of " << scatter->second
               << " devices it is cut over";
      if (!isPiece(out, in, scatter->second))
        return op->emitOpError()
               << "result dimension " << d << " (" << out
               << ") is not a piece of the operand's " << in << " over "
               << scatter->second << " devices (pieces of " << in << " are "
               << in / scatter->second << " or "
               << (in + scatter->second - 1) / scatter->second << " long)";
      continue;
    }
    if (in != out)
      return op->emitOpError() << "dimension " << d << " changes from " << in
                               << " to " << out
                               << " but the collective does not cut or join it";
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, getMeshAxes(), {});
}
LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
}

LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, getMeshAxes(), {{"dim", getDim()}});
}
LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> g =
      resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
  if (failed(g))
    return failure();
  return verifyPieces(*this, getInput().getType(), getType(),
                      {{getDim(), *g}}, {});
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(*this, getMeshAxes(), {{"dim", getDim()}});
}
LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> g =
      resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
  if (failed(g))
    return failure();
  return verifyPieces(*this, getInput().getType(), getType(), {},
                      {{getDim(), *g}});
}

LogicalResult AllToAllOp::verify() {
  return verifyCollective(
      *this, getMeshAxes(),
      {{"split_dim", getSplitDim()}, {"concat_dim", getConcatDim()}});
}
LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> g =
      resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
  if (failed(g))
    return failure();
  return verifyPieces(*this, getInput().getType(), getType(),
                      {{getConcatDim(), *g}}, {{getSplitDim(), *g}});
}

LogicalResult BroadcastOp::verify() {
  if (getRoot() < 0)
    return emitOpError() << "root " << getRoot() << " is negative";
  return verifyCollective(*this, getMeshAxes(), {});
}
LogicalResult
BroadcastOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> g =
      resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
  if (failed(g))
    return failure();
  if (getRoot() >= *g)
    return emitOpError() << "root " << getRoot() << " is outside the group of "
                         << *g << " devices";
  return success();
}
