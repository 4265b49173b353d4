//===- FuseConvEpilogues.cpp - Kernels into library convolutions ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FUSECONVEPILOGUESPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
/// What a kernel does to one of its inputs, when it is a convolution
/// epilogue the library runs: `x (+ residual) (then relu)`.
struct Epilogue {
  /// The kernel input that is the convolution's result.
  unsigned result;
  /// The kernel input added to it, if any.
  std::optional<unsigned> residual;
  bool relu = false;
};
} // namespace

/// Matches `kernel` (one result) as an epilogue of its input `result`.
static std::optional<Epilogue> matchEpilogue(func::FuncOp kernel,
                                             unsigned result) {
  if (kernel.isExternal() || !kernel.getBody().hasOneBlock() ||
      kernel.getNumResults() != 1)
    return std::nullopt;
  Block &body = kernel.getBody().front();
  Epilogue e{result, std::nullopt, false};
  Value current = body.getArgument(result);
  if (!current.hasOneUse())
    return std::nullopt;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getOperand(0) != current || current == body.getArgument(result))
        return std::nullopt;
      return e;
    }
    // Each op continues the chain, once, in this order: add, relu.
    if (op.getNumResults() != 1 || !op.getResult(0).hasOneUse() ||
        op.getResult(0).getType() != current.getType())
      return std::nullopt;
    if (auto add = dyn_cast<AddOp>(op); add && !e.residual && !e.relu) {
      Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
      auto arg = dyn_cast<BlockArgument>(other);
      if ((add.getLhs() != current && add.getRhs() != current) || !arg ||
          arg.getOwner() != &body || arg.getType() != current.getType() ||
          arg.getArgNumber() == result)
        return std::nullopt;
      e.residual = arg.getArgNumber();
    } else if (auto relu = dyn_cast<ReluOp>(op); relu && !e.relu) {
      if (relu.getOperand() != current)
        return std::nullopt;
      e.relu = true;
    } else {
      return std::nullopt;
    }
    current = op.getResult(0);
  }
  return std::nullopt;
}

namespace {
struct FuseConvEpiloguesPass
    : flow::impl::FuseConvEpiloguesPassBase<FuseConvEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<HostConvOp> convs;
    llvm::SetVector<func::FuncOp> fusedKernels;
    module.walk([&](HostConvOp conv) { convs.push_back(conv); });
    for (HostConvOp conv : convs) {
      if (conv.getRelu() || conv.getResidual())
        continue;
      auto alloc = conv.getOut().getDefiningOp<HostAllocOp>();
      if (!alloc)
        continue;
      // Exactly one other user: the kernel, reading it once.
      HostDispatchOp dispatch;
      unsigned uses = 0;
      for (OpOperand &use : alloc.getResult().getUses()) {
        if (use.getOwner() == conv)
          continue;
        dispatch = dyn_cast<HostDispatchOp>(use.getOwner());
        ++uses;
      }
      if (uses != 1 || !dispatch || dispatch.getOutputs().size() != 1 ||
          dispatch->getBlock() != conv->getBlock() ||
          dispatch.getOutputs()[0].getType() != conv.getOut().getType())
        continue;
      auto kernel = symbols.lookup<func::FuncOp>(dispatch.getKernel());
      if (!kernel)
        continue;
      unsigned index = 0;
      for (auto [i, v] : llvm::enumerate(dispatch.getInputs()))
        if (v == alloc.getResult())
          index = i;
      std::optional<Epilogue> e = matchEpilogue(kernel, index);
      if (!e)
        continue;
      // The convolution runs where the kernel ran: its operands were
      // written before it and are not written again (a schedule before
      // memory planning writes each buffer once), and the residual is
      // ready there.
      conv->moveBefore(dispatch);
      conv.getOutMutable().assign(dispatch.getOutputs()[0]);
      if (e->residual)
        conv.getResidualMutable().assign(dispatch.getInputs()[*e->residual]);
      conv.setRelu(e->relu);
      fusedKernels.insert(kernel);
      dispatch.erase();
      alloc.erase();
      ++numFused;
    }
    // Kernels no dispatch runs any more are not compiled.
    for (func::FuncOp kernel : fusedKernels)
      if (SymbolTable::symbolKnownUseEmpty(kernel, module))
        kernel.erase();
  }
};
} // namespace
