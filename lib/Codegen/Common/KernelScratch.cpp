//===- KernelScratch.cpp - A tile's temporaries, one buffer each ---------===//
//
// Part of the Flow project.
//
// `flow-kernel-scratch` gives the temporaries of a tiled kernel (after
// flow-tile-rows) one buffer per workgroup. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_KERNELSCRATCHPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {

/// Scratch buffers of at most this many bytes go on the stack.
constexpr int64_t kStackScratchBytes = 64 * 1024;

struct KernelScratchPass
    : flow::impl::KernelScratchPassBase<KernelScratchPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(flow::FlowDialect::getKernelAttrName()) ||
          kernel.isExternal())
        continue;
      Block &entry = kernel.getBody().front();
      SmallVector<memref::AllocOp> nested;
      kernel.walk([&](memref::AllocOp alloc) {
        if (alloc->getBlock() != &entry && alloc.getType().hasStaticShape() &&
            alloc.getDynamicSizes().empty() &&
            alloc.getSymbolOperands().empty())
          nested.push_back(alloc);
      });
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      for (memref::AllocOp alloc : nested) {
        MemRefType type = alloc.getType();
        int64_t bytes = mlir::flow::storageBytes(type);
        Operation *moved;
        if (bytes <= kStackScratchBytes) {
          auto stack = memref::AllocaOp::create(b, alloc.getLoc(), type,
                                                alloc.getAlignmentAttr());
          alloc.replaceAllUsesWith(stack.getResult());
          alloc.erase();
          moved = stack;
        } else {
          alloc->moveBefore(&entry, entry.begin());
          moved = alloc;
        }
        moved->setAttr(flow::FlowDialect::getScratchAttrName(),
                       b.getUnitAttr());
      }
    }
  }
};

} // namespace
