//===- FlowToLinalg.cpp - Lower flow ops to linalg on tensors -------------===//
//
// Part of the Flow project.
//
// Every flow compute op becomes upstream ops on tensors. Elementwise ops and
// reductions are linalg.generic ops whose indexing maps implement numpy
// broadcasting; windows (convolution, pooling) are linalg.generic ops over a
// padded input; data movement uses tensor ops. f16 and bf16 are computed in
// f32 and rounded once at the end of each op.
//
// Unsigned integers (`uiN`) become signless `iN` before the patterns run
// (arith computes on signless integers); each flow op that read or wrote an
// unsigned type is marked first, so its lowering picks the unsigned forms
// (division, comparisons, maximum and minimum, widening, conversion).
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CONVERTFLOWTOLINALGPASS
#include "flow/Conversion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::tolinalg;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertFlowToLinalgPass
    : flow::impl::ConvertFlowToLinalgPassBase<ConvertFlowToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    makeSignless(module);
    // Ops with no single-device lowering: report every one, by name.
    bool unsupported = false;
    module.walk([&](Operation *op) {
      if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
              BroadcastOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' has no single-device lowering: collectives "
                           "need a compile for a device mesh";
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    target.addIllegalDialect<FlowDialect>();
    target.addLegalOp<MeshOp>();
    RewritePatternSet patterns(&getContext());
    populateFlowToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Meshes nothing refers to any more are dropped.
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      if (SymbolTable::symbolKnownUseEmpty(mesh, module))
        mesh.erase();
  }
};

} // namespace

void mlir::flow::populateFlowToLinalgPatterns(RewritePatternSet &patterns) {
  populateElementwiseLowerings(patterns);
  populateContractionLowerings(patterns);
  populateReductionLowerings(patterns);
  populateDataMovementLowerings(patterns);
}
