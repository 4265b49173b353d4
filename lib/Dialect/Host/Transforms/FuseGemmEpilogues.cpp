//===- FuseGemmEpilogues.cpp - Element-wise kernels as GEMM epilogues -----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUESPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
struct FuseGemmEpiloguesPass
    : flow::impl::FuseGemmEpiloguesPassBase<FuseGemmEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    module.walk([&](HostDispatchOp dispatch) {
      if (dispatch.getGemmEpilogue())
        return;
      auto gemm =
          dyn_cast_or_null<HostGemmOp>(previousHostCommand(dispatch));
      if (!gemm)
        return;
      int64_t m = gemm.getM();
      if (m < 2 || gemm.getOut().getType().getNumElements() != m * gemm.getN())
        return;
      std::optional<ArrayRef<int64_t>> inPlace =
          dispatch.getInPlaceOperands();
      Value result = bufferRoot(gemm.getOut());
      if (!inPlace || llvm::none_of(*inPlace, [&](int64_t i) {
            return bufferRoot(dispatch.getInputs()[i]) == result;
          }))
        return;
      auto kernel = symbols.lookup<func::FuncOp>(dispatch.getKernel());
      auto rows = kernel ? kernel->getAttrOfType<IntegerAttr>(
                               FlowDialect::getWorkgroupExtentAttrName())
                         : IntegerAttr();
      if (!rows || rows.getInt() != m)
        return;
      dispatch.setGemmEpilogue(true);
      ++numEpilogues;
    });
  }
};
} // namespace
