//===- MapKernelsToGpu.cpp - Kernels onto thread blocks ------------------===//
//
// Part of the Flow project.
//
// Each bufferized kernel becomes a gpu.func. Two shapes are mapped (see the
// pass's description in Passes.td): a kernel tiled into rows runs a row per
// block, its ops spread over the block's threads with barriers between
// them, whole-row reductions combined by gpu.all_reduce; any other kernel
// spreads each op's parallel elements over the whole grid. In both, a
// thread takes `v` adjacent elements of the innermost dimension at a time
// as one vector load or store where every buffer the op touches allows it.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_MAPKERNELSTOGPUPASS
#include "flow/Codegen/CUDA/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// Shared memory a block may use without opting in to more (bytes).
constexpr int64_t kMaxSharedBytes = 48 * 1024;

/// Offsets within a buffer are multiples of this many elements when nothing
/// smaller is known: every binding and temporary starts 16-byte aligned.
constexpr int64_t kAlignedBase = int64_t(1) << 20;

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

/// The largest power of two (up to kAlignedBase) that divides the element
/// offset of `memref`'s first element from a 16-byte aligned address, as
/// far as its views show.
int64_t offsetAlignment(Value memref) {
  if (auto subview = memref.getDefiningOp<memref::SubViewOp>()) {
    int64_t a = offsetAlignment(subview.getSource());
    auto [strides, offset] = subview.getSourceType().getStridesAndOffset();
    for (auto [i, off] : llvm::enumerate(subview.getMixedOffsets())) {
      if (ShapedType::isDynamic(strides[i]))
        return 1;
      std::optional<int64_t> value = getConstantIntValue(off);
      a = std::gcd(a, value ? *value * strides[i] : strides[i]);
    }
    return a == 0 ? kAlignedBase : a;
  }
  if (auto collapse = memref.getDefiningOp<memref::CollapseShapeOp>())
    return offsetAlignment(collapse.getSrc());
  if (auto expand = memref.getDefiningOp<memref::ExpandShapeOp>())
    return offsetAlignment(expand.getSrc());
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (type && type.getLayout().isIdentity())
    return kAlignedBase;
  return 1;
}

/// The combining op of a reduction body (`out = combine(out, x)`) and the
/// all-reduce and vector-reduction kinds that match it.
struct Combiner {
  Operation *op = nullptr;
  gpu::AllReduceOperation allReduce;
  vector::CombiningKind vectorKind;
};

std::optional<Combiner> findCombiner(linalg::GenericOp generic) {
  if (generic.getNumDpsInits() != 1)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *op = yield.getOperand(0).getDefiningOp();
  if (!op || op->getBlock() != &body || op->getNumOperands() != 2 ||
      !out.hasOneUse() || *out.getUsers().begin() != op)
    return std::nullopt;
  using A = gpu::AllReduceOperation;
  using V = vector::CombiningKind;
  std::optional<std::pair<A, V>> kinds =
      llvm::TypeSwitch<Operation *, std::optional<std::pair<A, V>>>(op)
          .Case<arith::AddFOp, arith::AddIOp>(
              [](auto) { return std::make_pair(A::ADD, V::ADD); })
          .Case<arith::MulFOp, arith::MulIOp>(
              [](auto) { return std::make_pair(A::MUL, V::MUL); })
          .Case([](arith::MaximumFOp) {
            return std::make_pair(A::MAXIMUMF, V::MAXIMUMF);
          })
          .Case([](arith::MinimumFOp) {
            return std::make_pair(A::MINIMUMF, V::MINIMUMF);
          })
          .Case([](arith::MaxNumFOp) {
            return std::make_pair(A::MAXNUMF, V::MAXNUMF);
          })
          .Case([](arith::MinNumFOp) {
            return std::make_pair(A::MINNUMF, V::MINNUMF);
          })
          .Case([](arith::MaxSIOp) {
            return std::make_pair(A::MAXSI, V::MAXSI);
          })
          .Case([](arith::MinSIOp) {
            return std::make_pair(A::MINSI, V::MINSI);
          })
          .Case([](arith::MaxUIOp) {
            return std::make_pair(A::MAXUI, V::MAXUI);
          })
          .Case([](arith::MinUIOp) {
            return std::make_pair(A::MINUI, V::MINUI);
          })
          .Case([](arith::AndIOp) { return std::make_pair(A::AND, V::AND); })
          .Case([](arith::OrIOp) { return std::make_pair(A::OR, V::OR); })
          .Case([](arith::XOrIOp) { return std::make_pair(A::XOR, V::XOR); })
          .Default([](Operation *) { return std::optional<std::pair<A, V>>(); });
  if (!kinds)
    return std::nullopt;
  return Combiner{op, kinds->first, kinds->second};
}

/// The value that leaves every other unchanged under `kind`.
TypedAttr identityOf(gpu::AllReduceOperation kind, Type type) {
  using A = gpu::AllReduceOperation;
  if (auto f = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (kind) {
    case A::ADD:
      return FloatAttr::get(f, llvm::APFloat::getZero(sem));
    case A::MUL:
      return FloatAttr::get(f, llvm::APFloat::getOne(sem));
    case A::MAXIMUMF:
    case A::MAXNUMF:
      return FloatAttr::get(f, llvm::APFloat::getInf(sem, /*Negative=*/true));
    case A::MINIMUMF:
    case A::MINNUMF:
      return FloatAttr::get(f, llvm::APFloat::getInf(sem));
    default:
      return {};
    }
  }
  auto i = cast<IntegerType>(type);
  unsigned w = i.getWidth();
  switch (kind) {
  case A::ADD:
  case A::OR:
  case A::XOR:
  case A::MAXUI:
    return IntegerAttr::get(i, llvm::APInt::getZero(w));
  case A::MUL:
    return IntegerAttr::get(i, llvm::APInt(w, 1));
  case A::AND:
  case A::MINUI:
    return IntegerAttr::get(i, llvm::APInt::getAllOnes(w));
  case A::MAXSI:
    return IntegerAttr::get(i, llvm::APInt::getSignedMinValue(w));
  case A::MINSI:
    return IntegerAttr::get(i, llvm::APInt::getSignedMaxValue(w));
  default:
    return {};
  }
}

/// One generic op's loops: extents, and which are reductions.
struct Loops {
  SmallVector<int64_t> extents;
  SmallVector<bool> reduction;
  SmallVector<unsigned> parallelDims, reductionDims;
  int64_t parallelCount = 1, reductionCount = 1;

  explicit Loops(linalg::GenericOp op) {
    extents = op.getStaticLoopRanges();
    for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray())) {
      bool r = it == utils::IteratorType::reduction;
      reduction.push_back(r);
      (r ? reductionDims : parallelDims).push_back(i);
      (r ? reductionCount : parallelCount) *= extents[i];
    }
  }
  unsigned last() const { return extents.size() - 1; }
};

/// Maps kernels of one module; `fail` records the first refusal.
class KernelMapper {
public:
  KernelMapper(int64_t blockSize, int64_t vectorBytes)
      : blockSize(blockSize), vectorBytes(vectorBytes) {}

  /// Whether `op` can be mapped at all (static loops, ops a thread can
  /// run); a reason when not.
  std::optional<std::string> unsupported(linalg::GenericOp op) const;

  /// How many adjacent elements of the innermost loop one thread takes
  /// (1 when vector accesses do not fit). `cooperative`: the innermost loop
  /// is a reduction the block splits.
  int64_t vectorWidth(linalg::GenericOp op, const Loops &loops,
                      bool cooperative) const;

  /// Emits `op` with its parallel elements (in units of `v`) spread over
  /// threads `threadId`, `threadId + threadCount`, ...: each thread runs
  /// the reductions of its elements as loops. With `guardOnly` the caller
  /// knows there are at least as many threads as units: an `if` replaces
  /// the loop.
  void emitSpread(OpBuilder &b, linalg::GenericOp op, const Loops &loops,
                  int64_t v, Value threadId, int64_t threadCount,
                  bool guardOnly);

  /// Emits `op`, a reduction of its whole iteration space to one value,
  /// split over the block's threads and combined by gpu.all_reduce.
  void emitBlockReduction(OpBuilder &b, linalg::GenericOp op,
                          const Loops &loops, const Combiner &combiner,
                          int64_t v, Value threadId, int64_t threads);

  int64_t blockSize, vectorBytes;

  /// Loads, computes and returns the values `op`'s body yields at loop
  /// indices `ivs` (the innermost one the first of `v` lanes); `outs`
  /// replace the output block arguments where given.
  SmallVector<Value> emitBody(OpBuilder &b, linalg::GenericOp op,
                              ValueRange ivs, int64_t v, ValueRange outs);
  /// Indices of `map` applied to `ivs`.
  SmallVector<Value> indices(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange ivs);
  /// Splits `linear` into indices of `extents` (row-major).
  SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                 ArrayRef<int64_t> extents);
};

bool isVectorizableBody(linalg::GenericOp op) {
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
      (!cooperative && !loops.reductionDims.empty()) ||
      !isVectorizableBody(op))
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
    bool outermost = llvm::all_of(extents.take_front(i),
                                  [](int64_t x) { return x == 1; });
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
      std::function<SmallVector<Value>(OpBuilder &, size_t, ValueRange)>
          nest = [&](OpBuilder &b, size_t level,
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
  Value start =
      v > 1 ? Value(vector::BroadcastOp::create(
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
    partial =
        vector::ReductionOp::create(b, loc, combiner.vectorKind, partial);
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
    bool unsignedOp = combiner.allReduce == A::MINUI ||
                      combiner.allReduce == A::MAXUI ||
                      combiner.allReduce == A::AND ||
                      combiner.allReduce == A::OR ||
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
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      threadId, zero);
  scf::IfOp::create(b, loc, first, [&](OpBuilder &b, Location) {
    memref::StoreOp::create(b, loc, result, out, at);
    scf::YieldOp::create(b, loc);
  });
}

/// Whether `alloc` only gives a shape: every use is a linalg.generic input
/// whose element the body never reads (a pooling window).
bool onlyShapesLoops(Operation *alloc) {
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
Value rootBuffer(Value value) {
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
bool needsBarrierAfter(linalg::GenericOp earlier, linalg::GenericOp op) {
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

struct MapKernelsToGpuPass
    : public flow::impl::MapKernelsToGpuPassBase<MapKernelsToGpuPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Maps one kernel into `gpuModule`; failure has been reported.
  LogicalResult mapKernel(func::FuncOp func, gpu::GPUModuleOp gpuModule);
  /// A gpu.func named `name` with `func`'s bindings, then one argument per
  /// buffer of `scratch` (which it takes the place of), holding a copy of
  /// `func`'s body without the linalg.generic ops `keep` refuses.
  gpu::GPUFuncOp cloneKernel(func::FuncOp func, StringRef name,
                             ArrayRef<Operation *> scratch,
                             llvm::function_ref<bool(Operation *)> keep,
                             gpu::GPUModuleOp gpuModule);
  /// Maps `gpuFunc`'s top-level generic ops, one launch over the grid;
  /// returns the grid's block count.
  int64_t mapGrid(gpu::GPUFuncOp gpuFunc, KernelMapper &mapper);
  /// Maps `gpuFunc`'s row tile (its one scf.forall), a row per block.
  LogicalResult mapRows(gpu::GPUFuncOp gpuFunc, scf::ForallOp forall,
                        KernelMapper &mapper, int64_t &grid,
                        int64_t &threads, int64_t &sharedBytes);
  /// Runs `gpuFunc`'s one sequential op on one thread.
  LogicalResult mapSerial(gpu::GPUFuncOp gpuFunc);
  /// The error on `at` refusing `kernel` for `why`.
  LogicalResult refuse(StringRef kernel, Operation *at, const Twine &why) {
    at->emitError("kernel '")
        << kernel << "' cannot run on CUDA yet: " << why;
    return failure();
  }
};

gpu::GPUFuncOp MapKernelsToGpuPass::cloneKernel(
    func::FuncOp func, StringRef name, ArrayRef<Operation *> scratch,
    llvm::function_ref<bool(Operation *)> keep, gpu::GPUModuleOp gpuModule) {
  SmallVector<Type> inputs(func.getArgumentTypes());
  for (Operation *alloc : scratch)
    inputs.push_back(alloc->getResult(0).getType());
  OpBuilder mb = OpBuilder::atBlockEnd(gpuModule.getBody());
  auto gpuFunc = gpu::GPUFuncOp::create(
      mb, func.getLoc(), name, mb.getFunctionType(inputs, {}));
  gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                   mb.getUnitAttr());
  for (StringRef attr :
       {FlowDialect::getKernelAttrName(), FlowDialect::getBindingSizesAttrName(),
        FlowDialect::getNumOutputsAttrName()})
    if (Attribute a = func->getAttr(attr))
      gpuFunc->setAttr(attr, a);
  Block &body = gpuFunc.getBody().front();
  IRMapping map;
  for (auto [from, to] :
       llvm::zip(func.getArguments(), body.getArguments()))
    map.map(from, to);
  for (auto [i, alloc] : llvm::enumerate(scratch))
    map.map(alloc->getResult(0), body.getArgument(func.getNumArguments() + i));
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op)) {
      gpu::ReturnOp::create(b, op.getLoc());
      continue;
    }
    if (llvm::is_contained(scratch, &op) ||
        (isa<memref::DeallocOp>(op) &&
         llvm::is_contained(scratch, op.getOperand(0).getDefiningOp())))
      continue;
    if (isa<linalg::GenericOp, scf::ForallOp, scf::ForOp, scf::IfOp,
            memref::StoreOp, memref::CopyOp>(op) &&
        !keep(&op))
      continue;
    b.clone(op, map);
  }
  return gpuFunc;
}

int64_t MapKernelsToGpuPass::mapGrid(gpu::GPUFuncOp gpuFunc,
                                     KernelMapper &mapper) {
  Block &body = gpuFunc.getBody().front();
  SmallVector<linalg::GenericOp> ops(body.getOps<linalg::GenericOp>());
  SmallVector<int64_t> widths;
  for (linalg::GenericOp op : ops)
    widths.push_back(mapper.vectorWidth(op, Loops(op), false));
  // Ops chained through an output take the same elements in each thread.
  bool chained = false;
  for (auto [i, op] : llvm::enumerate(ops))
    for (linalg::GenericOp earlier : ArrayRef(ops).take_front(i))
      for (Value written : earlier.getDpsInits())
        for (Value read : op->getOperands())
          chained |= rootBuffer(read) == rootBuffer(written);
  if (chained && !widths.empty()) {
    int64_t v = *llvm::min_element(widths);
    for (int64_t &w : widths)
      w = v;
  }
  int64_t threads = mapper.blockSize;
  int64_t grid = 1;
  for (auto [op, v] : llvm::zip(ops, widths))
    grid = std::max(grid, (Loops(op).parallelCount / v + threads - 1) /
                              threads);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = gpuFunc.getLoc();
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value dim = arith::ConstantIndexOp::create(b, loc, threads);
  Value global = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, dim), thread);
  for (auto [op, v] : llvm::zip(ops, widths)) {
    b.setInsertionPoint(op);
    mapper.emitSpread(b, op, Loops(op), v, global, grid * threads,
                      /*guardOnly=*/true);
    op.erase();
  }
  return grid;
}

LogicalResult MapKernelsToGpuPass::mapRows(gpu::GPUFuncOp gpuFunc,
                                           scf::ForallOp forall,
                                           KernelMapper &mapper,
                                           int64_t &grid, int64_t &threads,
                                           int64_t &sharedBytes) {
  StringRef name = gpuFunc.getName();
  auto refuse = [&](Operation *at, const Twine &why) {
    return this->refuse(name, at, why);
  };
  OpBuilder b(forall);
  SmallVector<Operation *> toErase;
  std::optional<SmallVector<int64_t>> ubs =
      getConstantIntValues(forall.getMixedUpperBound());
  std::optional<SmallVector<int64_t>> lbs =
      getConstantIntValues(forall.getMixedLowerBound());
  std::optional<SmallVector<int64_t>> steps =
      getConstantIntValues(forall.getMixedStep());
  if (!ubs || !lbs || !steps ||
      llvm::any_of(*lbs, [](int64_t x) { return x != 0; }) ||
      llvm::any_of(*steps, [](int64_t x) { return x != 1; }))
    return refuse(forall, "its row loop is not static from 0 by 1");
  for (int64_t u : *ubs)
    grid *= u;
  SmallVector<linalg::GenericOp> rowOps;
  for (Operation &op : forall.getBody()->without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (std::optional<std::string> why = mapper.unsupported(generic))
        return refuse(generic, *why);
      rowOps.push_back(generic);
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (onlyShapesLoops(alloc))
        continue;
      auto type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity())
        return refuse(alloc, "a row temporary has no static shape");
      int64_t bytes =
          type.getNumElements() * elementBytes(type.getElementType());
      sharedBytes += (bytes + 15) / 16 * 16;
    } else if (isa<linalg::LinalgOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' is not a linalg.generic");
    } else if (!isMemoryEffectFree(&op) &&
               !isa<memref::DeallocOp, memref::SubViewOp,
                    memref::CollapseShapeOp, memref::ExpandShapeOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' has effects no thread mapping covers");
    }
  }
  if (sharedBytes > kMaxSharedBytes)
    return refuse(forall, "its row temporaries need " +
                              Twine(sharedBytes) +
                              " bytes of shared memory, more than a "
                              "block's 48 KiB");
  // Threads: enough for the widest op, in whole warps.
  int64_t widest = 1;
  SmallVector<std::pair<int64_t, bool>> plans; // (v, cooperative)
  for (linalg::GenericOp op : rowOps) {
    Loops loops(op);
    bool cooperative = !loops.reductionDims.empty() &&
                       loops.parallelCount == 1 && findCombiner(op);
    int64_t v = mapper.vectorWidth(op, loops, cooperative);
    plans.push_back({v, cooperative});
    widest = std::max(widest, (cooperative ? loops.reductionCount
                                           : loops.parallelCount) /
                                  v);
  }
  threads = std::clamp<int64_t>((widest + 31) / 32 * 32, 32, blockSize);

  Location loc = forall.getLoc();
  b.setInsertionPoint(forall);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  SmallVector<Value> rows =
      mapper.delinearize(b, loc, block, *ubs);
  for (auto [iv, row] : llvm::zip(forall.getInductionVars(), rows))
    iv.replaceAllUsesWith(row);
  // The row's temporaries become workgroup memory: the generic ops and
  // views that use them take the workgroup buffer instead.
  std::function<LogicalResult(Value, Value)> retarget =
      [&](Value from, Value to) -> LogicalResult {
    for (OpOperand &use : llvm::make_early_inc_range(from.getUses())) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user)) {
        user->erase();
        continue;
      }
      if (isa<linalg::GenericOp>(user)) {
        use.set(to);
        continue;
      }
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view)
        return refuse(user, "a row temporary is used by '" +
                                user->getName().getStringRef() +
                                "' (only by linalg.generic ops and views)");
      MemRefType type = view.getType();
      auto viewType =
          MemRefType::get(type.getShape(), type.getElementType(),
                          type.getLayout(),
                          cast<MemRefType>(to.getType()).getMemorySpace());
      OpBuilder vb(view);
      auto moved = memref::SubViewOp::create(
          vb, view.getLoc(), viewType, to, view.getMixedOffsets(),
          view.getMixedSizes(), view.getMixedStrides());
      if (failed(retarget(view.getResult(), moved.getResult())))
        return failure();
      view.erase();
    }
    return success();
  };
  for (Operation &op :
       llvm::make_early_inc_range(forall.getBody()->without_terminator())) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || onlyShapesLoops(alloc))
      continue;
    MemRefType type = alloc.getType();
    auto shared = MemRefType::get(
        type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    BlockArgument attribution =
        gpuFunc.addWorkgroupAttribution(shared, alloc.getLoc());
    // 16-byte aligned, for vector accesses (offsetAlignment assumes it).
    gpuFunc.setWorkgroupAttributionAttr(
        gpuFunc.getNumWorkgroupAttributions() - 1,
        b.getStringAttr("llvm.align"), b.getI64IntegerAttr(16));
    if (failed(retarget(alloc.getResult(), attribution)))
      return failure();
    alloc->erase();
  }
  // Each op, then a barrier before the next reads what it wrote.
  for (auto [i, op] : llvm::enumerate(rowOps)) {
    auto [v, cooperative] = plans[i];
    b.setInsertionPoint(op);
    Loops loops(op);
    if (cooperative)
      mapper.emitBlockReduction(b, op, loops, *findCombiner(op), v, thread,
                                threads);
    else
      mapper.emitSpread(b, op, loops, v, thread, threads,
                        /*guardOnly=*/false);
    if (i + 1 < rowOps.size())
      gpu::BarrierOp::create(b, op.getLoc());
    toErase.push_back(op);
  }
  // The row body replaces the loop.
  Block *rowBody = forall.getBody();
  rowBody->getTerminator()->erase();
  forall->getBlock()->getOperations().splice(forall->getIterator(),
                                             rowBody->getOperations());
  toErase.push_back(forall);
  for (Operation *op : toErase)
    op->erase();
  return success();
}

LogicalResult MapKernelsToGpuPass::mapKernel(func::FuncOp func,
                                             gpu::GPUModuleOp gpuModule) {
  KernelMapper mapper(blockSize, vectorBytes);
  StringRef name = func.getSymName();
  auto refuse = [&](Operation *at, const Twine &why) {
    return this->refuse(name, at, why);
  };
  if (func.getNumResults())
    return refuse(func, "it still returns values (not bufferized)");
  for (Type t : func.getArgumentTypes()) {
    auto type = dyn_cast<MemRefType>(t);
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return refuse(func, "its bindings must be contiguous static buffers");
  }
  Block &entry = func.getBody().front();

  // A row tile whose temporaries do not fit a block's shared memory keeps
  // them in global memory instead: one slice per row of a buffer allocated
  // for the whole kernel (scratch, as below).
  for (auto forall : llvm::to_vector(entry.getOps<scf::ForallOp>())) {
    std::optional<SmallVector<int64_t>> ubs =
        getConstantIntValues(forall.getMixedUpperBound());
    SmallVector<memref::AllocOp> temps;
    int64_t bytes = 0;
    for (auto alloc : forall.getBody()->getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      if (onlyShapesLoops(alloc) || !type.hasStaticShape() ||
          !type.getLayout().isIdentity())
        continue;
      temps.push_back(alloc);
      bytes += (type.getNumElements() * elementBytes(type.getElementType()) +
                15) / 16 * 16;
    }
    if (bytes <= kMaxSharedBytes || !ubs)
      continue;
    int64_t rows = 1;
    for (int64_t u : *ubs)
      rows *= u;
    for (memref::AllocOp alloc : temps) {
      MemRefType type = alloc.getType();
      int64_t n = type.getNumElements();
      OpBuilder top = OpBuilder::atBlockBegin(&entry);
      Value whole = memref::AllocOp::create(
          top, alloc.getLoc(),
          MemRefType::get({rows * n}, type.getElementType()));
      OpBuilder b(alloc);
      Location loc = alloc.getLoc();
      // This row's slice: row-major index of the tile times its size.
      Value row = arith::ConstantIndexOp::create(b, loc, 0);
      for (auto [iv, ub] : llvm::zip(forall.getInductionVars(), *ubs))
        row = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, row,
                                  arith::ConstantIndexOp::create(b, loc, ub)),
            iv);
      Value offset = arith::MulIOp::create(
          b, loc, row, arith::ConstantIndexOp::create(b, loc, n));
      auto slice = memref::SubViewOp::create(
          b, loc, whole, ArrayRef<OpFoldResult>{offset},
          ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      FailureOr<MemRefType> viewType = memref::ExpandShapeOp::computeExpandedType(
          slice.getType(), type.getShape(), {all});
      if (failed(viewType))
        return refuse(alloc, "a row temporary cannot be viewed in global "
                             "memory");
      Value view = memref::ExpandShapeOp::create(
          b, loc, *viewType, slice, ArrayRef<ReassociationIndices>{all});
      for (Operation *user : llvm::to_vector(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      // Views of the temporary become views of the slice (their layouts
      // now have a dynamic offset).
      std::function<LogicalResult(Value, Value)> moveViews =
          [&](Value from, Value to) -> LogicalResult {
        for (OpOperand &use : llvm::make_early_inc_range(from.getUses())) {
          auto subview = dyn_cast<memref::SubViewOp>(use.getOwner());
          if (!subview) {
            use.set(to);
            continue;
          }
          if (subview.getType().getRank() != subview.getSourceType().getRank())
            return refuse(subview, "a row temporary in global memory is "
                                   "viewed with fewer dimensions");
          OpBuilder vb(subview);
          auto moved = memref::SubViewOp::create(
              vb, subview.getLoc(), to, subview.getMixedOffsets(),
              subview.getMixedSizes(), subview.getMixedStrides());
          if (failed(moveViews(subview.getResult(), moved.getResult())))
            return failure();
          subview.erase();
        }
        return success();
      };
      if (failed(moveViews(alloc.getResult(), view)))
        return failure();
      alloc.erase();
    }
  }

  // The kernel's top-level ops, as stages: ops over the whole grid, a row
  // tile (one scf.forall, a row per block), or an op that runs on one
  // thread (a sequential loop: a sort's merges, a scan). The buffers stages
  // pass each other (scratch) live in global memory.
  enum class Kind { Grid, Rows, Serial };
  struct Stage {
    Kind kind = Kind::Grid;
    SmallVector<Operation *> ops;
  };
  SmallVector<Stage> stages;
  SmallVector<Operation *> scratch;
  for (Operation &op : entry.without_terminator()) {
    if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
      if (onlyShapesLoops(&op))
        continue;
      auto type = cast<MemRefType>(op.getResult(0).getType());
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        return refuse(&op, "a temporary buffer has no static shape");
      scratch.push_back(&op);
    }
  }
  auto isScratch = [&](Value v) {
    return llvm::is_contained(scratch, rootBuffer(v).getDefiningOp());
  };
  for (Operation &op : entry.without_terminator()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (std::optional<std::string> why = mapper.unsupported(generic))
        return refuse(generic, *why);
      // An op that reads what an earlier op of its stage wrote (other than
      // its own output, element by element), or reads a scratch buffer the
      // stage wrote, starts a new stage: launches in order are the
      // grid-wide barriers between them.
      bool readsScratch = llvm::any_of(generic.getDpsInputs(), isScratch);
      bool barrier =
          stages.empty() || stages.back().kind != Kind::Grid ||
          llvm::any_of(stages.back().ops, [&](Operation *e) {
            auto earlier = cast<linalg::GenericOp>(e);
            return needsBarrierAfter(earlier, generic) ||
                   (readsScratch &&
                    llvm::any_of(earlier.getDpsInits(), isScratch));
          });
      if (barrier)
        stages.push_back({Kind::Grid, {}});
      stages.back().ops.push_back(&op);
    } else if (isa<scf::ForallOp>(op)) {
      stages.push_back({Kind::Rows, {&op}});
    } else if (isa<linalg::LinalgOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' is not a linalg.generic");
    } else if (isa<scf::ForOp, scf::IfOp, memref::StoreOp, memref::CopyOp>(
                   op)) {
      stages.push_back({Kind::Serial, {&op}});
    } else if (!isMemoryEffectFree(&op) &&
               !isa<memref::DeallocOp, memref::SubViewOp, memref::AllocOp,
                    memref::AllocaOp, memref::CollapseShapeOp,
                    memref::ExpandShapeOp>(op)) {
      return refuse(&op, "'" + op.getName().getStringRef() +
                             "' has effects no thread mapping covers");
    }
  }
  if (stages.empty())
    stages.push_back({Kind::Grid, {}});

  auto setLaunch = [&](gpu::GPUFuncOp gpuFunc, int64_t grid, int64_t threads,
                       int64_t sharedBytes) {
    OpBuilder b(gpuFunc);
    gpuFunc.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    gpuFunc.setKnownGridSizeAttr(
        b.getDenseI32ArrayAttr({int32_t(grid), 1, 1}));
    gpuFunc->setAttr(FlowDialect::getGridAttrName(),
                     b.getDenseI64ArrayAttr({grid, 1, 1}));
    gpuFunc->setAttr(FlowDialect::getBlockAttrName(),
                     b.getDenseI64ArrayAttr({threads, 1, 1}));
    gpuFunc->setAttr(FlowDialect::getSharedBytesAttrName(),
                     b.getI64IntegerAttr(sharedBytes));
  };

  // Scratch buffers side by side, 256-byte aligned.
  SmallVector<int64_t> offsets;
  int64_t scratchBytes = 0;
  for (Operation *alloc : scratch) {
    auto type = cast<MemRefType>(alloc->getResult(0).getType());
    offsets.push_back(scratchBytes);
    int64_t bytes = type.getNumElements() * elementBytes(type.getElementType());
    scratchBytes += (bytes + 255) / 256 * 256;
  }
  bool staged = stages.size() > 1 || !scratch.empty();
  for (auto [i, stage] : llvm::enumerate(stages)) {
    std::string stageName =
        staged ? (name + "_s" + Twine(i)).str() : name.str();
    gpu::GPUFuncOp gpuFunc = cloneKernel(
        func, stageName, scratch,
        [&](Operation *op) { return llvm::is_contained(stage.ops, op); },
        gpuModule);
    Block &body = gpuFunc.getBody().front();
    int64_t grid = 1, threads = blockSize, sharedBytes = 0;
    switch (stage.kind) {
    case Kind::Grid:
      grid = mapGrid(gpuFunc, mapper);
      break;
    case Kind::Rows:
      if (failed(mapRows(gpuFunc, *body.getOps<scf::ForallOp>().begin(),
                         mapper, grid, threads, sharedBytes)))
        return failure();
      break;
    case Kind::Serial:
      if (failed(mapSerial(gpuFunc)))
        return failure();
      threads = 1;
      break;
    }
    setLaunch(gpuFunc, grid, threads, sharedBytes);
    if (staged) {
      OpBuilder b(gpuFunc);
      gpuFunc->setAttr(FlowDialect::getStageOfAttrName(),
                       b.getStringAttr(name));
      gpuFunc->setAttr(FlowDialect::getStageAttrName(),
                       b.getI64IntegerAttr(i));
      gpuFunc->setAttr(FlowDialect::getScratchOffsetsAttrName(),
                       b.getDenseI64ArrayAttr(offsets));
      gpuFunc->setAttr(FlowDialect::getScratchBytesAttrName(),
                       b.getI64IntegerAttr(scratchBytes));
    }
  }
  func.erase();
  return success();
}

LogicalResult MapKernelsToGpuPass::mapSerial(gpu::GPUFuncOp gpuFunc) {
  // Its copies and other linalg ops become loops in the one thread; its
  // buffers, private memory of that thread.
  gpuFunc.walk([](memref::CopyOp op) {
    OpBuilder b(op);
    linalg::CopyOp::create(b, op.getLoc(), op.getSource(), op.getTarget());
    op.erase();
  });
  IRRewriter rewriter(gpuFunc.getContext());
  SmallVector<linalg::LinalgOp> linalgOps;
  gpuFunc.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
  for (linalg::LinalgOp op : linalgOps) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return refuse(gpuFunc.getName(), op, "its loops cannot be generated");
    rewriter.eraseOp(op);
  }
  SmallVector<memref::AllocOp> allocs;
  gpuFunc.walk([&](memref::AllocOp op) { allocs.push_back(op); });
  for (memref::AllocOp alloc : allocs) {
    if (!alloc.getType().hasStaticShape())
      return refuse(gpuFunc.getName(), alloc,
                    "a buffer of a sequential loop has no static shape");
    rewriter.setInsertionPoint(alloc);
    rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType());
  }
  gpuFunc.walk([](memref::DeallocOp op) { op.erase(); });
  return success();
}

void MapKernelsToGpuPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (blockSize < 32 || blockSize > 1024 || blockSize % 32) {
    module.emitError("flow-map-kernels-to-gpu: block-size must be a multiple "
                     "of 32 from 32 to 1024, got ")
        << blockSize;
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> kernels;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (func->hasAttr(FlowDialect::getKernelAttrName()))
      kernels.push_back(func);
  if (kernels.empty())
    return;
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto gpuModule =
      gpu::GPUModuleOp::create(b, module.getLoc(), "flow_kernels");
  bool failedAny = false;
  for (func::FuncOp func : kernels)
    if (failed(mapKernel(func, gpuModule)))
      failedAny = true;
  if (failedAny)
    return signalPassFailure();
  // The constant tables the kernels read (a non-splat constant inside a
  // kernel becomes a memref.global of the host module): a copy of each in
  // the GPU module, which is compiled on its own.
  SymbolTable gpuSymbols(gpuModule);
  OpBuilder gb = OpBuilder::atBlockBegin(gpuModule.getBody());
  WalkResult walk = gpuModule.walk([&](memref::GetGlobalOp get) {
    if (gpuSymbols.lookup(get.getName()))
      return WalkResult::advance();
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        module, get.getNameAttr());
    if (!global) {
      get.emitError("the kernel reads the constant '")
          << get.getName() << "', which the module does not define";
      return WalkResult::interrupt();
    }
    gpuSymbols.insert(gb.clone(*global));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    signalPassFailure();
}

} // namespace
