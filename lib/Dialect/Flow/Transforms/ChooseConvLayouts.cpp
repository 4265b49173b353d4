//===- ChooseConvLayouts.cpp - Blocked buffers between convolutions -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CHOOSECONVLAYOUTSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// True if every use of `buffer` is a convolution's input, residual or
/// output (never its filter or bias).
static bool onlyConvolutionsTouch(Value buffer) {
  for (OpOperand &use : buffer.getUses()) {
    auto conv = dyn_cast<HostConvOp>(use.getOwner());
    if (!conv || (use.get() != conv.getInput() &&
                  use.get() != conv.getResidual() &&
                  use.get() != conv.getOut()))
      return false;
    if (use.get() == conv.getFilter() || use.get() == conv.getBias())
      return false;
  }
  return !buffer.use_empty();
}

namespace {
struct ChooseConvLayoutsPass
    : flow::impl::ChooseConvLayoutsPassBase<ChooseConvLayoutsPass> {
  void runOnOperation() override {
    llvm::DenseSet<Value> blocked;
    getOperation().walk([&](HostAllocOp alloc) {
      MemRefType type = alloc.getType();
      if (type.getRank() == 4 && type.getElementType().isF32() &&
          type.getDimSize(1) % 16 == 0 && onlyConvolutionsTouch(alloc)) {
        blocked.insert(alloc.getResult());
        ++numBlocked;
      }
    });
    getOperation().walk([&](HostConvOp conv) {
      conv.setBlockedInput(blocked.contains(conv.getInput()));
      conv.setBlockedResidual(conv.getResidual() &&
                              blocked.contains(conv.getResidual()));
      conv.setBlockedOutput(blocked.contains(conv.getOut()));
    });
    // Blocked buffers that only bf16 convolutions touch hold bf16: they
    // read it rounded to bf16 anyway. Set after the marks above, which the
    // verifier asks of a bf16 buffer.
    for (Value buffer : blocked) {
      if (!llvm::all_of(buffer.getUsers(), [](Operation *user) {
            return cast<HostConvOp>(user).getBf16();
          }))
        continue;
      auto type = cast<MemRefType>(buffer.getType());
      buffer.setType(MemRefType::get(type.getShape(),
                                     BFloat16Type::get(type.getContext())));
      ++numBf16;
    }
  }
};
} // namespace
