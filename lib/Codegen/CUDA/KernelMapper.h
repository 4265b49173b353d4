//===- KernelMapper.h - Generic ops onto thread blocks ---------*- C++ -*-===//
//
// Part of the Flow project.
//
// How flow-map-kernels-to-gpu spreads a kernel's linalg.generic ops over
// threads (private to lib/Codegen/CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_LIB_CODEGEN_CUDA_KERNELMAPPER_H
#define FLOW_LIB_CODEGEN_CUDA_KERNELMAPPER_H

#include "flow/Codegen/CUDA/Passes.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <numeric>

namespace mlir {
namespace flow {
namespace gpumap {

/// Shared memory a block may use without opting in to more (bytes).
constexpr int64_t kMaxSharedBytes = 48 * 1024;

/// Shared memory each gpu.all_reduce adds when it is lowered: a buffer of
/// one partial per warp (32 of them; the value is widened to at least 32
/// bits) and its alignment.
inline int64_t allReduceSharedBytes(Type element) {
  int64_t bytes =
      std::max<int64_t>(4, (element.getIntOrFloatBitWidth() + 7) / 8);
  return 32 * bytes + 16;
}

/// Offsets within a buffer are multiples of this many elements when nothing
/// smaller is known: every binding and temporary starts 16-byte aligned.
constexpr int64_t kAlignedBase = int64_t(1) << 20;

inline int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

/// The largest power of two (up to kAlignedBase) that divides the element
/// offset of `memref`'s first element from a 16-byte aligned address, as
/// far as its views show.
inline int64_t offsetAlignment(Value memref) {
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

inline std::optional<Combiner> findCombiner(linalg::GenericOp generic) {
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
          .Case(
              [](arith::MaxSIOp) { return std::make_pair(A::MAXSI, V::MAXSI); })
          .Case(
              [](arith::MinSIOp) { return std::make_pair(A::MINSI, V::MINSI); })
          .Case(
              [](arith::MaxUIOp) { return std::make_pair(A::MAXUI, V::MAXUI); })
          .Case(
              [](arith::MinUIOp) { return std::make_pair(A::MINUI, V::MINUI); })
          .Case([](arith::AndIOp) { return std::make_pair(A::AND, V::AND); })
          .Case([](arith::OrIOp) { return std::make_pair(A::OR, V::OR); })
          .Case([](arith::XOrIOp) { return std::make_pair(A::XOR, V::XOR); })
          .Default(
              [](Operation *) { return std::optional<std::pair<A, V>>(); });
  if (!kinds)
    return std::nullopt;
  return Combiner{op, kinds->first, kinds->second};
}

/// The value that leaves every other unchanged under `kind`.
inline TypedAttr identityOf(gpu::AllReduceOperation kind, Type type) {
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

bool isVectorizableBody(linalg::GenericOp op);

/// Whether `alloc` only gives a shape: every use is a linalg.generic input
/// whose element the body never reads (a pooling window).
bool onlyShapesLoops(Operation *alloc);

/// The memref at the root of `value`'s views.
Value rootBuffer(Value value);

/// Whether `op` reads, at other elements than it writes them or through
/// another operand than its output, what `earlier` (an op before it in the
/// same kernel) wrote: then a grid-wide barrier must come between them. An
/// op may read what an earlier one wrote only as its own output's initial
/// value, element by element in the same order: the same thread wrote it.
bool needsBarrierAfter(linalg::GenericOp earlier, linalg::GenericOp op);

} // namespace gpumap
} // namespace flow
} // namespace mlir

#endif // FLOW_LIB_CODEGEN_CUDA_KERNELMAPPER_H
