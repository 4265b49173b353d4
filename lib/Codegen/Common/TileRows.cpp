//===- TileRows.cpp - Kernels with reductions, one row at a time ----------===//
//
// Part of the Flow project.
//
// `flow-tile-rows` tiles a kernel's result by rows and fuses its producers
// into the tile (KernelScratch.cpp then gives the tile's temporaries one
// buffer per workgroup). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_TILEROWSPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {

/// The first dimension of `op`'s loops that a reduction combines, when
/// they are its trailing loops and its first input is read as the loops
/// are (an identity map); nullopt otherwise.
std::optional<unsigned> firstReducedDim(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned first = iterators.size();
  while (first > 0 && iterators[first - 1] == utils::IteratorType::reduction)
    --first;
  for (unsigned d = 0; d < first; ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      return std::nullopt;
  if (op.getNumDpsInputs() == 0 ||
      !op.getMatchingIndexingMap(op.getDpsInputOperand(0)).isIdentity())
    return std::nullopt;
  return first;
}

/// Rows for a kernel with a reduction over trailing dimensions: the first
/// dimension any reduction combines (every op of `rank` loops).
std::optional<unsigned> reducedRows(func::FuncOp kernel,
                                    linalg::GenericOp root) {
  if (root.getNumParallelLoops() != root.getNumLoops() ||
      !root.getMatchingIndexingMap(root.getDpsInitOperand(0)).isIdentity())
    return std::nullopt;
  unsigned rank = root.getNumLoops();
  std::optional<unsigned> rowEnd;
  bool fits = true;
  kernel.walk([&](linalg::LinalgOp op) {
    if (op.getNumReductionLoops() == 0)
      return;
    std::optional<unsigned> first = firstReducedDim(op);
    if (!first || op.getNumLoops() != rank) {
      fits = false;
      return;
    }
    rowEnd = rowEnd ? std::min(*rowEnd, *first) : *first;
  });
  if (!fits)
    return std::nullopt;
  return rowEnd;
}

/// Rows for a kernel that pads its input (a pooling window, a convolution
/// in a kernel): the leading dimensions that every op runs in parallel and
/// indexes as itself in every operand, and that no pad widens. Untiled,
/// the padded copy of the whole input is a buffer of its own (3.3 MB for
/// ResNet-50's max pooling, allocated by every workgroup); by rows it is
/// one row's plane.
std::optional<unsigned> paddedRows(func::FuncOp kernel) {
  bool pads = false;
  unsigned lead = ~0u;
  kernel.walk([&](Operation *op) {
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      pads = true;
      unsigned unpadded = 0;
      for (auto [low, high] :
           llvm::zip(pad.getStaticLow(), pad.getStaticHigh())) {
        if (low != 0 || high != 0)
          break;
        ++unpadded;
      }
      lead = std::min(lead, unpadded);
      return;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp)
      return;
    SmallVector<utils::IteratorType> iterators =
        linalgOp.getIteratorTypesArray();
    // Dimension n is a row dimension of this op if every operand that
    // depends on it indexes it as itself, in position n (an operand that
    // does not, a pooling window's shape, is the same for every row).
    unsigned n = 0;
    while (n < iterators.size() && n < lead &&
           iterators[n] == utils::IteratorType::parallel) {
      AffineExpr dim = getAffineDimExpr(n, op->getContext());
      bool same = llvm::all_of(
          linalgOp.getIndexingMapsArray(), [&](AffineMap map) {
            for (auto [i, result] : llvm::enumerate(map.getResults()))
              if (result.isFunctionOfDim(n) && (i != n || result != dim))
                return false;
            return true;
          });
      if (!same)
        break;
      ++n;
    }
    lead = std::min(lead, n);
  });
  if (!pads || lead == ~0u || lead == 0)
    return std::nullopt;
  return lead;
}

/// A returned value, or what folding unit dimensions reshaped into it.
Value unfolded(Value value) {
  if (auto expand = value.getDefiningOp<tensor::ExpandShapeOp>())
    return expand.getSrc();
  return value;
}

/// Tiles `kernel` by rows if it has the shape the pass takes; true if so.
/// The tile's root is the op of the last result; the other results must be
/// its producers (a layer norm's output and its cast to bf16), which the
/// tile loop then yields too.
bool tileFolded(func::FuncOp kernel) {
  auto ret = dyn_cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  if (!ret || ret.getNumOperands() == 0)
    return false;
  SmallVector<Value> results;
  for (Value operand : ret.getOperands())
    results.push_back(unfolded(operand));
  auto root = results.back().getDefiningOp<linalg::GenericOp>();
  if (!root || root.getNumDpsInits() != 1)
    return false;
  for (Value result : ArrayRef(results).drop_back())
    if (!result.getDefiningOp<linalg::GenericOp>() || result == results.back())
      return false;
  unsigned rank = root.getNumLoops();
  // Where rows end.
  std::optional<unsigned> rowEnd = reducedRows(kernel, root);
  if (!rowEnd)
    rowEnd = paddedRows(kernel);
  if (!rowEnd || *rowEnd == 0)
    return false;
  SmallVector<int64_t> shape = root.getStaticLoopRanges();
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return false;
  int64_t rows = 1;
  for (unsigned d = 0; d < *rowEnd; ++d)
    rows *= shape[d];
  if (rows <= 1)
    return false;

  IRRewriter rewriter(kernel.getContext());
  rewriter.setInsertionPoint(root);
  SmallVector<OpFoldResult> sizes;
  for (unsigned d = 0; d < rank; ++d)
    sizes.push_back(rewriter.getIndexAttr(d < *rowEnd ? 1 : 0));
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(sizes).setLoopType(
      scf::SCFTilingOptions::LoopType::ForallOp);
  // A producer that is also a result is yielded by the tile loop.
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer, bool)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        scf::SCFTileAndFuseOptions::ControlFnResult control;
        control.yieldProducerReplacement =
            llvm::is_contained(results, Value(producer));
        return control;
      });
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(root.getOperation()), options);
  if (failed(tiled))
    return false;
  SmallVector<std::pair<Value, Value>> replaced;
  for (Value result : results) {
    auto it = tiled->replacements.find(result);
    if (it == tiled->replacements.end())
      return false; // a result that is not the root's producer
    replaced.push_back({result, it->second});
  }
  for (auto [result, replacement] : replaced)
    rewriter.replaceAllUsesWith(result, replacement);
  // A result's reshape back to the kernel's shape may have stood between
  // its producer and the root: it now reads the tile loop, so it follows.
  for (Value operand : ret.getOperands())
    if (auto expand = operand.getDefiningOp<tensor::ExpandShapeOp>())
      rewriter.moveOpBefore(expand, ret);
  // Every producer must have joined the tile: one left outside (a
  // concatenation's inserts, which tiling cannot fuse) would be a loop of
  // its own whose rows the tile reads at an offset, and the kernel could
  // no longer be split over workgroups. Then the kernel stays as it was.
  (void)runRegionDCE(rewriter, kernel->getRegions());
  return llvm::all_of(kernel.getBody().front(), [](Operation &op) {
    // Reshapes are views (of an argument, or of an empty tensor: a fused
    // reduction's initial value); what matters is that no computation is
    // left outside the tile.
    return isa<scf::ForallOp, func::ReturnOp, arith::ConstantOp,
               tensor::EmptyOp, tensor::CollapseShapeOp,
               tensor::ExpandShapeOp>(op);
  });
}

/// Tiles a copy of `kernel` whose reductions keep no dimensions of one
/// (a softmax's row maximum is 4x6, not 4x6x1: an index that is always 0
/// is not one tiling can follow) and takes its body if that worked.
/// A kernel that pads is tiled as it is: its rows are leading dimensions
/// the pad leaves alone, unit ones included (folding them would reshape
/// the result, which then could not be written in place).
bool tileKernel(func::FuncOp kernel) {
  bool reduces = false, pads = false;
  kernel.walk([&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      reduces |= linalgOp.getNumReductionLoops() > 0;
    pads |= isa<tensor::PadOp>(op);
  });
  if (!reduces && !pads)
    return false;
  auto copy = cast<func::FuncOp>(kernel->clone());
  RewritePatternSet patterns(kernel.getContext());
  linalg::ControlDropUnitDims control;
  linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
  bool tiled =
      (pads || succeeded(applyPatternsGreedily(copy, std::move(patterns)))) &&
      tileFolded(copy);
  if (tiled)
    kernel.getBody().takeBody(copy.getBody());
  copy.erase();
  return tiled;
}

struct TileRowsPass : flow::impl::TileRowsPassBase<TileRowsPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<func::FuncOp>())
      if (kernel->hasAttr(flow::FlowDialect::getKernelAttrName()) &&
          !kernel.isExternal() && tileKernel(kernel))
        ++numTiled;
  }
};

} // namespace
