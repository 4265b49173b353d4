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
