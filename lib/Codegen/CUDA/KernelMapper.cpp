//===- KernelMapper.cpp - Generic ops onto thread blocks ------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "KernelMapper.h"

#include <numeric>

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::gpumap;

bool gpumap::isVectorizableBody(linalg::GenericOp op) {
  for (Operation &inner : op.getRegion().front().without_terminator()) {
    if (isa<arith::ConstantOp>(inner))
      continue;
    if (!inner.hasTrait<OpTrait::Elementwise>() || inner.getNumRegions() ||
        !isMemoryEffectFree(&inner))
      return false;
    for (Type t : inner.getResultTypes())
      if (!t.isIntOrFloat())
        return false;
  }
  return true;
}

std::optional<std::string>
KernelMapper::unsupported(linalg::GenericOp op) const {
  if (!op.hasPureBufferSemantics())
    return std::string("it still works on tensors");
  for (int64_t e : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(e))
      return std::string("a loop has a dynamic extent");
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type && !operand.get().getType().isIntOrFloat())
      return std::string("an operand is neither a buffer nor a scalar");
    if (type && !type.getElementType().isIntOrFloat())
      return std::string("a buffer holds neither integers nor floats");
  }
  Loops loops(op);
  for (OpOperand &init : op.getDpsInitsMutable())
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults())
      for (unsigned d : loops.reductionDims)
        if (e.isFunctionOfDim(d))
          return std::string("an output is indexed by a reduction loop");
  for (Operation &inner : op.getRegion().front().without_terminator())
    if (inner.getNumRegions())
      return "its body holds a '" + inner.getName().getStringRef().str() +
             "' with regions";
  return std::nullopt;
}

int64_t KernelMapper::vectorWidth(linalg::GenericOp op, const Loops &loops,
                                  bool cooperative) const {
  // A thread running reduction loops of its own keeps scalar accumulators.
  if (loops.extents.empty() || loops.reduction.back() != cooperative ||
      (!cooperative && !loops.reductionDims.empty()) || !isVectorizableBody(op))
    return 1;
  int64_t widest = 1;
  for (OpOperand &operand : op->getOpOperands()) {
    Type t = getElementTypeOrSelf(operand.get().getType());
    // A vector of i1 in memory is packed bits, a buffer of i1 one byte per
    // element: such buffers are read and written an element at a time.
    if (isa<MemRefType>(operand.get().getType()) &&
        t.getIntOrFloatBitWidth() < 8)
      return 1;
    widest = std::max(widest, elementBytes(t));
  }
  unsigned last = loops.last();
  for (int64_t v = std::max<int64_t>(1, vectorBytes / widest); v > 1; v /= 2) {
    if (loops.extents[last] % v)
      continue;
    bool fits = llvm::all_of(op->getOpOperands(), [&](OpOperand &operand) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type)
        return true; // a scalar: broadcast
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (!map.isFunctionOfDim(last))
        return op.isDpsInput(&operand) || cooperative; // broadcast or reduced
      if (map.getNumResults() == 0 ||
          map.getResults().back() != getAffineDimExpr(last, op.getContext()))
        return false;
      for (AffineExpr e : map.getResults().drop_back())
        if (e.isFunctionOfDim(last))
          return false;
      auto [strides, offset] = type.getStridesAndOffset();
      if (strides.back() != 1)
        return false;
      for (int64_t s : ArrayRef(strides).drop_back())
        if (ShapedType::isDynamic(s) || s % v)
          return false;
      if (!ShapedType::isDynamic(offset) && offset % v)
        return false;
      return offsetAlignment(operand.get()) % v == 0;
    });
    if (fits)
      return v;
  }
  return 1;
}

SmallVector<Value> KernelMapper::indices(OpBuilder &b, Location loc,
                                         AffineMap map, ValueRange ivs) {
  SmallVector<Value> result;
  for (AffineExpr e : map.getResults())
    result.push_back(affine::expandAffineExpr(b, loc, e, ivs, {}));
  return result;
}

SmallVector<Value> KernelMapper::delinearize(OpBuilder &b, Location loc,
                                             Value linear,
                                             ArrayRef<int64_t> extents) {
  SmallVector<Value> result(extents.size());
  Value rest = linear;
  for (int i = extents.size() - 1; i >= 0; --i) {
    if (extents[i] == 1) {
      result[i] = arith::ConstantIndexOp::create(b, loc, 0);
      continue;
    }
    Value e = arith::ConstantIndexOp::create(b, loc, extents[i]);
    bool outermost =
        llvm::all_of(extents.take_front(i), [](int64_t x) { return x == 1; });
    result[i] = outermost ? rest : arith::RemUIOp::create(b, loc, rest, e);
    if (!outermost)
      rest = arith::DivUIOp::create(b, loc, rest, e);
  }
  return result;
}

SmallVector<Value> KernelMapper::emitBody(OpBuilder &b, linalg::GenericOp op,
                                          ValueRange ivs, int64_t v,
                                          ValueRange outs) {
  Location loc = op.getLoc();
  Block &body = op.getRegion().front();
  unsigned last = ivs.size() - 1;
  IRMapping mapping;
  auto widen = [&](Value scalar) -> Value {
    if (v == 1)
      return scalar;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({v}, scalar.getType()), scalar);
  };
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    if (op.isDpsInit(&operand)) {
      unsigned i = operand.getOperandNumber() - op.getNumDpsInputs();
      if (i < outs.size() && outs[i]) {
        mapping.map(arg, outs[i]);
        continue;
      }
      if (arg.use_empty())
        continue;
    } else if (arg.use_empty()) {
      continue;
    }
    Value source = operand.get();
    if (!isa<MemRefType>(source.getType())) {
      mapping.map(arg, widen(source));
      continue;
    }
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<Value> at = indices(b, loc, map, ivs);
    if (v > 1 && map.isFunctionOfDim(last)) {
      Type element = getElementTypeOrSelf(source.getType());
      mapping.map(arg, vector::LoadOp::create(
                           b, loc, VectorType::get({v}, element), source, at,
                           /*nontemporal=*/false,
                           llvm::MaybeAlign(v * elementBytes(element))));
    } else {
      mapping.map(arg, widen(memref::LoadOp::create(b, loc, source, at)));
    }
  }
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    if (v == 1) {
      b.clone(inner, mapping);
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(inner)) {
      mapping.map(constant.getResult(), widen(b.clone(inner)->getResult(0)));
      continue;
    }
    OperationState state(loc, inner.getName());
    for (Value operand : inner.getOperands()) {
      Value mapped = mapping.lookupOrNull(operand);
      state.operands.push_back(mapped ? mapped : widen(operand));
    }
    for (Type t : inner.getResultTypes())
      state.types.push_back(VectorType::get({v}, t));
    state.attributes = inner.getAttrs();
    Operation *vectorized = b.create(state);
    mapping.map(inner.getResults(), vectorized->getResults());
  }
  // A value the body yields unchanged from outside it (a fill's constant)
  // is the same in every lane.
  SmallVector<Value> yielded;
  for (Value value : body.getTerminator()->getOperands()) {
    Value y = mapping.lookupOrDefault(value);
    yielded.push_back(isa<VectorType>(y.getType()) ? y : widen(y));
  }
  return yielded;
}

void KernelMapper::emitSpread(OpBuilder &b, linalg::GenericOp op,
                              const Loops &loops, int64_t v, Value threadId,
                              int64_t threadCount, bool guardOnly) {
  Location loc = op.getLoc();
  SmallVector<int64_t> parallelExtents;
  for (unsigned d : loops.parallelDims)
    parallelExtents.push_back(loops.extents[d]);
  if (v > 1)
    parallelExtents.back() /= v;
  int64_t units = loops.parallelCount / v;

  auto emitUnit = [&](OpBuilder &b, Value unit) {
    SmallVector<Value> ivs(loops.extents.size());
    for (auto [d, iv] : llvm::zip(loops.parallelDims,
                                  delinearize(b, loc, unit, parallelExtents)))
      ivs[d] = iv;
    if (v > 1) {
      Value vv = arith::ConstantIndexOp::create(b, loc, v);
      ivs[loops.last()] = arith::MulIOp::create(b, loc, ivs[loops.last()], vv);
    }
    SmallVector<Value> results;
    if (loops.reductionDims.empty()) {
      results = emitBody(b, op, ivs, v, {});
    } else {
      // The outputs' current values, then one loop per reduction dimension
      // carrying them.
      for (unsigned d : loops.reductionDims)
        ivs[d] = arith::ConstantIndexOp::create(b, loc, 0);
      SmallVector<Value> init;
      for (OpOperand &out : op.getDpsInitsMutable()) {
        SmallVector<Value> at =
            indices(b, loc, op.getMatchingIndexingMap(&out), ivs);
        Value value = memref::LoadOp::create(b, loc, out.get(), at);
        init.push_back(value);
      }
      std::function<SmallVector<Value>(OpBuilder &, size_t, ValueRange)> nest =
          [&](OpBuilder &b, size_t level,
              ValueRange acc) -> SmallVector<Value> {
        if (level == loops.reductionDims.size())
          return emitBody(b, op, ivs, 1, acc);
        unsigned d = loops.reductionDims[level];
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        Value ub = arith::ConstantIndexOp::create(b, loc, loops.extents[d]);
        auto loop = scf::ForOp::create(
            b, loc, zero, ub, one, acc,
            [&](OpBuilder &b, Location, Value iv, ValueRange iterArgs) {
              ivs[d] = iv;
              scf::YieldOp::create(b, loc, nest(b, level + 1, iterArgs));
            });
        return SmallVector<Value>(loop.getResults());
      };
      results = nest(b, 0, init);
      for (unsigned d : loops.reductionDims)
        ivs[d] = arith::ConstantIndexOp::create(b, loc, 0);
    }
    for (auto [value, out] : llvm::zip(results, op.getDpsInitsMutable())) {
      SmallVector<Value> at =
          indices(b, loc, op.getMatchingIndexingMap(&out), ivs);
      if (isa<VectorType>(value.getType()))
        vector::StoreOp::create(
            b, loc, value, out.get(), at, /*nontemporal=*/false,
            llvm::MaybeAlign(
                v * elementBytes(getElementTypeOrSelf(out.get().getType()))));
      else
        memref::StoreOp::create(b, loc, value, out.get(), at);
    }
  };
  assert((v == 1 || loops.reductionDims.empty()) &&
         "vector lanes with reduction loops in the thread");
  Value count = arith::ConstantIndexOp::create(b, loc, units);
  if (guardOnly) {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          threadId, count);
    scf::IfOp::create(b, loc, inRange, [&](OpBuilder &b, Location) {
      emitUnit(b, threadId);
      scf::YieldOp::create(b, loc);
    });
    return;
  }
  Value step = arith::ConstantIndexOp::create(b, loc, threadCount);
  scf::ForOp::create(b, loc, threadId, count, step, ValueRange{},
                     [&](OpBuilder &b, Location, Value unit, ValueRange) {
                       emitUnit(b, unit);
                       scf::YieldOp::create(b, loc);
                     });
}

void KernelMapper::emitBlockReduction(OpBuilder &b, linalg::GenericOp op,
                                      const Loops &loops,
                                      const Combiner &combiner, int64_t v,
                                      Value threadId, int64_t threads) {
  Location loc = op.getLoc();
  Value out = op.getDpsInits()[0];
  Type element = getElementTypeOrSelf(out.getType());
  SmallVector<int64_t> extents = loops.extents;
  if (v > 1)
    extents.back() /= v;
  int64_t units = loops.reductionCount / v;
  Value identity = arith::ConstantOp::create(
      b, loc, identityOf(combiner.allReduce, element));
  Value start = v > 1 ? Value(vector::BroadcastOp::create(
                            b, loc, VectorType::get({v}, element), identity))
                      : identity;
  Value count = arith::ConstantIndexOp::create(b, loc, units);
  Value step = arith::ConstantIndexOp::create(b, loc, threads);
  auto loop = scf::ForOp::create(
      b, loc, threadId, count, step, ValueRange{start},
      [&](OpBuilder &b, Location, Value unit, ValueRange acc) {
        SmallVector<Value> ivs = delinearize(b, loc, unit, extents);
        if (v > 1) {
          Value vv = arith::ConstantIndexOp::create(b, loc, v);
          ivs.back() = arith::MulIOp::create(b, loc, ivs.back(), vv);
        }
        scf::YieldOp::create(b, loc, emitBody(b, op, ivs, v, acc));
      });
  Value partial = loop.getResult(0);
  if (v > 1)
    partial = vector::ReductionOp::create(b, loc, combiner.vectorKind, partial);
  // Warp shuffles move 32-bit values: narrower partials are combined
  // widened (f16 and bf16 as f32, small integers as i32, sign- or
  // zero-extended as the combiner compares them) and narrowed after.
  Type wide = element;
  if (auto f = dyn_cast<FloatType>(element); f && f.getWidth() < 32)
    wide = b.getF32Type();
  else if (auto i = dyn_cast<IntegerType>(element); i && i.getWidth() < 32)
    wide = b.getI32Type();
  if (wide != element) {
    using A = gpu::AllReduceOperation;
    bool unsignedOp =
        combiner.allReduce == A::MINUI || combiner.allReduce == A::MAXUI ||
        combiner.allReduce == A::AND || combiner.allReduce == A::OR ||
        combiner.allReduce == A::XOR;
    if (isa<FloatType>(element))
      partial = arith::ExtFOp::create(b, loc, wide, partial);
    else if (unsignedOp)
      partial = arith::ExtUIOp::create(b, loc, wide, partial);
    else
      partial = arith::ExtSIOp::create(b, loc, wide, partial);
  }
  Value total = gpu::AllReduceOp::create(
      b, loc, partial,
      gpu::AllReduceOperationAttr::get(b.getContext(), combiner.allReduce),
      /*uniform=*/true);
  if (wide != element)
    total = isa<FloatType>(element)
                ? Value(arith::TruncFOp::create(b, loc, element, total))
                : Value(arith::TruncIOp::create(b, loc, element, total));
  // The output's value before the reduction (its init) joins once.
  SmallVector<Value> zeros(loops.extents.size(),
                           arith::ConstantIndexOp::create(b, loc, 0));
  OpOperand &init = op.getDpsInitsMutable()[0];
  SmallVector<Value> at =
      indices(b, loc, op.getMatchingIndexingMap(&init), zeros);
  Value before = memref::LoadOp::create(b, loc, out, at);
  IRMapping mapping;
  BlockArgument outArg = op.getRegion().front().getArguments().back();
  for (Value operand : combiner.op->getOperands())
    mapping.map(operand, operand == outArg ? before : total);
  Value result = b.clone(*combiner.op, mapping)->getResult(0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, threadId, zero);
  scf::IfOp::create(b, loc, first, [&](OpBuilder &b, Location) {
    memref::StoreOp::create(b, loc, result, out, at);
    scf::YieldOp::create(b, loc);
  });
}

/// Whether `alloc` only gives a shape: every use is a linalg.generic input
/// whose element the body never reads (a pooling window).
bool gpumap::onlyShapesLoops(Operation *alloc) {
  return llvm::all_of(alloc->getUses(), [](OpOperand &use) {
    auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!generic || !generic.isDpsInput(&use))
      return isa<memref::DeallocOp>(use.getOwner());
    return generic.getRegion()
        .front()
        .getArgument(use.getOperandNumber())
        .use_empty();
  });
}

/// The memref at the root of `value`'s views.
Value gpumap::rootBuffer(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else
      break;
  }
  return value;
}

/// Whether `op` reads, at other elements than it writes them or through
/// another operand than its output, what `earlier` (an op before it in the
/// same kernel) wrote: then a grid-wide barrier must come between them. An
/// op may read what an earlier one wrote only as its own output's initial
/// value, element by element in the same order: the same thread wrote it.
bool gpumap::needsBarrierAfter(linalg::GenericOp earlier,
                               linalg::GenericOp op) {
  for (Value written : earlier.getDpsInits()) {
    Value root = rootBuffer(written);
    for (OpOperand &operand : op->getOpOperands()) {
      if (rootBuffer(operand.get()) != root)
        continue;
      bool sameElements =
          op.isDpsInit(&operand) && operand.get() == written &&
          earlier.getNumDpsInits() == 1 &&
          Loops(earlier).parallelCount == Loops(op).parallelCount &&
          earlier.getMatchingIndexingMap(&earlier.getDpsInitsMutable()[0])
              .isIdentity() &&
          op.getMatchingIndexingMap(&operand).isProjectedPermutation() &&
          llvm::equal(op.getMatchingIndexingMap(&operand).getResults(),
                      llvm::map_range(Loops(op).parallelDims, [&](unsigned d) {
                        return getAffineDimExpr(d, op.getContext());
                      }));
      if (!sameElements)
        return true;
    }
  }
  return false;
}
