//===- FuseConvEpilogues.cpp - Kernels into library convolutions ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FUSECONVEPILOGUESPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
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

/// Matches `kernel` as `[add a same-shape kernel input] then [relu]` of
/// its input `result` (at least one of them).
static std::optional<Epilogue> matchEpilogue(func::FuncOp kernel,
                                             unsigned result) {
  Epilogue e{result, std::nullopt, false};
  bool matched = walkEpilogueChain(kernel, result, [&](Operation &op,
                                                       Value current) {
    // Each op continues the chain, once, in this order: add, relu.
    if (auto add = dyn_cast<AddOp>(op); add && !e.residual && !e.relu) {
      BlockArgument arg = otherAddend(add, current, result);
      if (!arg || arg.getType() != current.getType())
        return false;
      e.residual = arg.getArgNumber();
      return true;
    }
    if (isa<ReluOp>(op) && !e.relu)
      return e.relu = true;
    return false;
  });
  return matched ? std::optional<Epilogue>(e) : std::nullopt;
}

namespace {
struct FuseConvEpiloguesPass
    : flow::impl::FuseConvEpiloguesPassBase<FuseConvEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<HostConvOp> convs;
    llvm::SetVector<Operation *> fusedKernels;
    module.walk([&](HostConvOp conv) { convs.push_back(conv); });
    for (HostConvOp conv : convs) {
      unsigned index = 0;
      HostDispatchOp dispatch =
          conv.getRelu() || conv.getResidual()
              ? nullptr
              : soleEpilogueReader(conv, conv.getOut(), index);
      auto kernel = dispatch
                        ? symbols.lookup<func::FuncOp>(dispatch.getKernel())
                        : nullptr;
      std::optional<Epilogue> e =
          kernel ? matchEpilogue(kernel, index) : std::nullopt;
      if (!e)
        continue;
      if (e->residual)
        conv.getResidualMutable().assign(dispatch.getInputs()[*e->residual]);
      conv.setRelu(e->relu);
      fusedKernels.insert(kernel);
      foldEpilogueDispatch(conv, conv.getOutMutable(), dispatch);
      ++numFused;
    }
    // Kernels no dispatch runs any more are not compiled.
    eraseUnusedKernels(module, fusedKernels.getArrayRef());
  }
};
} // namespace
