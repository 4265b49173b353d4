//===- SplitReductions.cpp - Reductions shaped to fill a GPU --------------===//
//
// Part of the Flow project.
//
// A kernel's top-level reductions as flow-map-kernels-to-gpu would map them
// give each output element one thread: a reduction to few values runs on few
// threads. This pass reshapes them (see the pass's description in
// Passes.td): innermost reductions become row tiles, a row per block, after
// a first stage of partial results over the whole grid where the rows are
// too few; outermost reductions get such a first stage where their outputs
// are too few.
//
//===----------------------------------------------------------------------===//

#include "KernelMapper.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_SPLITGPUREDUCTIONSPASS
#include "flow/Codegen/CUDA/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::gpumap;

namespace {

/// Rows shorter than this stay one thread per output element.
constexpr int64_t kMinRow = 128;
/// Row tiles with fewer rows than this (two per SM of a large GPU) get a
/// first stage of partial results when their rows are at least
/// kMinSplitRow long.
constexpr int64_t kFewRows = 264;
constexpr int64_t kMinSplitRow = 4096;
/// Outermost reductions with fewer outputs than this get a first stage.
constexpr int64_t kFewOutputs = 16384;
/// Elements each thread of a first stage combines, at least.
constexpr int64_t kMinPerThread = 16;

/// A top-level reduction this pass reshapes.
struct Candidate {
  linalg::GenericOp op;
  Combiner combiner;
  /// The reduced dimensions are the innermost ones ([P, R]); otherwise the
  /// outermost ([R, P]).
  bool innermost = true;
  /// The number of output elements and of elements reduced into each.
  int64_t outputs = 1, reduced = 1;
};

bool isContiguous(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

std::optional<Candidate> match(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumDpsInputs() == 0 ||
      op.getNumReductionLoops() == 0)
    return std::nullopt;
  std::optional<Combiner> combiner = findCombiner(op);
  if (!combiner)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  size_t n = iterators.size();
  auto isReduction = [&](size_t i) {
    return iterators[i] == utils::IteratorType::reduction;
  };
  // The reduced dimensions: one block at the inside or at the outside.
  size_t reducedCount = op.getNumReductionLoops();
  bool innermost = true;
  for (size_t i = 0; i < n; ++i)
    if (isReduction(i) != (i >= n - reducedCount)) {
      innermost = false;
      break;
    }
  if (!innermost)
    for (size_t i = 0; i < n; ++i)
      if (isReduction(i) != (i < reducedCount))
        return std::nullopt;
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  // Every input is a contiguous buffer read in loop order; the output is
  // contiguous and indexed by the parallel dimensions in order.
  for (OpOperand *input : op.getDpsInputOperands())
    if (!isContiguous(input->get()) ||
        !op.getMatchingIndexingMap(input).isIdentity())
      return std::nullopt;
  OpOperand &init = op.getDpsInitsMutable()[0];
  if (!isContiguous(init.get()))
    return std::nullopt;
  AffineMap outMap = op.getMatchingIndexingMap(&init);
  size_t first = innermost ? 0 : reducedCount;
  if (outMap.getNumResults() != n - reducedCount)
    return std::nullopt;
  for (auto [i, e] : llvm::enumerate(outMap.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || dim.getPosition() != first + i)
      return std::nullopt;
  }
  Candidate c{op, *combiner, innermost};
  for (size_t i = 0; i < n; ++i)
    (isReduction(i) ? c.reduced : c.outputs) *= ranges[i];
  return c;
}

/// The largest divisor of \p reduced that is at most \p limit and leaves
/// at least kMinPerThread elements to each partial (1 when none does).
int64_t splitFactor(int64_t reduced, int64_t limit) {
  for (int64_t s = std::min(limit, reduced / kMinPerThread); s >= 2; --s)
    if (reduced % s == 0)
      return s;
  return 1;
}

/// \p buffer (contiguous) as a buffer of \p shape with the same elements.
Value reshape(OpBuilder &b, Location loc, Value buffer,
              ArrayRef<int64_t> shape) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getShape() == shape)
    return buffer;
  Value flat = buffer;
  if (type.getRank() == 0) {
    flat = memref::ExpandShapeOp::create(b, loc, ArrayRef<int64_t>{1}, buffer,
                                         ArrayRef<ReassociationIndices>{});
  } else if (type.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < type.getRank(); ++i)
      all.push_back(i);
    flat = memref::CollapseShapeOp::create(b, loc, buffer,
                                           ArrayRef<ReassociationIndices>{all});
  }
  if (shape.size() == 1)
    return flat;
  ReassociationIndices all;
  for (size_t i = 0; i < shape.size(); ++i)
    all.push_back(i);
  return memref::ExpandShapeOp::create(b, loc, shape, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// A generic op with \p body's region cloned in (or built by \p build).
linalg::GenericOp
makeGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value output,
            ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
            linalg::GenericOp body,
            function_ref<void(OpBuilder &, Location, ValueRange)> build) {
  linalg::GenericOp op;
  if (body) {
    op = linalg::GenericOp::create(b, loc, TypeRange{}, inputs, output, maps,
                                   iterators);
    IRMapping mapping;
    body.getRegion().cloneInto(&op.getRegion(), mapping);
  } else {
    op = linalg::GenericOp::create(b, loc, TypeRange{}, inputs, output, maps,
                                   iterators, build);
  }
  return op;
}

/// Builds `out = combine(out, in)` for the combiner of \p c.
void combineBody(OpBuilder &b, Location loc, ValueRange args,
                 const Candidate &c) {
  Operation *combine = c.combiner.op;
  linalg::GenericOp op = c.op;
  BlockArgument oldOut = op.getRegion().front().getArguments().back();
  IRMapping mapping;
  for (Value operand : combine->getOperands())
    mapping.map(operand, operand == oldOut ? args[1] : args[0]);
  Value result = b.clone(*combine, mapping)->getResult(0);
  linalg::YieldOp::create(b, loc, result);
}

/// A first stage: partials[a, b] (allocated here, filled with the
/// combiner's identity) = combine over j of \p c's body over its inputs
/// seen as [a, j, b] (\p inputShape).
Value emitPartials(OpBuilder &b, Location loc, const Candidate &c,
                   ArrayRef<int64_t> inputShape) {
  MLIRContext *ctx = b.getContext();
  linalg::GenericOp op = c.op;
  Type element =
      cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  Value partials = memref::AllocOp::create(
      b, loc, MemRefType::get({inputShape[0], inputShape[2]}, element),
      b.getI64IntegerAttr(64));
  Value identity = arith::ConstantOp::create(
      b, loc, identityOf(c.combiner.allReduce, element));
  SmallVector<utils::IteratorType> parallel(2, utils::IteratorType::parallel);
  makeGeneric(b, loc, {}, partials, {AffineMap::getMultiDimIdentityMap(2, ctx)},
              parallel, nullptr, [&](OpBuilder &nb, Location nl, ValueRange) {
                linalg::YieldOp::create(nb, nl, identity);
              });
  SmallVector<Value> inputs;
  for (Value input : op.getDpsInputs())
    inputs.push_back(reshape(b, loc, input, inputShape));
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  SmallVector<AffineMap> maps(inputs.size(),
                              AffineMap::getMultiDimIdentityMap(3, ctx));
  maps.push_back(AffineMap::get(3, 0, {d0, d2}, ctx));
  makeGeneric(b, loc, inputs, partials, maps,
              {utils::IteratorType::parallel, utils::IteratorType::reduction,
               utils::IteratorType::parallel},
              op, nullptr);
  return partials;
}

/// Innermost reductions: an optional first stage, then a row tile.
void rewriteInnermost(const Candidate &c, int64_t targetThreads) {
  linalg::GenericOp op = c.op;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  const int64_t p = c.outputs, r = c.reduced;
  int64_t s = 1;
  if (p < kFewRows && r >= kMinSplitRow)
    s = splitFactor(r, std::max<int64_t>(1, targetThreads / p));
  Value out = op.getDpsInits()[0];
  Type element = cast<MemRefType>(out.getType()).getElementType();
  // What the row tile reduces: the inputs as [P, R], or the partials.
  SmallVector<Value> rows;
  int64_t rowLength = r;
  linalg::GenericOp rowBody = op;
  if (s > 1) {
    // partials[p, s] = combine over j of f(x[p, j * S + s]).
    Value partials = emitPartials(b, loc, c, {p, r / s, s});
    rows.push_back(partials);
    rowLength = s;
    rowBody = nullptr;
  } else {
    for (Value input : op.getDpsInputs())
      rows.push_back(reshape(b, loc, input, {p, r}));
  }
  Value outRows = reshape(b, loc, out, {p});
  // One row per block: the row tile flow-map-kernels-to-gpu maps.
  auto forall =
      scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(p)},
                            ValueRange{}, std::nullopt);
  OpBuilder inner = OpBuilder::atBlockBegin(forall.getBody());
  Value row = forall.getInductionVars()[0];
  SmallVector<Value> views;
  for (Value v : rows)
    views.push_back(memref::SubViewOp::create(
        inner, loc, v, ArrayRef<OpFoldResult>{row, inner.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{inner.getIndexAttr(1),
                               inner.getIndexAttr(rowLength)},
        ArrayRef<OpFoldResult>{inner.getIndexAttr(1), inner.getIndexAttr(1)}));
  Value outView = memref::SubViewOp::create(
      inner, loc, outRows, ArrayRef<OpFoldResult>{row},
      ArrayRef<OpFoldResult>{inner.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{inner.getIndexAttr(1)});
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  SmallVector<AffineMap> maps(views.size(),
                              AffineMap::getMultiDimIdentityMap(2, ctx));
  maps.push_back(AffineMap::get(2, 0, {d0}, ctx));
  SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                utils::IteratorType::reduction};
  makeGeneric(inner, loc, views, outView, maps, iterators, rowBody,
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                combineBody(nb, nl, args, c);
              });
  op.erase();
}

/// Outermost reductions: a first stage over blocks of the reduced rows,
/// then their combination.
void rewriteOutermost(const Candidate &c, int64_t targetThreads) {
  linalg::GenericOp op = c.op;
  const int64_t p = c.outputs, r = c.reduced;
  if (p >= kFewOutputs)
    return;
  int64_t s = splitFactor(r, std::max<int64_t>(1, targetThreads / p));
  if (s < 2)
    return;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value out = op.getDpsInits()[0];
  Type element = cast<MemRefType>(out.getType()).getElementType();
  // partials[s, p] = combine over j of f(x[s * (R / S) + j, p]).
  Value partials = emitPartials(b, loc, c, {s, r / s, p});
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  // out[p] = combine(out[p], partials[0, p], ..., partials[S - 1, p]).
  Value outFlat = reshape(b, loc, out, {p});
  makeGeneric(b, loc, {partials}, outFlat,
              {AffineMap::getMultiDimIdentityMap(2, ctx),
               AffineMap::get(2, 0, {d1}, ctx)},
              {utils::IteratorType::reduction, utils::IteratorType::parallel},
              nullptr, [&](OpBuilder &nb, Location nl, ValueRange args) {
                combineBody(nb, nl, args, c);
              });
  op.erase();
}

struct SplitGpuReductionsPass
    : public flow::impl::SplitGpuReductionsPassBase<SplitGpuReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr("flow.kernel") || func.isExternal())
        continue;
      // Top-level ops only: reductions inside row tiles are a block's.
      SmallVector<Candidate> candidates;
      for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
        if (std::optional<Candidate> c = match(op))
          candidates.push_back(*c);
      for (const Candidate &c : candidates) {
        if (c.innermost) {
          if (c.reduced >= kMinRow)
            rewriteInnermost(c, targetThreads);
        } else {
          rewriteOutermost(c, targetThreads);
        }
      }
    }
  }
};

} // namespace
