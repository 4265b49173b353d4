//===- ReassociateReductions.cpp - reductions the vectorizer can take -----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_REASSOCIATEREDUCTIONSPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {

/// True if \p op can fold an element into a floating-point accumulator.
bool isFloatCombiner(Operation *op) {
  return isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp,
             arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(op);
}

struct ReassociateReductionsPass
    : flow::impl::ReassociateReductionsPassBase<ReassociateReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp generic) {
      if (generic.getNumReductionLoops() == 0)
        return;
      Block *body = generic.getBody();
      for (OpOperand &init : generic.getDpsInitsMutable()) {
        BlockArgument accumulator = generic.getMatchingBlockArgument(&init);
        for (Operation *user : accumulator.getUsers()) {
          if (user->getBlock() != body || !isFloatCombiner(user))
            continue;
          auto fastMath = cast<arith::ArithFastMathInterface>(user);
          arith::FastMathFlags flags =
              fastMath.getFastMathFlagsAttr().getValue() |
              arith::FastMathFlags::reassoc;
          user->setAttr(fastMath.getFastMathAttrName(),
                        arith::FastMathFlagsAttr::get(user->getContext(),
                                                      flags));
        }
      }
    });
  }
};

} // namespace
