//===- FuseElementwise.cpp - One loop nest per element-wise kernel --------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {

/// linalg-fuse-elementwise-ops' rule: a producer with one user.
bool onlyUser(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  return producer && producer->hasOneUse();
}

/// An element-wise op whose loops are its results' elements: all loops
/// parallel, every result written at the loop indices.
bool isElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumResults() > 0 &&
         op.getNumLoops() == op.getNumParallelLoops() &&
         llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
           return op.getMatchingIndexingMap(&init).isIdentity();
         });
}

/// One op computing what \p first and \p second compute, in one loop nest
/// over their common iteration space, built where \p second is; it
/// replaces both.
void merge(RewriterBase &rewriter, linalg::GenericOp first,
           linalg::GenericOp second) {
  SmallVector<Value> ins(first.getDpsInputs()), outs(first.getDpsInits());
  llvm::append_range(ins, second.getDpsInputs());
  llvm::append_range(outs, second.getDpsInits());
  SmallVector<AffineMap> maps;
  for (linalg::GenericOp op : {first, second})
    for (OpOperand *in : op.getDpsInputOperands())
      maps.push_back(op.getMatchingIndexingMap(in));
  for (linalg::GenericOp op : {first, second})
    for (OpOperand &init : op.getDpsInitsMutable())
      maps.push_back(op.getMatchingIndexingMap(&init));
  SmallVector<Type> types(first.getResultTypes());
  llvm::append_range(types, second.getResultTypes());
  rewriter.setInsertionPoint(second);
  auto merged = linalg::GenericOp::create(rewriter, second.getLoc(), types,
                                          ins, outs, maps,
                                          first.getIteratorTypesArray());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value v : llvm::concat<Value>(ins, outs)) {
    argTypes.push_back(getElementTypeOrSelf(v.getType()));
    argLocs.push_back(v.getLoc());
  }
  Block *body = rewriter.createBlock(&merged.getRegion(), {}, argTypes,
                                     argLocs);
  // Block arguments: the inputs of both, then the outputs of both.
  size_t firstIns = first.getNumDpsInputs(), secondIns = second.getNumDpsInputs();
  size_t firstOuts = first.getNumDpsInits();
  auto argsOf = [&](linalg::GenericOp op) {
    bool isFirst = op == first;
    SmallVector<Value> args;
    size_t inStart = isFirst ? 0 : firstIns;
    size_t outStart = firstIns + secondIns + (isFirst ? 0 : firstOuts);
    for (size_t i = 0; i < op.getNumDpsInputs(); ++i)
      args.push_back(body->getArgument(inStart + i));
    for (size_t i = 0; i < op.getNumDpsInits(); ++i)
      args.push_back(body->getArgument(outStart + i));
    return args;
  };
  SmallVector<Value> yielded;
  rewriter.setInsertionPointToEnd(body);
  for (linalg::GenericOp op : {first, second}) {
    IRMapping mapping;
    mapping.map(op.getBody()->getArguments(), argsOf(op));
    for (Operation &inner : op.getBody()->without_terminator())
      rewriter.clone(inner, mapping);
    for (Value v : op.getBody()->getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
  }
  linalg::YieldOp::create(rewriter, second.getLoc(), yielded);
  size_t split = first.getNumResults();
  rewriter.replaceOp(first, merged.getResults().take_front(split));
  rewriter.replaceOp(second, merged.getResults().drop_front(split));
}

/// Merges element-wise ops of \p block with the same iteration space into
/// one, while some pair can be: the earlier one's results must not be read
/// before the later one (the merged op takes the later one's place).
/// Returns whether anything merged.
bool mergeSiblings(RewriterBase &rewriter, Block &block) {
  SmallVector<linalg::GenericOp> ops;
  for (auto op : block.getOps<linalg::GenericOp>())
    if (isElementwise(op))
      ops.push_back(op);
  for (size_t j = 1; j < ops.size(); ++j) {
    SmallVector<int64_t> ranges = ops[j].getStaticLoopRanges();
    if (ShapedType::isDynamicShape(ranges))
      continue;
    for (size_t i = 0; i < j; ++i) {
      if (ops[i].getStaticLoopRanges() != ranges)
        continue;
      bool readBefore = llvm::any_of(ops[i]->getUsers(), [&](Operation *u) {
        Operation *top = block.findAncestorOpInBlock(*u);
        return !top || !ops[j]->isBeforeInBlock(top);
      });
      if (readBefore)
        continue;
      merge(rewriter, ops[i], ops[j]);
      return true;
    }
  }
  return false;
}

bool hasReductions(func::FuncOp kernel) {
  return kernel
      .walk([](linalg::LinalgOp op) -> WalkResult {
        return op.getNumReductionLoops() ? WalkResult::interrupt()
                                         : WalkResult::advance();
      })
      .wasInterrupted();
}

struct FuseElementwisePass
    : flow::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // The patterns of linalg-fuse-elementwise-ops.
    RewritePatternSet set(context);
    linalg::populateElementwiseOpsFusionPatterns(set, onlyUser);
    linalg::populateFoldReshapeOpsByExpansionPatterns(set, onlyUser);
    tensor::populateBubbleUpExpandShapePatterns(set);
    affine::AffineApplyOp::getCanonicalizationPatterns(set, context);
    linalg::GenericOp::getCanonicalizationPatterns(set, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(set, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(set, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(set);
    linalg::populateConstantFoldLinalgOperations(set, onlyUser);
    FrozenRewritePatternSet patterns(std::move(set));
    IRRewriter rewriter(context);
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (kernel.isExternal())
        continue;
      // Fuse; merge what is left side by side over the same elements
      // (kernels with reductions are left to flow-tile-rows); a producer
      // the merged op reads is then its only reader: fuse again.
      while (true) {
        (void)applyPatternsGreedily(
            kernel, patterns, GreedyRewriteConfig().setUseTopDownTraversal());
        if (hasReductions(kernel))
          break;
        bool merged = false;
        for (Block &block : kernel.getBody())
          while (mergeSiblings(rewriter, block))
            merged = true;
        if (!merged)
          break;
      }
    }
  }
};

} // namespace
