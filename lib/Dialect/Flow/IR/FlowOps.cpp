//===- FlowOps.cpp - Flow operations: verifiers and shape rules -----------===//
//
// Part of the Flow project.
//
// Shape rules live in free functions shared by the verifiers and by result
// type inference, so that builders, the parser and the verifier agree.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
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

/// Limit on any size computed from attributes: keeps shape arithmetic far
/// from int64 overflow while allowing every real tensor.
static constexpr int64_t kMaxSize = int64_t(1) << 48;
/// Limit on the number of devices in a mesh.

/// a * b + c, or nullopt if it overflows or exceeds kMaxSize.
static std::optional<int64_t> mulAdd(int64_t a, int64_t b, int64_t c) {
  std::optional<int64_t> r = llvm::checkedMulAdd(a, b, c);
  if (!r || *r > kMaxSize || *r < -kMaxSize)
    return std::nullopt;
  return r;
}

/// The product of `dims`, or nullopt on overflow.
static std::optional<int64_t> product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> r = llvm::checkedMul(n, d);
    if (!r)
      return std::nullopt;
    n = *r;
  }
  return n;
}

/// Formats a shape as `2x3x4` (`scalar` for rank 0) for diagnostics.
static std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string str;
  llvm::raw_string_ostream os(str);
  llvm::interleave(shape, os, "x");
  return str;
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
mlir::flow::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                            function_ref<InFlightDiagnostic()> emitError) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[s.size() - 1 - i];
      int64_t &r = result[rank - 1 - i];
      if (d == r || d == 1)
        continue;
      if (r == 1) {
        r = d;
        continue;
      }
      if (emitError) {
        InFlightDiagnostic diag = emitError();
        diag << "shapes ";
        llvm::interleave(
            shapes, [&](ArrayRef<int64_t> sh) { diag << shapeStr(sh); },
            [&] { diag << ", "; });
        diag << " are not broadcast-compatible (dimension " << -(int64_t)i - 1
             << ": " << r << " vs " << d << ")";
      }
      return failure();
    }
  }
  return result;
}

MeshOp mlir::flow::lookupMesh(Operation *from, FlatSymbolRefAttr name,
                              SymbolTableCollection *symbolTable) {
  if (!name)
    return nullptr;
  Operation *symbol = symbolTable
                          ? symbolTable->lookupNearestSymbolFrom(from, name)
                          : SymbolTable::lookupNearestSymbolFrom(from, name);
  return dyn_cast_or_null<MeshOp>(symbol);
}

namespace {
/// Emits errors for type inference at an optional location.
struct Reporter {
  std::optional<Location> loc;
  InFlightDiagnostic operator()() const { return emitError(*loc); }
  /// A diagnostic builder for helpers that report through one, or null when
  /// inference runs without a location and must stay silent.
  function_ref<InFlightDiagnostic()> emitter() const {
    if (!loc)
      return nullptr;
    return *this;
  }
  /// Reports `args...` and returns failure.
  template <typename... Args> LogicalResult fail(Args &&...args) const {
    if (loc) {
      InFlightDiagnostic diag = emitError(*loc);
      (diag << ... << std::forward<Args>(args));
    }
    return failure();
  }
};
} // namespace

static RankedTensorType tensorTypeOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Checks that `values` are distinct and in `[0, bound)`.
static LogicalResult checkAxes(ArrayRef<int64_t> values, int64_t bound,
                               StringRef what, const Reporter &report) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t v : values) {
    if (v < 0 || v >= bound)
      return report.fail(what, " ", v, " is out of range [0, ", bound, ")");
    if (!seen.insert(v).second)
      return report.fail(what, " ", v, " appears more than once");
  }
  return success();
}

/// Checks that `values` has `size` entries, each at least `min`.
static LogicalResult checkSizes(ArrayRef<int64_t> values, size_t size,
                                int64_t min, StringRef what,
                                const Reporter &report) {
  if (values.size() != size)
    return report.fail(what, " needs ", size, " values, got ", values.size());
  for (int64_t v : values)
    if (v < min)
      return report.fail(what, " must be at least ", min, ", got ", v);
  return success();
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

/// A parameter's piece: both attributes or neither; the block at
/// `offsets` of `shape` inside the archive's tensor of shape `of`.
static LogicalResult verifyPiece(Operation *op,
                                 std::optional<ArrayRef<int64_t>> offsets,
                                 std::optional<ArrayRef<int64_t>> of,
                                 ArrayRef<int64_t> shape) {
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
static LogicalResult verifySbpPiece(Operation *op, SbpAttr sbp,
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
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : values) {
    RankedTensorType type = tensorTypeOf(v);
    if (!type)
      return report.fail("operands must be ranked tensors");
    shapes.push_back(type.getShape());
  }
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(shapes, report.emitter());
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, elementType));
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
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  int64_t ra = a.size(), rb = b.size();
  int64_t m = adaptor.getTransposeLhs() ? a[ra - 1] : a[ra - 2];
  int64_t ka = adaptor.getTransposeLhs() ? a[ra - 2] : a[ra - 1];
  int64_t kb = adaptor.getTransposeRhs() ? b[rb - 1] : b[rb - 2];
  int64_t n = adaptor.getTransposeRhs() ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return report.fail("contracting dimensions differ: lhs has ", ka,
                       ", rhs has ", kb, " (lhs ", shapeStr(a), ", rhs ",
                       shapeStr(b), ")");
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes({a.drop_back(2), b.drop_back(2)}, report.emitter());
  if (failed(batch))
    return failure();
  SmallVector<int64_t> shape = *batch;
  shape.append({m, n});
  Type element = lhs.getElementType();
  if (adaptor.getAccumulateF32()) {
    if (!element.isBF16() && !element.isF16())
      return report.fail("accumulate_f32 takes bf16 or f16 operands, got ",
                         lhs.getElementType());
    element = Float32Type::get(lhs.getContext());
  }
  results.push_back(RankedTensorType::get(shape, element));
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
  int64_t out = span / stride + 1;
  if (ceilMode) {
    out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= size + padBegin)
      --out;
  }
  return out;
}

/// Output height and width of a window sliding over the spatial dims of
/// `x` (NCHW); `kernel` is [KH, KW].
static FailureOr<std::pair<int64_t, int64_t>>
windowOutputHW(ArrayRef<int64_t> x, ArrayRef<int64_t> kernel,
               ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
               ArrayRef<int64_t> dilations, bool ceilMode,
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
static LogicalResult checkWindow(ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations,
                                 const Reporter &report) {
  return success(succeeded(checkSizes(kernel, 2, 1, "kernel", report)) &&
                 succeeded(checkSizes(strides, 2, 1, "strides", report)) &&
                 succeeded(checkSizes(dilations, 2, 1, "dilations", report)) &&
                 succeeded(checkSizes(padding, 4, 0, "padding", report)));
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
  results.push_back(RankedTensorType::get({x[0], w[0], hw->first, hw->second},
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
  results.push_back(RankedTensorType::get({x[0], x[1], hw->first, hw->second},
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
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, (int64_t)i))
      shape.push_back(d);
    else if (keepdims)
      shape.push_back(1);
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
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
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  for (auto [param, name] : llvm::zip(params, names)) {
    if (!param)
      continue;
    auto paramShape = cast<RankedTensorType>(param.getType()).getShape();
    if (paramShape != normalized)
      return op->emitOpError()
             << name << " must have the normalized shape "
             << shapeStr(normalized) << ", got " << shapeStr(paramShape);
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
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  std::optional<int64_t> inCount = product(in.getShape());
  std::optional<int64_t> outCount = product(out.getShape());
  if (!inCount || !outCount)
    return emitOpError() << "tensor has too many elements";
  if (*inCount != *outCount)
    return emitOpError() << "cannot reshape " << shapeStr(in.getShape()) << " ("
                         << *inCount << " elements) to "
                         << shapeStr(out.getShape()) << " (" << *outCount
                         << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  if (!input)
    return report.fail("input must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if ((int64_t)perm.size() != input.getRank())
    return report.fail("permutation has ", perm.size(),
                       " entries but the input has rank ", input.getRank());
  if (failed(checkAxes(perm, input.getRank(), "permutation entry", report)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  if (in.size() > out.size())
    return emitOpError() << "cannot broadcast rank " << in.size()
                         << " to the lower rank " << out.size();
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[in.size() - 1 - i], r = out[out.size() - 1 - i];
    if (d != r && d != 1)
      return emitOpError() << "cannot broadcast " << shapeStr(in) << " to "
                           << shapeStr(out) << ": dimension " << -(int64_t)i - 1
                           << " is " << d << ", not 1 or " << r;
  }
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return report.fail("needs at least one input");
  RankedTensorType first = tensorTypeOf(inputs.front());
  if (!first)
    return report.fail("inputs must be ranked tensors");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, first.getRank(), "axis", report)))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType type = tensorTypeOf(v);
    if (!type || type.getRank() != first.getRank())
      return report.fail("input #", i + 1, " does not have rank ",
                         first.getRank());
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == axis)
        continue;
      if (type.getDimSize(d) != first.getDimSize(d))
        return report.fail(
            "input #", i + 1, " has shape ", shapeStr(type.getShape()),
            " but input #0 has ", shapeStr(first.getShape()),
            "; only the concatenated axis ", axis, " may differ");
    }
    std::optional<int64_t> sum = mulAdd(1, shape[axis], type.getDimSize(axis));
    if (!sum)
      return report.fail("concatenated size is too large");
    shape[axis] = *sum;
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
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
static LogicalResult verifyPieceOffsets(Operation *op, SbpAttr sbp,
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

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  if (!input)
    return report.fail("input must be a ranked tensor");
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  size_t rank = input.getRank();
  if (starts.size() != rank || limits.size() != rank || strides.size() != rank)
    return report.fail("starts, limits and strides need one entry per input "
                       "dimension (",
                       rank, "), got ", starts.size(), ", ", limits.size(),
                       " and ", strides.size());
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d);
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > size)
      return report.fail("dimension ", d, ": need 0 <= start (", starts[d],
                         ") <= limit (", limits[d], ") <= size (", size, ")");
    if (strides[d] < 1)
      return report.fail("dimension ", d, ": stride must be at least 1, got ",
                         strides[d]);
    int64_t length = limits[d] - starts[d];
    shape.push_back(length == 0 ? 0 : (length - 1) / strides[d] + 1);
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Reporter report{loc};
  RankedTensorType input = tensorTypeOf(adaptor.getInput());
  RankedTensorType indices = tensorTypeOf(adaptor.getIndices());
  if (!input || !indices)
    return report.fail("operands must be ranked tensors");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(axis, input.getRank(), "axis", report)))
    return failure();
  if (input.getDimSize(axis) == 0 && indices.getNumElements() > 0)
    return report.fail("cannot gather from dimension ", axis,
                       ", which is empty: no index is valid");
  SmallVector<int64_t> shape(input.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, input.getShape().drop_front(axis + 1));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
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
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> size =
        mulAdd(1, input.getDimSize(d), adaptor.getLow()[d]);
    if (size)
      size = mulAdd(1, *size, adaptor.getHigh()[d]);
    if (!size)
      return report.fail("padded size of dimension ", d, " is too large");
    shape.push_back(*size);
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks what does not need the mesh: axes and tensor dimensions.
static LogicalResult
verifyCollective(Operation *op, ArrayRef<int64_t> axes,
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
static FailureOr<int64_t> resolveGroup(Operation *op, FlatSymbolRefAttr name,
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
static LogicalResult
verifyPieces(Operation *op, RankedTensorType input, RankedTensorType result,
             ArrayRef<std::pair<int64_t, int64_t>> gathered,
             ArrayRef<std::pair<int64_t, int64_t>> scattered) {
  auto isPiece = [](int64_t piece, int64_t whole, int64_t g) {
    return piece == whole / g || piece == (whole + g - 1) / g;
  };
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

//===----------------------------------------------------------------------===//
// The host schedule
//===----------------------------------------------------------------------===//

/// Host buffers are plain row-major memory.
static LogicalResult verifyIdentityLayout(Operation *op, Type type) {
  if (!cast<MemRefType>(type).getLayout().isIdentity())
    return op->emitOpError() << "buffer " << type
                             << " must have the identity layout";
  return success();
}

LogicalResult HostConstantOp::verify() {
  auto value = cast<ShapedType>(getValue().getType());
  MemRefType type = getType();
  if (value.getShape() != type.getShape() ||
      value.getElementType() != type.getElementType())
    return emitOpError() << "value of type " << value
                         << " does not fill a buffer " << type;
  return verifyIdentityLayout(*this, type);
}

LogicalResult HostParameterOp::verify() {
  if (getName().empty())
    return emitOpError() << "needs a parameter name";
  if (failed(verifyPiece(*this, getPieceOffsets(), getPieceOf(),
                         getPieceSbpOf() ? *getPieceSbpOf()
                                         : getType().getShape())) ||
      failed(verifySbpPiece(*this, getPieceSbpAttr(), getPieceSbpOf(),
                            getType().getShape())))
    return failure();
  return verifyIdentityLayout(*this, getType());
}

LogicalResult HostPieceOffsetsOp::verify() {
  if (failed(verifyPieceOffsets(*this, getSbp(), getWithinAttr(), getOf(),
                                getType())))
    return failure();
  return verifyIdentityLayout(*this, getType());
}

LogicalResult HostAllocOp::verify() {
  return verifyIdentityLayout(*this, getType());
}

LogicalResult HostArenaOp::verify() {
  ArenaPlanAttr plan = getPlan();
  if (plan.getBytes() < 0 || plan.getLowerBound() < 0 ||
      plan.getLowerBound() > plan.getBytes() ||
      plan.getUnplanned() < plan.getLowerBound())
    return emitOpError() << "plan " << plan
                         << " must have 0 <= lower_bound <= bytes and "
                            "lower_bound <= unplanned";
  if (getType().getDimSize(0) != plan.getBytes())
    return emitOpError() << "arena of type " << getType() << " must hold the "
                         << plan.getBytes() << " bytes of its plan";
  return success();
}

LogicalResult HostSliceOp::verify() {
  int64_t bytes = storageBytes(getType());
  int64_t arena = getArena().getType().getDimSize(0);
  if (getOffset() < 0 || getOffset() % 64 != 0)
    return emitOpError() << "offset " << getOffset()
                         << " must be a non-negative multiple of 64";
  if (getOffset() > arena || bytes > arena - getOffset())
    return emitOpError() << "slice of " << bytes << " bytes at offset "
                         << getOffset() << " does not fit the arena of "
                         << arena << " bytes";
  if (getFirst() < 0 || getLast() < getFirst())
    return emitOpError() << "live range [" << getFirst() << ", " << getLast()
                         << "] is empty or negative";
  return verifyIdentityLayout(*this, getType());
}

LogicalResult HostViewOp::verify() {
  MemRefType from = getSource().getType(), to = getType();
  if (from.getElementType() != to.getElementType() ||
      from.getNumElements() != to.getNumElements())
    return emitOpError() << "cannot view " << from << " as " << to
                         << ": element type and count must match";
  if (failed(verifyIdentityLayout(*this, from)))
    return failure();
  return verifyIdentityLayout(*this, to);
}

LogicalResult HostDispatchOp::verify() {
  if (auto inPlace = getInPlaceOperands())
    for (int64_t i : *inPlace)
      if (i < 0 || i >= (int64_t)getInputs().size())
        return emitOpError() << "in-place operand " << i
                             << " is not one of its " << getInputs().size()
                             << " inputs";
  if (!getGemmEpilogue())
    return success();
  // The command before it is a GEMM of one batch whose result this kernel
  // reads element-wise.
  auto gemm =
      dyn_cast_or_null<HostGemmOp>(previousHostCommand(getOperation()));
  if (!gemm)
    return emitOpError() << "is a GEMM epilogue but does not follow a "
                            "flow.host.gemm";
  MemRefType out = gemm.getOut().getType();
  if (out.getNumElements() != gemm.getM() * gemm.getN())
    return emitOpError() << "is an epilogue of a batched GEMM";
  Value result = bufferRoot(gemm.getOut());
  std::optional<ArrayRef<int64_t>> inPlace = getInPlaceOperands();
  if (!inPlace || llvm::none_of(*inPlace, [&](int64_t i) {
        return bufferRoot(getInputs()[i]) == result;
      }))
    return emitOpError() << "is a GEMM epilogue but does not read the "
                            "GEMM's result element-wise";
  return success();
}

int64_t HostGemmOp::getM() {
  return getOut().getType().getDimSize(getOut().getType().getRank() - 2);
}
int64_t HostGemmOp::getN() {
  return getOut().getType().getDimSize(getOut().getType().getRank() - 1);
}
int64_t HostGemmOp::getK() {
  MemRefType a = getLhs().getType();
  return a.getDimSize(a.getRank() - (getTransposeLhs() ? 2 : 1));
}

LogicalResult HostGemmOp::verify() {
  MemRefType a = getLhs().getType(), b = getRhs().getType(),
             c = getOut().getType();
  for (MemRefType t : {a, b, c})
    if (t.getRank() < 2)
      return emitOpError() << "needs matrices (rank >= 2), got " << t;
  Type in = a.getElementType(), outType = c.getElementType();
  if (b.getElementType() != in || !(in.isF32() || in.isBF16() || in.isF16()) ||
      !(outType.isF32() || outType == in))
    return emitOpError() << "runs f32, bf16 or f16 operands of one type into "
                            "f32 or their own type, got "
                         << a << ", " << b << " -> " << c;
  if (getAllowTf32() && !in.isF32())
    return emitOpError() << "allow_tf32 is for f32 operands, got " << a;
  int64_t ra = a.getRank(), rb = b.getRank(), rc = c.getRank();
  if (ra > rc || rb > rc)
    return emitOpError() << "operands may not have more batch dimensions "
                            "than the result";
  int64_t m = a.getDimSize(ra - (getTransposeLhs() ? 1 : 2));
  int64_t kb = b.getDimSize(rb - (getTransposeRhs() ? 1 : 2));
  int64_t n = b.getDimSize(rb - (getTransposeRhs() ? 2 : 1));
  if (getK() != kb || m != getM() || n != getN())
    return emitOpError() << "shapes " << a << " x " << b << " do not give "
                         << c;
  for (MemRefType t : {a, b})
    for (int64_t d = 0; d < t.getRank() - 2; ++d) {
      int64_t size = t.getDimSize(d);
      int64_t out = c.getDimSize(rc - t.getRank() + d);
      if (size != 1 && size != out)
        return emitOpError() << "batch dimensions of " << t
                             << " do not broadcast to " << c;
    }
  for (Value v : {getLhs(), getRhs(), getOut()})
    if (failed(verifyIdentityLayout(*this, v.getType())))
      return failure();
  if (Value bias = getBias()) {
    auto type = cast<MemRefType>(bias.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != n ||
        type.getElementType() != outType)
      return emitOpError() << "bias must be " << n << " " << outType
                           << " values (one per column of the result), got "
                           << type;
    if (failed(verifyIdentityLayout(*this, type)))
      return failure();
  }
  return success();
}

LogicalResult HostConvOp::verify() {
  MemRefType x = getInput().getType(), w = getFilter().getType(),
             out = getOut().getType();
  // Every operand is f32, except that a bf16 convolution's blocked buffers
  // (only convolutions see them) may hold bf16.
  auto storedAsBf16 = [&](Value v) {
    return getBf16() && ((v == getInput() && getBlockedInput()) ||
                         (v == getResidual() && getBlockedResidual()) ||
                         (v == getOut() && getBlockedOutput()));
  };
  for (Value v : getOperands()) {
    Type elt = cast<MemRefType>(v.getType()).getElementType();
    if (!elt.isF32() && !(elt.isBF16() && storedAsBf16(v)))
      return emitOpError()
             << "runs f32 convolutions (a bf16 one may keep its blocked "
                "buffers in bf16), got "
             << v.getType();
    if (failed(verifyIdentityLayout(*this, v.getType())))
      return failure();
  }
  if (x.getRank() != 4 || w.getRank() != 4 || out.getRank() != 4)
    return emitOpError() << "needs rank-4 input, filter and output, got "
                         << x << ", " << w << " -> " << out;
  Reporter report{getLoc()};
  ArrayRef<int64_t> xs = x.getShape(), ws = w.getShape();
  int64_t groups = getGroups();
  if (failed(checkWindow(ws.drop_front(2), getStrides(), getPadding(),
                         getDilations(), report)))
    return failure();
  if (groups < 1 || xs[1] % groups || ws[0] % groups ||
      ws[1] * groups != xs[1])
    return emitOpError() << "filter " << w << " in " << groups
                         << " group(s) does not fit input " << x;
  FailureOr<std::pair<int64_t, int64_t>> hw =
      windowOutputHW(xs, ws.drop_front(2), getStrides(), getPadding(),
                     getDilations(), /*ceilMode=*/false, report);
  if (failed(hw))
    return failure();
  SmallVector<int64_t> expected = {xs[0], ws[0], hw->first, hw->second};
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "writes " << out << " but the convolution gives "
                         << shapeStr(expected);
  if (Value bias = getBias())
    if (cast<MemRefType>(bias.getType()).getShape() != ArrayRef<int64_t>{ws[0]})
      return emitOpError() << "bias must hold one value per output channel ("
                           << ws[0] << "), got " << bias.getType();
  if (Value residual = getResidual())
    if (cast<MemRefType>(residual.getType()).getShape() != out.getShape())
      return emitOpError() << "residual " << residual.getType()
                           << " must have the output's shape " << out;
  if (getBlockedResidual() && !getResidual())
    return emitOpError() << "marks a blocked residual but has none";
  if ((getBlockedInput() && xs[1] % 16) ||
      ((getBlockedOutput() || getBlockedResidual()) && ws[0] % 16))
    return emitOpError() << "a blocked buffer needs a multiple of 16 channels";
  return success();
}

/// The checks of flow.host.max_pool and flow.host.avg_pool.
static LogicalResult verifyHostPool(Operation *op, MemRefType x,
                                    MemRefType out, ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> padding,
                                    ArrayRef<int64_t> dilations,
                                    bool blockedInput, bool blockedOutput) {
  // f32, or bf16 where the buffer is blocked (only the runtime's
  // convolution layout holds bf16); the two may differ.
  for (auto [type, blocked] :
       {std::pair{x, blockedInput}, std::pair{out, blockedOutput}}) {
    Type elt = type.getElementType();
    if (!elt.isF32() && !(elt.isBF16() && blocked))
      return op->emitOpError()
             << "pools f32 buffers (bf16 where blocked), got " << type;
    if (failed(verifyIdentityLayout(op, type)))
      return failure();
  }
  if (x.getRank() != 4 || out.getRank() != 4)
    return op->emitOpError() << "needs rank-4 input and output, got " << x
                             << " -> " << out;
  Reporter report{op->getLoc()};
  if (failed(checkWindow(kernel, strides, padding, dilations, report)))
    return failure();
  for (int i = 0; i < 4; ++i)
    if (padding[i] >= dilations[i % 2] * (kernel[i % 2] - 1) + 1)
      return op->emitOpError()
             << "padding " << padding[i] << " is not smaller than the window";
  ArrayRef<int64_t> xs = x.getShape();
  SmallVector<SmallVector<int64_t>> allowed;
  for (bool ceilMode : {false, true}) {
    FailureOr<std::pair<int64_t, int64_t>> hw = windowOutputHW(
        xs, kernel, strides, padding, dilations, ceilMode, report);
    if (failed(hw))
      return failure();
    allowed.push_back({xs[0], xs[1], hw->first, hw->second});
  }
  if (out.getShape() != ArrayRef<int64_t>(allowed[0]) &&
      out.getShape() != ArrayRef<int64_t>(allowed[1]))
    return op->emitOpError()
           << "writes " << out << " but the window gives "
           << shapeStr(allowed[0])
           << (allowed[0] == allowed[1]
                   ? std::string()
                   : " (or " + shapeStr(allowed[1]) + " in ceil mode)");
  if ((blockedInput || blockedOutput) && xs[1] % 16)
    return op->emitOpError()
           << "a blocked buffer needs a multiple of 16 channels";
  return success();
}

LogicalResult HostMaxPoolOp::verify() {
  return verifyHostPool(*this, getInput().getType(), getOut().getType(),
                        getKernel(), getStrides(), getPadding(),
                        getDilations(), getBlockedInput(), getBlockedOutput());
}

LogicalResult HostAvgPoolOp::verify() {
  return verifyHostPool(*this, getInput().getType(), getOut().getType(),
                        getKernel(), getStrides(), getPadding(), {1, 1},
                        getBlockedInput(), getBlockedOutput());
}

LogicalResult HostCopyOp::verify() {
  if (storageBytes(getSource().getType()) !=
      storageBytes(getTarget().getType()))
    return emitOpError() << "copies " << getSource().getType() << " into "
                         << getTarget().getType()
                         << ": the byte sizes differ";
  return success();
}

LogicalResult HostCollectiveOp::verify() {
  if (getInput().getType().getElementType() !=
      getOutput().getType().getElementType())
    return emitOpError() << "input and output element types differ";
  CollectiveKind kind = getKind();
  bool reduces =
      kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter;
  bool hasDim =
      kind == CollectiveKind::all_gather || kind == CollectiveKind::reduce_scatter;
  bool exchanges = kind == CollectiveKind::all_to_all;
  if (reduces != getReduction().has_value() || hasDim != getDim().has_value() ||
      exchanges != getSplitDim().has_value() ||
      exchanges != getConcatDim().has_value())
    return emitOpError()
           << stringifyCollectiveKind(kind)
           << " takes exactly "
           << (reduces && hasDim ? "'reduction' and 'dim'"
               : reduces         ? "'reduction'"
               : hasDim          ? "'dim'"
                                 : "'split_dim' and 'concat_dim'");
  SmallVector<std::pair<StringRef, int64_t>> dims;
  if (hasDim)
    dims.push_back({"dim", *getDim()});
  if (exchanges) {
    dims.push_back({"split_dim", *getSplitDim()});
    dims.push_back({"concat_dim", *getConcatDim()});
  }
  if (kind == CollectiveKind::all_reduce &&
      getInput().getType().getShape() != getOutput().getType().getShape())
    return emitOpError() << "all_reduce keeps the shape";
  if (getAsync()) {
    bool waited = false;
    for (Operation *n = getOperation()->getNextNode(); n && !waited;
         n = n->getNextNode())
      if (auto wait = dyn_cast<HostWaitOp>(n))
        waited = wait.getInput() == getInput() &&
                 wait.getOutput() == getOutput();
    if (!waited)
      return emitOpError("is asynchronous but no flow.host.wait after it "
                         "waits for it");
  }
  return verifyCollective(*this, getMeshAxes(), dims);
}

HostCollectiveOp HostWaitOp::getCollective() {
  for (Operation *p = getOperation()->getPrevNode(); p; p = p->getPrevNode())
    if (auto c = dyn_cast<HostCollectiveOp>(p))
      if (c.getAsync() && c.getInput() == getInput() &&
          c.getOutput() == getOutput())
        return c;
  return nullptr;
}

LogicalResult HostWaitOp::verify() {
  HostCollectiveOp collective = getCollective();
  if (!collective)
    return emitOpError("waits for no asynchronous collective: none before it "
                       "in its block reads ")
           << "its input and writes its output";
  // Between the two, the buffers are the collective's.
  for (Operation *p = collective->getNextNode(); p != getOperation();
       p = p->getNextNode()) {
    if (auto wait = dyn_cast<HostWaitOp>(p))
      if (wait.getInput() == getInput() && wait.getOutput() == getOutput())
        return emitOpError("waits for a collective already waited for");
    if (!isHostCommand(p) || isa<HostWaitOp>(p))
      continue;
    if (usesCollectiveBuffers(p, getInput(), getOutput()))
      return emitOpError("waits too late: a command before it uses the "
                         "buffers of the collective in flight")
                 .attachNote(p->getLoc())
             << "this command";
  }
  return success();
}

LogicalResult
HostCollectiveOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> g =
      resolveGroup(*this, getMeshAttr(), getMeshAxes(), symbolTable);
  if (failed(g))
    return failure();
  auto asTensor = [](MemRefType t) {
    return RankedTensorType::get(t.getShape(), t.getElementType());
  };
  RankedTensorType in = asTensor(getInput().getType()),
                   out = asTensor(getOutput().getType());
  switch (getKind()) {
  case CollectiveKind::all_reduce:
    return success();
  case CollectiveKind::all_gather:
    return verifyPieces(*this, in, out, {{*getDim(), *g}}, {});
  case CollectiveKind::reduce_scatter:
    return verifyPieces(*this, in, out, {}, {{*getDim(), *g}});
  case CollectiveKind::all_to_all:
    return verifyPieces(*this, in, out, {{*getConcatDim(), *g}},
                        {{*getSplitDim(), *g}});
  }
  return success();
}

#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowOps.cpp.inc"
#define GET_OP_CLASSES
#include "flow/Dialect/Flow/IR/FlowHostOps.cpp.inc"

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

int64_t mlir::flow::storageBytes(ShapedType type) {
  Type t = type.getElementType();
  int64_t width = t.isInteger(1) ? 1 : t.getIntOrFloatBitWidth() / 8;
  return type.getNumElements() * width;
}

bool mlir::flow::isHostCommand(Operation *op) {
  return isa<HostDispatchOp, HostGemmOp, HostConvOp, HostMaxPoolOp,
             HostAvgPoolOp, HostCopyOp, HostCollectiveOp, HostWaitOp>(op);
}

bool mlir::flow::usesCollectiveBuffers(Operation *op, Value input,
                                       Value output) {
  Value in = bufferRoot(input), out = bufferRoot(output);
  for (Value v : hostCommandWrites(op))
    if (Value root = bufferRoot(v); root == in || root == out)
      return true;
  return llvm::any_of(op->getOperands(),
                      [&](Value v) { return bufferRoot(v) == out; });
}

SmallVector<Value> mlir::flow::hostCommandWrites(Operation *op) {
  return TypeSwitch<Operation *, SmallVector<Value>>(op)
      .Case([](HostDispatchOp d) {
        return SmallVector<Value>(d.getOutputs().begin(),
                                  d.getOutputs().end());
      })
      .Case<HostGemmOp, HostConvOp, HostMaxPoolOp, HostAvgPoolOp>(
          [](auto c) { return SmallVector<Value>{c.getOut()}; })
      .Case([](HostCopyOp c) { return SmallVector<Value>{c.getTarget()}; })
      .Case([](HostCollectiveOp c) {
        return SmallVector<Value>{c.getOutput()};
      })
      .Default([](Operation *) { return SmallVector<Value>(); });
}

HostDispatchOp mlir::flow::soleEpilogueReader(Operation *producer, Value out,
                                              unsigned &input) {
  auto alloc = out.getDefiningOp<HostAllocOp>();
  if (!alloc)
    return nullptr;
  HostDispatchOp dispatch;
  unsigned uses = 0;
  for (OpOperand &use : alloc.getResult().getUses()) {
    if (use.getOwner() == producer)
      continue;
    dispatch = dyn_cast<HostDispatchOp>(use.getOwner());
    ++uses;
  }
  if (uses != 1 || !dispatch || dispatch.getOutputs().size() != 1 ||
      dispatch->getBlock() != producer->getBlock() ||
      dispatch.getOutputs()[0].getType() != out.getType())
    return nullptr;
  for (auto [i, v] : llvm::enumerate(dispatch.getInputs()))
    if (v == out) {
      input = i;
      return dispatch;
    }
  return nullptr;
}

void mlir::flow::foldEpilogueDispatch(Operation *producer, OpOperand &out,
                                      HostDispatchOp dispatch) {
  // The producer runs where the kernel ran: its operands were written
  // before it and are not written again (a schedule before memory planning
  // writes each buffer once), and what the epilogue reads is ready there.
  Operation *alloc = out.get().getDefiningOp();
  producer->moveBefore(dispatch);
  out.assign(dispatch.getOutputs()[0]);
  dispatch.erase();
  alloc->erase();
}

bool mlir::flow::walkEpilogueChain(
    Operation *kernel, unsigned input,
    function_ref<bool(Operation &op, Value current)> step) {
  if (kernel->getNumRegions() != 1 || !kernel->getRegion(0).hasOneBlock())
    return false;
  Block &body = kernel->getRegion(0).front();
  if (input >= body.getNumArguments())
    return false;
  Value current = body.getArgument(input);
  if (!current.hasOneUse())
    return false;
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      return op.getNumOperands() == 1 && op.getOperand(0) == current &&
             current != body.getArgument(input);
    if (op.getNumResults() != 1 || !op.getResult(0).hasOneUse() ||
        op.getResult(0).getType() != current.getType() ||
        !llvm::is_contained(op.getOperands(), current) || !step(op, current))
      return false;
    current = op.getResult(0);
  }
  return false;
}

BlockArgument mlir::flow::otherAddend(AddOp add, Value current,
                                      unsigned input) {
  Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
  auto arg = dyn_cast<BlockArgument>(other);
  if (!arg || arg.getOwner() != add->getBlock() ||
      arg.getArgNumber() == input)
    return nullptr;
  return arg;
}

void mlir::flow::eraseUnusedKernels(ModuleOp module,
                                    ArrayRef<Operation *> kernels) {
  for (Operation *kernel : kernels)
    if (SymbolTable::symbolKnownUseEmpty(kernel, module))
      kernel->erase();
}

Operation *mlir::flow::previousHostCommand(Operation *op) {
  for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode())
    if (isHostCommand(p))
      return p;
  return nullptr;
}

Value mlir::flow::bufferRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, AnnotateOp, HostViewOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}
