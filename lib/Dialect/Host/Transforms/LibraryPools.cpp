//===- LibraryPools.cpp - Max pooling next to library convolutions --------===//
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
#define GEN_PASS_DEF_LIBRARYPOOLSPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// The pool `kernel` computes when it is one f32 flow.max_pool2d or
/// flow.avg_pool2d of its only argument, returned; null otherwise.
static Operation *onlyPool(func::FuncOp kernel) {
  // (A kernel over symbolic rows takes the call's sizes as well, last.)
  unsigned arguments =
      kernel->hasAttr(FlowDialect::getRowExtentAttrName()) ? 2 : 1;
  if (kernel.isExternal() || !kernel.getBody().hasOneBlock() ||
      kernel.getNumArguments() != arguments || kernel.getNumResults() != 1)
    return nullptr;
  Block &body = kernel.getBody().front();
  if (body.getOperations().size() != 2)
    return nullptr;
  Operation *pool = &body.front();
  auto ret = dyn_cast<func::ReturnOp>(body.back());
  if (!isa<MaxPool2dOp, AvgPool2dOp>(pool) || !ret ||
      pool->getOperand(0) != body.getArgument(0) ||
      ret.getOperand(0) != pool->getResult(0) ||
      !cast<RankedTensorType>(pool->getResult(0).getType())
           .getElementType()
           .isF32())
    return nullptr;
  return pool;
}

/// True if a library convolution or pool writes `buffer`.
static bool libraryWrites(Value buffer) {
  return llvm::any_of(buffer.getUsers(), [&](Operation *user) {
    if (auto conv = dyn_cast<HostConvOp>(user))
      return conv.getOut() == buffer;
    if (auto pool = dyn_cast<HostMaxPoolOp>(user))
      return pool.getOut() == buffer;
    if (auto pool = dyn_cast<HostAvgPoolOp>(user))
      return pool.getOut() == buffer;
    return false;
  });
}

/// True if a library convolution reads `buffer` as its input.
static bool convolutionReads(Value buffer) {
  return llvm::any_of(buffer.getUsers(), [&](Operation *user) {
    auto conv = dyn_cast<HostConvOp>(user);
    return conv && conv.getInput() == buffer;
  });
}

namespace {
struct LibraryPoolsPass
    : flow::impl::LibraryPoolsPassBase<LibraryPoolsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::SetVector<func::FuncOp> replaced;
    // In program order: a pool after a pool after a convolution follows.
    SmallVector<HostDispatchOp> dispatches;
    module.walk([&](HostDispatchOp d) { dispatches.push_back(d); });
    for (HostDispatchOp dispatch : dispatches) {
      auto kernel = symbols.lookup<func::FuncOp>(dispatch.getKernel());
      // A kernel over symbolic rows takes the call's sizes last: the pool
      // counts the batch instead.
      auto rows = kernel ? kernel->getAttrOfType<StringAttr>(
                               FlowDialect::getRowExtentAttrName())
                         : StringAttr();
      size_t inputs = dispatch.getInputs().size() - (rows ? 1 : 0);
      if (dispatch.getGemmEpilogue() || inputs != 1 ||
          dispatch.getOutputs().size() != 1)
        continue;
      Operation *pool = kernel ? onlyPool(kernel) : nullptr;
      if (!pool)
        continue;
      Value input = dispatch.getInputs()[0], out = dispatch.getOutputs()[0];
      if (!libraryWrites(input) && !convolutionReads(out))
        continue;
      OpBuilder b(dispatch);
      Operation *library = nullptr;
      if (auto max = dyn_cast<MaxPool2dOp>(pool))
        library = HostMaxPoolOp::create(
            b, dispatch.getLoc(), input, out, max.getKernelAttr(),
            max.getStridesAttr(), max.getPaddingAttr(), max.getDilationsAttr(),
            /*blocked_input=*/UnitAttr(),
            /*blocked_output=*/UnitAttr());
      else if (auto avg = dyn_cast<AvgPool2dOp>(pool))
        library = HostAvgPoolOp::create(
            b, dispatch.getLoc(), input, out, avg.getKernelAttr(),
            avg.getStridesAttr(), avg.getPaddingAttr(),
            avg.getCountIncludePadAttr(),
            /*blocked_input=*/UnitAttr(),
            /*blocked_output=*/UnitAttr());
      if (rows)
        library->setAttr(FlowDialect::getRowsAttrName(), rows);
      dispatch.erase();
      replaced.insert(kernel);
      ++numPools;
    }
    // Kernels no dispatch runs any more are not compiled.
    for (func::FuncOp kernel : replaced)
      if (SymbolTable::symbolKnownUseEmpty(kernel, module))
        kernel.erase();
  }
};
} // namespace
