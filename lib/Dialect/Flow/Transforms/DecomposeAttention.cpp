//===- DecomposeAttention.cpp - flow.attention as its parts ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_DECOMPOSEATTENTIONPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
struct DecomposeAttentionPass
    : flow::impl::DecomposeAttentionPassBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops) {
      // The causal mask is a constant of the scores' shape.
      if (op.getCausal() && !op.getScoresType().hasStaticShape()) {
        op.emitOpError("causal attention over a symbolic sequence length "
                       "cannot be expanded yet: its mask is a constant of "
                       "static shape");
        return signalPassFailure();
      }
      OpBuilder b(op);
      op.getResult().replaceAllUsesWith(expandAttention(b, op));
      op.erase();
      ++numExpanded;
    }
  }
};
} // namespace
