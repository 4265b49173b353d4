//===- ChooseConvLayouts.cpp - Blocked buffers between convolutions -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "flow/runtime/rules/Layout.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CHOOSECONVLAYOUTSPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// True if every use of `buffer` is a convolution's input, residual or
/// output (never its filter or bias), or a library pool's input or output.
static bool onlyLibraryTouches(Value buffer) {
  for (OpOperand &use : buffer.getUses()) {
    if (isa<HostMaxPoolOp, HostAvgPoolOp>(use.getOwner()))
      continue;
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
    : mlir::flow::impl::ChooseConvLayoutsPassBase<ChooseConvLayoutsPass> {
  void runOnOperation() override {
    llvm::DenseSet<Value> blocked;
    getOperation().walk([&](HostAllocOp alloc) {
      MemRefType type = alloc.getType();
      if (type.getRank() == 4 && type.getElementType().isF32() &&
          ::flow::rules::blockable(type.getDimSize(1)) &&
          onlyLibraryTouches(alloc)) {
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
    auto markPool = [&](auto pool) {
      pool.setBlockedInput(blocked.contains(pool.getInput()));
      pool.setBlockedOutput(blocked.contains(pool.getOut()));
    };
    getOperation().walk([&](HostMaxPoolOp pool) { markPool(pool); });
    getOperation().walk([&](HostAvgPoolOp pool) { markPool(pool); });
    // Blocked buffers that bf16 convolutions use, and nothing else but
    // pools, hold bf16: the convolutions read it rounded to bf16 anyway
    // (a max pool's maximum of bf16 values is one of them; an average
    // held in bf16 is rounded where the convolution would round it). Set after the
    // marks above, which the verifiers ask of a bf16 buffer.
    for (Value buffer : blocked) {
      bool bf16Conv = false, onlyBf16 = true;
      for (Operation *user : buffer.getUsers())
        if (auto conv = dyn_cast<HostConvOp>(user)) {
          bf16Conv = true;
          onlyBf16 = onlyBf16 && conv.getBf16();
        }
      if (!bf16Conv || !onlyBf16)
        continue;
      auto type = cast<MemRefType>(buffer.getType());
      buffer.setType(MemRefType::get(type.getShape(),
                                     BFloat16Type::get(type.getContext())));
      ++numBf16;
    }
  }
};
} // namespace
