//===- RecordKernelAbi.cpp - Each kernel's buffers, before bufferization ---===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_RECORDKERNELABIPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
struct RecordKernelAbiPass
    : flow::impl::RecordKernelAbiPassBase<RecordKernelAbiPass> {
  void runOnOperation() override {
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(FlowDialect::getKernelAttrName()) ||
          func.isExternal())
        continue;
      SmallVector<int64_t> sizes;
      for (Type type : llvm::concat<const Type>(func.getArgumentTypes(),
                                                func.getResultTypes())) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor || !tensor.hasStaticShape() ||
            !tensor.getElementType().isIntOrFloat()) {
          func.emitError("kernel buffer type ")
              << type << " is not a tensor of static shape";
          return signalPassFailure();
        }
        sizes.push_back(mlir::flow::storageBytes(tensor));
      }
      OpBuilder b(func);
      // The operands are the caller's buffers (a user's input, a weight, a
      // value another kernel still reads): a kernel only reads them, so
      // bufferization copies one before writing into it in place.
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
      func->setAttr(FlowDialect::getBindingSizesAttrName(),
                    b.getDenseI64ArrayAttr(sizes));
      func->setAttr(FlowDialect::getNumOutputsAttrName(),
                    b.getI64IntegerAttr(func.getNumResults()));
    }
  }
};
} // namespace
