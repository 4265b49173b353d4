//===- StripAnnotations.cpp - Drop SBP annotations ------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_STRIPANNOTATIONSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
struct StripAnnotationsPass
    : flow::impl::StripAnnotationsPassBase<StripAnnotationsPass> {
  using StripAnnotationsPassBase::StripAnnotationsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // A device program keeps its mesh: its collectives run over it.
    if (func->hasAttr(FlowDialect::getRanksAttrName()))
      return;
    func.walk([&](AnnotateOp op) {
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
      ++numAnnotationsRemoved;
    });
    if (!stripSignature)
      return;
    StringRef sbpName = FlowDialect::getSbpAttrName();
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.removeArgAttr(i, sbpName);
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.removeResultAttr(i, StringAttr::get(&getContext(), sbpName));
    func->removeAttr(FlowDialect::getMeshAttrName());
  }
};
} // namespace
