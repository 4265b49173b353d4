//===- FlowOps.cpp - Flow operations: verifiers and shape rules -----------===//
//
// Part of the Flow project.
//
// Shape rules live in free functions shared by the verifiers and by result
// type inference, so that builders, the parser and the verifier agree.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Flow/IR/FlowVerifiers.h"
#include "flow/runtime/rules/Window.h"
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

MeshOp mlir::flow::lookupMesh(Operation *from, FlatSymbolRefAttr name,
                              SymbolTableCollection *symbolTable) {
  if (!name)
    return nullptr;
  Operation *symbol = symbolTable
                          ? symbolTable->lookupNearestSymbolFrom(from, name)
                          : SymbolTable::lookupNearestSymbolFrom(from, name);
  return dyn_cast_or_null<MeshOp>(symbol);
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

/// A parameter's piece: both attributes or neither; the block at
/// `offsets` of `shape` inside the archive's tensor of shape `of`.
LogicalResult mlir::flow::opsupport::verifyPiece(
    Operation *op, std::optional<ArrayRef<int64_t>> offsets,
    std::optional<ArrayRef<int64_t>> of, ArrayRef<int64_t> shape) {
  if (!offsets && !of)
    return success();
  if (!offsets || !of)
    return op->emitOpError("needs both the piece's offsets and the shape "
                           "it is a piece of");
  if (offsets->size() != shape.size() || of->size() != shape.size())
    return op->emitOpError("piece offsets and shape need one entry per "
                           "dimension of the result");
  for (auto [o, n, whole] : llvm::zip(*offsets, shape, *of))
    if (o < 0 || o + n > whole)
      return op->emitOpError("piece [")
             << o << ", " << o + n << ") does not lie in a dimension of "
             << whole;
  return success();
}

/// A parameter's piece by SBP: the attribute and the whole shape together
/// (the archive's tensor, or with offsets the block of it they start);
/// splits and broadcasts only, splitting dimensions of the result; each
/// dimension of the result no longer than the whole's and, where split, a
/// piece of it.
LogicalResult
mlir::flow::opsupport::verifySbpPiece(Operation *op, SbpAttr sbp,
                                      std::optional<ArrayRef<int64_t>> of,
                                      ArrayRef<int64_t> shape) {
  if (!sbp && !of)
    return success();
  if (!sbp || !of)
    return op->emitOpError("needs both the piece's SBP and the shape it is "
                           "a piece of");
  if (of->size() != shape.size())
    return op->emitOpError("the shape it is a piece of needs one entry per "
                           "dimension of the result");
  SmallVector<bool> split(shape.size(), false);
  for (SbpDim d : sbp.getDims()) {
    if (d.isPartial())
      return op->emitOpError("a piece by SBP splits or broadcasts; a "
                             "parameter is never partial");
    if (d.isSplit()) {
      if (d.dim < 0 || d.dim >= static_cast<int64_t>(shape.size()))
        return op->emitOpError("splits dimension ")
               << d.dim << " of a rank-" << shape.size() << " result";
      split[d.dim] = true;
    }
  }
  for (auto [i, n, whole] : llvm::enumerate(shape, *of))
    if (n < 0 || n > whole || (!split[i] && n != whole))
      return op->emitOpError("dimension ")
             << i << " (" << n << ") is not a piece of " << whole
             << " under " << sbp;
  return success();
}

bool mlir::flow::isParameterConcat(Operation *op) {
  auto concat = dyn_cast_or_null<ConcatOp>(op);
  return concat && !concat.getInputs().empty() &&
         llvm::all_of(concat.getInputs(), [](Value v) {
           return v.getDefiningOp<ParameterOp>() != nullptr;
         });
}

ParameterOp mlir::flow::createParameterPiece(OpBuilder &b, Location loc,
                                             ParameterOp parameter,
                                             ArrayRef<int64_t> starts,
                                             RankedTensorType type) {
  SmallVector<int64_t> offsets(starts);
  SmallVector<int64_t> of(parameter.getType().getShape());
  if (auto outer = parameter.getPieceOffsets()) {
    for (auto [o, base] : llvm::zip(offsets, *outer))
      o += base;
    of.assign(parameter.getPieceOf()->begin(), parameter.getPieceOf()->end());
  }
  return ParameterOp::create(b, loc, type, parameter.getNameAttr(),
                             b.getDenseI64ArrayAttr(offsets),
                             b.getDenseI64ArrayAttr(of), /*piece_sbp=*/nullptr,
                             /*piece_sbp_of=*/nullptr);
}

LogicalResult mlir::flow::opsupport::verifySymbolValues(Operation *op,
                                                        ShapedType result) {
  ArrayAttr dims = getSizeSymbols(op);
  int64_t declared = dims ? dims.size() : 0;
  if (declared == 0)
    return op->emitOpError("is in a function that declares no size symbols "
                           "(no 'flow.dims')");
  if (result.getDimSize(0) != declared)
    return op->emitOpError("gives ")
           << result.getDimSize(0) << " sizes but its function declares "
           << declared << " size symbols";
  return success();
}

LogicalResult SymbolsOp::verify() {
  return verifySymbolValues(*this, getType());
}

LogicalResult ParameterOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty parameter name");
  if (failed(verifySbpPiece(*this, getPieceSbpAttr(), getPieceSbpOf(),
                            getType().getShape())))
    return failure();
  // With an SBP, the offsets start the block the SBP cuts.
  return verifyPiece(*this, getPieceOffsets(), getPieceOf(),
                     getPieceSbpOf() ? *getPieceSbpOf()
                                     : getType().getShape());
}

LogicalResult MeshOp::verify() {
  if (getShape().empty())
    return emitOpError() << "needs at least one mesh axis";
  for (int64_t size : getShape())
    if (size < 1)
      return emitOpError() << "mesh axis sizes must be positive, got " << size;
  std::optional<int64_t> devices = product(getShape());
  if (!devices || *devices > kMaxMeshDevices)
    return emitOpError() << "mesh has more than " << kMaxMeshDevices
                         << " devices";
  return success();
}

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (int64_t size : getShape())
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// AnnotateOp
//===----------------------------------------------------------------------===//

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  MeshOp mesh = lookupMesh(*this, getMeshAttr(), &symbolTable);
  if (!mesh)
    return emitOpError() << "refers to " << getMeshAttr()
                         << ", which is not a flow.mesh in scope";
  return getSbp().verifyFor(mesh.getShape(), getType(),
                            [&]() { return emitOpError(); });
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops, compare, select
//===----------------------------------------------------------------------===//

/// Result type of a broadcasting elementwise op whose operands are `values`.
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange values, Type elementType,
                                    SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  SmallVector<Extents> shapes;
  for (Value v : values) {
    FailureOr<Extents> extents = getExtents(v.getType());
    if (failed(extents))
      return report.fail("operands must be ranked tensors with a #flow.shape "
                         "for each dynamic dimension");
    shapes.push_back(*extents);
  }
  FailureOr<Extents> shape = broadcastExtents(shapes, report.emitter());
  if (failed(shape))
    return failure();
  results.push_back(
      getTensorType(elementType.getContext(), *shape, elementType));
  return success();
}

LogicalResult CastOp::verify() {
  // SameOperandsAndResultShape takes any two '?' for equal: the extents
  // must be the same too.
  FailureOr<Extents> in = getExtents(getInput().getType());
  FailureOr<Extents> out = getExtents(getType());
  if (failed(in) || failed(out) || *in != *out)
    return emitOpError() << "result must have the input's shape "
                         << (succeeded(in) ? extentsStr(*in) : std::string())
                         << ", got "
                         << (succeeded(out) ? extentsStr(*out) : std::string());
  return success();
}

#define FLOW_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    RankedTensorType lhs = tensorTypeOf(adaptor.getLhs());                     \
    if (!lhs)                                                                  \
      return Reporter{loc}.fail("operands must be ranked tensors");            \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},           \
                          lhs.getElementType(), results);                      \
  }
FLOW_BINARY_INFER(AddOp)
FLOW_BINARY_INFER(SubOp)
FLOW_BINARY_INFER(MulOp)
FLOW_BINARY_INFER(DivOp)
FLOW_BINARY_INFER(MaximumOp)
FLOW_BINARY_INFER(MinimumOp)
FLOW_BINARY_INFER(PowOp)
#undef FLOW_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},
                        IntegerType::get(context, 1), results);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType onTrue = tensorTypeOf(adaptor.getOnTrue());
  RankedTensorType onFalse = tensorTypeOf(adaptor.getOnFalse());
  if (!onTrue || !onFalse)
    return report.fail("operands must be ranked tensors");
  if (onTrue.getElementType() != onFalse.getElementType())
    return report.fail("on_true and on_false have different element types (",
                       onTrue.getElementType(), " vs ",
                       onFalse.getElementType(), ")");
  return inferBroadcast(
      loc, {adaptor.getCondition(), adaptor.getOnTrue(), adaptor.getOnFalse()},
      onTrue.getElementType(), results);
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType lhs = tensorTypeOf(adaptor.getLhs());
  RankedTensorType rhs = tensorTypeOf(adaptor.getRhs());
  if (!lhs || !rhs)
    return report.fail("operands must be ranked tensors");
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return report.fail("operands need rank 2 or more, got ranks ",
                       lhs.getRank(), " and ", rhs.getRank());
  FailureOr<Extents> ea = getExtents(lhs), eb = getExtents(rhs);
  if (failed(ea) || failed(eb))
    return report.fail("operands need a #flow.shape for each dynamic "
                       "dimension");
  ArrayRef<Extent> a = *ea, b = *eb;
  int64_t ra = a.size(), rb = b.size();
  const Extent &m = adaptor.getTransposeLhs() ? a[ra - 1] : a[ra - 2];
  const Extent &ka = adaptor.getTransposeLhs() ? a[ra - 2] : a[ra - 1];
  const Extent &kb = adaptor.getTransposeRhs() ? b[rb - 1] : b[rb - 2];
  const Extent &n = adaptor.getTransposeRhs() ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return report.fail("contracting dimensions differ: lhs has ", ka.str(),
                       ", rhs has ", kb.str(), " (lhs ", extentsStr(a),
                       ", rhs ", extentsStr(b), ")");
  FailureOr<Extents> batch = broadcastExtents(
      {Extents(a.drop_back(2)), Extents(b.drop_back(2))}, report.emitter());
  if (failed(batch))
    return failure();
  Extents shape = *batch;
  shape.append({m, n});
  Type element = lhs.getElementType();
  if (adaptor.getAccumulateF32()) {
    if (!element.isBF16() && !element.isF16())
      return report.fail("accumulate_f32 takes bf16 or f16 operands, got ",
                         lhs.getElementType());
    element = Float32Type::get(lhs.getContext());
  }
  results.push_back(getTensorType(lhs.getContext(), shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Output length of a sliding window: `size` input elements, padded by
/// `padBegin`/`padEnd`, a window of `kernel` taps `dilation` apart, moving by
/// `stride`. With `ceilMode` a partial last window counts, unless it would
/// start in the end padding.
static FailureOr<int64_t> windowOutputSize(int64_t size, int64_t padBegin,
                                           int64_t padEnd, int64_t kernel,
                                           int64_t stride, int64_t dilation,
                                           bool ceilMode, StringRef dimName,
                                           const Reporter &report) {
  std::optional<int64_t> extentOr = mulAdd(dilation, kernel - 1, 1);
  std::optional<int64_t> paddedOr = mulAdd(1, size, padBegin);
  if (paddedOr)
    paddedOr = mulAdd(1, *paddedOr, padEnd);
  if (!extentOr || !paddedOr)
    return report.fail("window or padding along the ", dimName,
                       " is too large");
  int64_t extent = *extentOr;
  int64_t span = *paddedOr - extent;
  if (span < 0)
    return report.fail("the window (", extent,
                       " with dilation) is larger "
                       "than the padded input ",
                       dimName, " (", *paddedOr, ")");
  // The runtime checks library pools with the same rule.
  return ::flow::rules::windowExtent(size, padBegin, padEnd, dilation, kernel,
                                     stride, ceilMode);
}

/// Output height and width of a window sliding over the spatial dims of
/// `x` (NCHW); `kernel` is [KH, KW].
FailureOr<std::pair<int64_t, int64_t>> mlir::flow::opsupport::windowOutputHW(
    ArrayRef<int64_t> x, ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations, bool ceilMode,
    const Reporter &report) {
  FailureOr<int64_t> h =
      windowOutputSize(x[2], padding[0], padding[2], kernel[0], strides[0],
                       dilations[0], ceilMode, "height", report);
  if (failed(h))
    return failure();
  FailureOr<int64_t> w =
      windowOutputSize(x[3], padding[1], padding[3], kernel[1], strides[1],
                       dilations[1], ceilMode, "width", report);
  if (failed(w))
    return failure();
  return std::make_pair(*h, *w);
}

/// Checks the attribute arrays of a 2-D window.
LogicalResult mlir::flow::opsupport::checkWindow(ArrayRef<int64_t> kernel,
                                                 ArrayRef<int64_t> strides,
                                                 ArrayRef<int64_t> padding,
                                                 ArrayRef<int64_t> dilations,
                                                 const Reporter &report) {
  return success(succeeded(checkSizes(kernel, 2, 1, "kernel", report)) &&
                 succeeded(checkSizes(strides, 2, 1, "strides", report)) &&
                 succeeded(checkSizes(dilations, 2, 1, "dilations", report)) &&
                 succeeded(checkSizes(padding, 4, 0, "padding", report)));
}

/// The batch (first) dimension of a window op's NCHW input, which may be
/// symbolic; the other dimensions must be static.
static FailureOr<Extent> windowBatch(RankedTensorType input, Reporter &report) {
  FailureOr<Extents> extents = getExtents(input);
  if (failed(extents))
    return report.fail("input needs a #flow.shape for each dynamic "
                       "dimension");
  for (size_t i = 1; i < extents->size(); ++i)
    if (!(*extents)[i].isConstant())
      return report.fail("only the batch dimension of a windowed op may be "
                         "symbolic; dimension ",
                         i, " is ", (*extents)[i].str());
  return extents->front();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  RankedTensorType weight = tensorTypeOf(adaptor.getWeight());
  if (!input || !weight)
    return report.fail("operands must be ranked tensors");
  if (input.getRank() != 4 || weight.getRank() != 4)
    return report.fail("input (NCHW) and weight (OIHW) must have rank 4, got ",
                       input.getRank(), " and ", weight.getRank());
  FailureOr<Extent> batch = windowBatch(input, report);
  if (failed(batch))
    return failure();
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> padding = adaptor.getPadding();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  int64_t groups = adaptor.getGroups();
  if (failed(checkSizes(strides, 2, 1, "strides", report)) ||
      failed(checkSizes(dilations, 2, 1, "dilations", report)) ||
      failed(checkSizes(padding, 4, 0, "padding", report)))
    return failure();
  ArrayRef<int64_t> x = input.getShape(), w = weight.getShape();
  if (w[2] < 1 || w[3] < 1)
    return report.fail("the kernel window must be at least 1x1, got ", w[2],
                       "x", w[3]);
  if (groups < 1)
    return report.fail("groups must be at least 1, got ", groups);
  if (x[1] % groups != 0 || w[0] % groups != 0)
    return report.fail("input channels (", x[1], ") and output channels (",
                       w[0], ") must be multiples of groups (", groups, ")");
  if (w[1] * groups != x[1])
    return report.fail("weight has ", w[1],
                       " input channels per group but "
                       "the input has ",
                       x[1], " channels in ", groups, " group(s)");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType biasType = tensorTypeOf(bias);
    if (!biasType || biasType.getRank() != 1 || biasType.getDimSize(0) != w[0])
      return report.fail(
          "bias must have shape ", w[0],
          " (one per output "
          "channel), got ",
          shapeStr(biasType ? biasType.getShape() : ArrayRef<int64_t>()));
  }
  FailureOr<std::pair<int64_t, int64_t>> hw =
      windowOutputHW(x, w.drop_front(2), strides, padding, dilations,
                     /*ceilMode=*/false, report);
  if (failed(hw))
    return failure();
  results.push_back(getTensorType(
      input.getContext(),
      {*batch, Extent(w[0]), Extent(hw->first), Extent(hw->second)},
      input.getElementType()));
  return success();
}

LogicalResult Im2ColOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  if (!input || input.getRank() != 4)
    return report.fail("input must be a rank-4 (NCHW) tensor");
  ArrayRef<int64_t> kernel = adaptor.getKernel(),
                    strides = adaptor.getStrides(),
                    padding = adaptor.getPadding(),
                    dilations = adaptor.getDilations();
  // Negative padding crops (a block of a convolution's output rows reads
  // only some input rows): at most the whole input, and the two ends of an
  // axis never cross.
  if (failed(checkSizes(kernel, 2, 1, "kernel", report)) ||
      failed(checkSizes(strides, 2, 1, "strides", report)) ||
      failed(checkSizes(dilations, 2, 1, "dilations", report)) ||
      failed(checkSizes(padding, 4, std::numeric_limits<int64_t>::min(),
                        "padding", report)))
    return failure();
  ArrayRef<int64_t> x = input.getShape();
  for (int axis = 0; axis < 2; ++axis) {
    int64_t size = x[2 + axis];
    int64_t begin = padding[axis], end = padding[axis + 2];
    int64_t crop = -std::min<int64_t>(begin, 0) - std::min<int64_t>(end, 0);
    if (begin < -size || end < -size || crop > size)
      return report.fail("padding ", begin, " and ", end, " crop more than the ",
                         axis == 0 ? "height" : "width", " (", size,
                         ") of the input");
  }
  FailureOr<std::pair<int64_t, int64_t>> hw =
      windowOutputHW(x, kernel, strides, padding, dilations,
                     /*ceilMode=*/false, report);
  if (failed(hw))
    return failure();
  results.push_back(RankedTensorType::get(
      {x[0], x[1], kernel[0], kernel[1], hw->first, hw->second},
      input.getElementType()));
  return success();
}

/// Shared by max and average pooling.
static LogicalResult inferPool2d(std::optional<Location> loc, Value inputValue,
                                 ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations, bool ceilMode,
                                 SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(inputValue);
  if (!input || input.getRank() != 4)
    return report.fail("input must be a rank-4 (NCHW) tensor");
  FailureOr<Extent> batch = windowBatch(input, report);
  if (failed(batch))
    return failure();
  if (failed(checkWindow(kernel, strides, padding, dilations, report)))
    return failure();
  for (int i = 0; i < 4; ++i) {
    std::optional<int64_t> extent =
        mulAdd(dilations[i % 2], kernel[i % 2] - 1, 1);
    if (!extent)
      return report.fail("the window is too large");
    if (padding[i] >= *extent)
      return report.fail("padding ", padding[i],
                         " is not smaller than the window (", *extent, ")");
  }
  ArrayRef<int64_t> x = input.getShape();
  FailureOr<std::pair<int64_t, int64_t>> hw =
      windowOutputHW(x, kernel, strides, padding, dilations, ceilMode, report);
  if (failed(hw))
    return failure();
  results.push_back(getTensorType(
      input.getContext(),
      {*batch, Extent(x[1]), Extent(hw->first), Extent(hw->second)},
      input.getElementType()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferPool2d(loc, adaptor.getInput(), adaptor.getKernel(),
                     adaptor.getStrides(), adaptor.getPadding(),
                     adaptor.getDilations(), adaptor.getCeilMode(), results);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  static const int64_t unitDilation[] = {1, 1};
  return inferPool2d(loc, adaptor.getInput(), adaptor.getKernel(),
                     adaptor.getStrides(), adaptor.getPadding(), unitDilation,
                     adaptor.getCeilMode(), results);
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Shape after reducing `axes` of `shape`.
static LogicalResult inferReduce(std::optional<Location> loc, Value inputValue,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(inputValue);
  if (!input)
    return report.fail("input must be a ranked tensor");
  if (axes.empty())
    return report.fail("needs at least one axis to reduce");
  if (failed(checkAxes(axes, input.getRank(), "axis", report)))
    return failure();
  FailureOr<Extents> extents = getExtents(input);
  if (failed(extents))
    return report.fail("input needs a #flow.shape for each dynamic dimension");
  Extents shape;
  for (auto [i, d] : llvm::enumerate(*extents)) {
    if (!llvm::is_contained(axes, (int64_t)i))
      shape.push_back(d);
    else if (keepdims)
      shape.push_back(Extent(1));
  }
  results.push_back(
      getTensorType(input.getContext(), shape, input.getElementType()));
  return success();
}

#define FLOW_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepdims(), results);                        \
  }
FLOW_REDUCE_INFER(ReduceSumOp)
FLOW_REDUCE_INFER(ReduceMeanOp)
FLOW_REDUCE_INFER(ReduceMaxOp)
#undef FLOW_REDUCE_INFER

/// Checks a softmax-style axis.
static LogicalResult verifyAxisIn(Operation *op, int64_t axis, Type type) {
  int64_t rank = cast<RankedTensorType>(type).getRank();
  if (axis < 0 || axis >= rank)
    return op->emitOpError()
           << "axis " << axis << " is out of range [0, " << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxisIn(*this, getAxis(), getType());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxisIn(*this, getAxis(), getType());
}
LogicalResult CumsumOp::verify() {
  return verifyAxisIn(*this, getAxis(), getType());
}

LogicalResult SortOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  if (!input)
    return report.fail("input must be a ranked tensor");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, input.getRank(), "axis", report)))
    return failure();
  results.push_back(input);
  results.push_back(input.clone(IntegerType::get(context, 64)));
  return success();
}

#define FLOW_ARG_REDUCE_INFER(OP)                                              \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &results) {                                        \
    int64_t axis = adaptor.getAxis();                                          \
    if (failed(inferReduce(loc, adaptor.getInput(), {axis},                    \
                           adaptor.getKeepdims(), results)))                   \
      return failure();                                                        \
    auto reduced = cast<RankedTensorType>(results.back());                     \
    results.back() = reduced.clone(IntegerType::get(context, 64));             \
    return success();                                                          \
  }
FLOW_ARG_REDUCE_INFER(ArgmaxOp)
FLOW_ARG_REDUCE_INFER(ArgminOp)
#undef FLOW_ARG_REDUCE_INFER

/// Checks the axis and the affine parameters of layer/RMS normalization.
static LogicalResult verifyTrailingNorm(Operation *op, Value input,
                                        int64_t axis, double epsilon,
                                        ArrayRef<Value> params,
                                        ArrayRef<StringRef> names) {
  auto type = cast<RankedTensorType>(input.getType());
  if (failed(verifyAxisIn(op, axis, type)))
    return failure();
  if (!(epsilon >= 0))
    return op->emitOpError() << "epsilon must be non-negative, got " << epsilon;
  FailureOr<Extents> extents = getExtents(type);
  if (failed(extents))
    return op->emitOpError() << "input needs a #flow.shape for each dynamic "
                                "dimension";
  ArrayRef<Extent> normalized = ArrayRef<Extent>(*extents).drop_front(axis);
  for (auto [param, name] : llvm::zip(params, names)) {
    if (!param)
      continue;
    FailureOr<Extents> paramShape = getExtents(param.getType());
    if (failed(paramShape) || ArrayRef<Extent>(*paramShape) != normalized)
      return op->emitOpError()
             << name << " must have the normalized shape "
             << extentsStr(normalized) << ", got "
             << (succeeded(paramShape) ? extentsStr(*paramShape)
                                       : std::string("an unknown shape"));
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyTrailingNorm(*this, getInput(), getAxis(),
                            getEpsilon().convertToDouble(),
                            {getWeight(), getBias()}, {"weight", "bias"});
}

LogicalResult RmsNormOp::verify() {
  return verifyTrailingNorm(*this, getInput(), getAxis(),
                            getEpsilon().convertToDouble(), {getWeight()},
                            {"weight"});
}

LogicalResult BatchNormOp::verify() {
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() < 2)
    return emitOpError() << "input needs rank 2 or more ([N, C, ...]), got "
                         << type.getRank();
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError() << "epsilon must be non-negative";
  if (type.isDynamicDim(1))
    return emitOpError() << "the channel dimension (1) must be static; only "
                            "the others may be symbolic";
  int64_t channels = type.getDimSize(1);
  Value params[] = {getScale(), getBias(), getMean(), getVariance()};
  StringRef names[] = {"scale", "bias", "mean", "variance"};
  for (auto [param, name] : llvm::zip(params, names)) {
    auto shape = cast<RankedTensorType>(param.getType()).getShape();
    if (shape.size() != 1 || shape[0] != channels)
      return emitOpError() << name << " must have shape " << channels
                           << " (one per channel), got " << shapeStr(shape);
  }
  return success();
}

//===----------------------------------------------------------------------===//
#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Dispatch regions
//===----------------------------------------------------------------------===//

LogicalResult DispatchRegionOp::verify() {
  if (getRows() < 1)
    return emitOpError("rows must be at least 1, got ") << getRows();
  auto ret = cast<ReturnOp>(getBody().front().getTerminator());
  if (ret.getOperandTypes() != getResultTypes())
    return emitOpError("returns ")
           << ret.getNumOperands() << " values of types "
           << ret.getOperandTypes() << " but the region has results of types "
           << getResultTypes();
  for (Operation &op : getBody().front().without_terminator()) {
    if (!isa<FlowDialect>(op.getDialect()) || op.getNumRegions() != 0 ||
        isa<MeshOp, AnnotateOp, ParameterOp, AllReduceOp, AllGatherOp,
            ReduceScatterOp, AllToAllOp, BroadcastOp>(op))
    {
      InFlightDiagnostic diag =
          emitOpError("may hold only flow compute ops, found '")
          << op.getName() << "'";
      diag.attachNote(op.getLoc()) << "found here";
      return diag;
    }
  }
  return success();
}

bool mlir::flow::isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp,
             CompareOp, SelectOp, BroadcastToOp, BatchNormOp, RandomUniformOp>(op);
}

bool mlir::flow::isFlowElementType(Type type) {
  if (type.isF32() || type.isF16() || type.isBF16() || type.isF64() ||
      type.isInteger(1))
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || integer.isSigned())
    return false;
  unsigned width = integer.getWidth();
  return width == 8 || width == 16 || width == 32 || width == 64;
}

int64_t mlir::flow::elementStorageBytes(Type element) {
  return element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
}

int64_t mlir::flow::storageBytes(ShapedType type) {
  return type.getNumElements() * elementStorageBytes(type.getElementType());
}
