//===- LibraryGemmEpilogues.cpp - Bias and activation into GEMMs ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_LIBRARYGEMMEPILOGUESPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
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

/// Matches `kernel` as `[add a 1-D f32 bias of `columns` values] then
/// [relu | gelu tanh]` of its input `result` (at least one of them).
static std::optional<Epilogue> matchEpilogue(func::FuncOp kernel,
                                             unsigned result,
                                             int64_t columns) {
  if (kernel.isExternal() || !kernel.getBody().hasOneBlock() ||
      kernel.getNumResults() != 1)
    return std::nullopt;
  Block &body = kernel.getBody().front();
  Value current = body.getArgument(result);
  if (!current.hasOneUse())
    return std::nullopt;
  Epilogue e;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getOperand(0) != current || current == body.getArgument(result))
        return std::nullopt;
      return e;
    }
    if (op.getNumResults() != 1 || !op.getResult(0).hasOneUse() ||
        op.getResult(0).getType() != current.getType())
      return std::nullopt;
    if (auto add = dyn_cast<AddOp>(op);
        add && !e.bias && e.activation == GemmActivation::none) {
      Value other = add.getLhs() == current ? add.getRhs() : add.getLhs();
      auto arg = dyn_cast<BlockArgument>(other);
      auto type = arg ? dyn_cast<RankedTensorType>(arg.getType()) : nullptr;
      if ((add.getLhs() != current && add.getRhs() != current) || !arg ||
          arg.getOwner() != &body || arg.getArgNumber() == result || !type ||
          type.getRank() != 1 || type.getDimSize(0) != columns ||
          !type.getElementType().isF32())
        return std::nullopt;
      e.bias = arg.getArgNumber();
    } else if (isa<ReluOp>(op) && e.activation == GemmActivation::none &&
               op.getOperand(0) == current) {
      e.activation = GemmActivation::relu;
    } else if (auto gelu = dyn_cast<GeluOp>(op);
               gelu && e.activation == GemmActivation::none &&
               gelu.getInput() == current &&
               gelu.getApproximate() == GeluApproximation::tanh) {
      e.activation = GemmActivation::gelu_tanh;
    } else {
      return std::nullopt;
    }
    current = op.getResult(0);
  }
  return std::nullopt;
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
      HostDispatchOp dispatch =
          gemm.hasEpilogue()
              ? nullptr
              : soleEpilogueReader(gemm, gemm.getOut(), index);
      auto kernel = dispatch
                        ? symbols.lookup<func::FuncOp>(dispatch.getKernel())
                        : nullptr;
      std::optional<Epilogue> e =
          kernel ? matchEpilogue(kernel, index, gemm.getN()) : std::nullopt;
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
