//===- HostOps.cpp - The host dialect: dialect and op verifiers ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowVerifiers.h"
#include "flow/runtime/rules/Attention.h"
#include "flow/runtime/rules/Layout.h"
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

#include "flow/Dialect/Host/IR/HostDialect.cpp.inc"

void HostDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flow/Dialect/Host/IR/HostOps.cpp.inc"
      >();
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

LogicalResult HostParameterConcatOp::verify() {
  MemRefType type = getType();
  int64_t axis = getAxis();
  if (getParts().empty())
    return emitOpError() << "needs at least one part";
  if (axis < 0 || axis >= type.getRank())
    return emitOpError() << "axis " << axis << " is outside a rank-"
                         << type.getRank() << " buffer";
  int64_t total = 0;
  for (Value part : getParts()) {
    if (!part.getDefiningOp<HostParameterOp>())
      return emitOpError() << "joins host.parameter buffers only";
    auto partType = cast<MemRefType>(part.getType());
    bool fits = partType.getElementType() == type.getElementType() &&
                partType.getRank() == type.getRank();
    for (int64_t d = 0; fits && d < type.getRank(); ++d)
      fits = d == axis || partType.getDimSize(d) == type.getDimSize(d);
    if (!fits)
      return emitOpError() << "part " << partType << " does not fit " << type
                           << " along axis " << axis;
    total += partType.getDimSize(axis);
  }
  if (total != type.getDimSize(axis))
    return emitOpError() << "parts add up to " << total << " along axis "
                         << axis << ", not " << type.getDimSize(axis);
  return verifyIdentityLayout(*this, type);
}

LogicalResult HostSymbolsOp::verify() {
  return verifySymbolValues(*this, getType());
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
                            "host.gemm";
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
  // (only convolutions see them) may hold bf16; or every operand is f16,
  // or every one bf16 (a narrow convolution, NCHW, summed in f32).
  auto storedAsBf16 = [&](Value v) {
    return getBf16() && ((v == getInput() && getBlockedInput()) ||
                         (v == getResidual() && getBlockedResidual()) ||
                         (v == getOut() && getBlockedOutput()));
  };
  // The filter says which: a bf16 convolution's is f32.
  Type narrow = w.getElementType();
  if (narrow.isF16() || narrow.isBF16()) {
    if (getBf16() || getBlockedInput() || getBlockedResidual() ||
        getBlockedOutput())
      return emitOpError() << "a narrow (" << narrow
                           << ") convolution is neither blocked nor bf16";
  } else {
    narrow = Type();
  }
  for (Value v : getOperands()) {
    Type elt = cast<MemRefType>(v.getType()).getElementType();
    if (narrow ? elt != narrow
               : !elt.isF32() && !(elt.isBF16() && storedAsBf16(v)))
      return emitOpError()
             << "runs f32 convolutions (a bf16 one may keep its blocked "
                "buffers in bf16), or f16 or bf16 ones on operands of that "
                "type only, got "
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
  if ((getBlockedInput() && !::flow::rules::blockable(xs[1])) ||
      ((getBlockedOutput() || getBlockedResidual()) &&
       !::flow::rules::blockable(ws[0])))
    return emitOpError() << "a blocked buffer needs a multiple of 16 channels";
  return success();
}

/// The checks of host.max_pool and host.avg_pool.
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
    if (padding[i] >=
        ::flow::rules::dilatedWindow(kernel[i % 2], dilations[i % 2]))
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
  if ((blockedInput || blockedOutput) && !::flow::rules::blockable(xs[1]))
    return op->emitOpError()
           << "a blocked buffer needs a multiple of 16 channels";
  return success();
}

LogicalResult HostAttentionOp::verify() {
  MemRefType q = getQuery().getType(), k = getKey().getType(),
             v = getValue().getType(), out = getOut().getType();
  Type e = q.getElementType();
  if (!e.isF32() && !e.isF16() && !e.isBF16())
    return emitOpError() << "runs f32, f16 or bf16, not " << e;
  if (k.getElementType() != e || v.getElementType() != e ||
      out.getElementType() != e)
    return emitOpError()
           << "needs query, key, value and out of one element type";
  std::vector<int64_t> maskShape, shape;
  if (Value mask = getMask()) {
    auto m = cast<MemRefType>(mask.getType());
    if (!m.getElementType().isInteger(1) && m.getElementType() != e)
      return emitOpError() << "mask must be i1 or " << e << ", not "
                           << m.getElementType();
    maskShape = m.getShape().vec();
  }
  std::string error = ::flow::rules::attentionShapeError(
      q.getShape().vec(), k.getShape().vec(), v.getShape().vec(),
      getMask() ? &maskShape : nullptr, shape);
  if (!error.empty())
    return emitOpError() << error;
  if (out.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "writes " << out << " but the attention gives "
                         << shapeStr(shape);
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
      return emitOpError("is asynchronous but no host.wait after it "
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
#include "flow/Dialect/Host/IR/HostOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Host schedule helpers
//===----------------------------------------------------------------------===//

bool mlir::flow::isHostCommand(Operation *op) {
  return isa<HostDispatchOp, HostGemmOp, HostConvOp, HostAttentionOp,
             HostMaxPoolOp, HostAvgPoolOp, HostCopyOp, HostCollectiveOp,
             HostWaitOp>(op);
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
      .Case<HostGemmOp, HostConvOp, HostAttentionOp, HostMaxPoolOp,
            HostAvgPoolOp>(
          [](auto c) { return SmallVector<Value>{c.getOut()}; })
      .Case([](HostCopyOp c) { return SmallVector<Value>{c.getTarget()}; })
      .Case(
          [](HostCollectiveOp c) { return SmallVector<Value>{c.getOutput()}; })
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
