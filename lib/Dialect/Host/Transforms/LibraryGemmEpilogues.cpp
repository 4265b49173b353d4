//===- LibraryGemmEpilogues.cpp - Bias and activation into GEMMs ----------===//
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
#define GEN_PASS_DEF_LIBRARYGEMMEPILOGUESPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
/// A kernel that is a GEMM library epilogue of its input `result`:
/// `act(x + bias)`, `act(x)` or `x + bias`.
struct Epilogue {
  std::optional<unsigned> bias;
  GemmActivation activation = GemmActivation::none;
};
} // namespace

/// Matches `kernel` as `[add a 1-D bias of `columns` values of type
/// `element` (the GEMM result's)] then [relu | gelu tanh]` of its input
/// `result` (at least one of them).
static std::optional<Epilogue> matchEpilogue(func::FuncOp kernel,
                                             unsigned result, int64_t columns,
                                             Type element) {
  Epilogue e;
  bool matched = walkEpilogueChain(kernel, result, [&](Operation &op,
                                                       Value current) {
    if (e.activation != GemmActivation::none)
      return false; // the activation comes last
    if (auto add = dyn_cast<AddOp>(op); add && !e.bias) {
      BlockArgument arg = otherAddend(add, current, result);
      auto type = arg ? dyn_cast<RankedTensorType>(arg.getType()) : nullptr;
      if (!type || type.getRank() != 1 || type.getDimSize(0) != columns ||
          type.getElementType() != element)
        return false;
      e.bias = arg.getArgNumber();
      return true;
    }
    if (isa<ReluOp>(op)) {
      e.activation = GemmActivation::relu;
      return true;
    }
    auto gelu = dyn_cast<GeluOp>(op);
    if (!gelu || gelu.getApproximate() != GeluApproximation::tanh)
      return false;
    e.activation = GemmActivation::gelu_tanh;
    return true;
  });
  return matched ? std::optional<Epilogue>(e) : std::nullopt;
}

namespace {
struct LibraryGemmEpiloguesPass
    : flow::impl::LibraryGemmEpiloguesPassBase<LibraryGemmEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<HostGemmOp> gemms;
    llvm::SetVector<Operation *> fusedKernels;
    module.walk([&](HostGemmOp gemm) { gemms.push_back(gemm); });
    for (HostGemmOp gemm : gemms) {
      unsigned index = 0;
      // An empty product (k = 0) is only cleared by the runtime, never
      // handed to the library: its epilogue stays a kernel.
      HostDispatchOp dispatch =
          gemm.hasEpilogue() || gemm.getK() == 0
              ? nullptr
              : soleEpilogueReader(gemm, gemm.getOut(), index);
      auto kernel = dispatch
                        ? symbols.lookup<func::FuncOp>(dispatch.getKernel())
                        : nullptr;
      std::optional<Epilogue> e =
          kernel ? matchEpilogue(kernel, index, gemm.getN(),
                                 gemm.getOut().getType().getElementType())
             : std::nullopt;
      if (!e)
        continue;
      if (e->bias)
        gemm.getBiasMutable().assign(dispatch.getInputs()[*e->bias]);
      gemm.setActivation(e->activation);
      fusedKernels.insert(kernel);
      foldEpilogueDispatch(gemm, gemm.getOutMutable(), dispatch);
      ++numFused;
    }
    // Kernels no dispatch runs any more are not compiled.
    eraseUnusedKernels(module, fusedKernels.getArrayRef());
  }
};
} // namespace
