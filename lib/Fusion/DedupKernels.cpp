//===- DedupKernels.cpp - One kernel for identical kernels ----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Fusion/Passes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_DEDUPKERNELSPASS
#include "flow/Fusion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// What makes two kernels the same: the function as printed under one
/// name, without the fusion pass's notes (which name the op's place in
/// the program) and without locations.
static std::string kernelKey(func::FuncOp kernel) {
  OwningOpRef<func::FuncOp> copy = kernel.clone();
  copy->setSymName("kernel");
  StringRef note = FlowDialect::getFusionRefusedAttrName();
  copy->walk([&](Operation *op) { op->removeAttr(note); });
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os, OpPrintingFlags().printGenericOpForm(false));
  return text;
}

namespace {
struct DedupKernelsPass
    : flow::impl::DedupKernelsPassBase<DedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<func::FuncOp> first;
    DenseMap<StringAttr, StringAttr> replacement;
    llvm::MapVector<func::FuncOp, SmallVector<Attribute>> merged;
    for (func::FuncOp kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(FlowDialect::getKernelAttrName()) ||
          kernel.isExternal())
        continue;
      auto [it, inserted] = first.try_emplace(kernelKey(kernel), kernel);
      if (inserted)
        continue;
      replacement[kernel.getSymNameAttr()] = it->second.getSymNameAttr();
      merged[it->second].push_back(kernel.getSymNameAttr());
    }
    if (replacement.empty())
      return;
    // The kept kernel names those it stands for (the compile report counts
    // their bytes per call under their own names).
    for (auto &[kernel, names] : merged)
      kernel->setAttr(FlowDialect::getMergedKernelsAttrName(),
                      ArrayAttr::get(&getContext(), names));
    // Calls go to the first of each kind; a duplicate something else still
    // refers to is kept.
    module.walk([&](func::CallOp call) {
      auto to = replacement.find(call.getCalleeAttr().getAttr());
      if (to != replacement.end())
        call.setCalleeAttr(FlatSymbolRefAttr::get(to->second));
    });
    for (func::FuncOp kernel :
         llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!replacement.count(kernel.getSymNameAttr()))
        continue;
      if (SymbolTable::symbolKnownUseEmpty(kernel, module)) {
        kernel.erase();
        ++numRemoved;
      }
    }
  }
};
} // namespace
