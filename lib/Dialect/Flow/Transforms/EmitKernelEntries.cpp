//===- EmitKernelEntries.cpp - The runtime's entry point per kernel -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_EMITKERNELENTRIESPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
struct EmitKernelEntriesPass
    : flow::impl::EmitKernelEntriesPassBase<EmitKernelEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    OpBuilder b(ctx);
    for (LLVM::LLVMFuncOp kernel :
         llvm::to_vector(module.getOps<LLVM::LLVMFuncOp>())) {
      if (!kernel->hasAttr("flow.kernel") || kernel.isExternal())
        continue;
      LLVM::LLVMFunctionType type = kernel.getFunctionType();
      unsigned numParams = type.getNumParams();
      // Buffers (bare pointers), then the workgroup id and count.
      if (!isa<LLVM::LLVMVoidType>(type.getReturnType()) || numParams < 2 ||
          type.getParamType(numParams - 1) != i64 ||
          type.getParamType(numParams - 2) != i64 ||
          !llvm::all_of(type.getParams().drop_back(2),
                        [&](Type t) { return t == ptr; })) {
        kernel.emitError("kernel does not have the void(ptr..., i64, i64) "
                         "signature the runtime calls");
        return signalPassFailure();
      }
      kernel.setLinkage(LLVM::Linkage::Internal);
      kernel.setAlwaysInline(true);

      b.setInsertionPointAfter(kernel);
      Location loc = kernel.getLoc();
      auto entry = LLVM::LLVMFuncOp::create(
          b, loc, (kernel.getSymName() + "_entry").str(),
          LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64}));
      Block *block = entry.addEntryBlock(b);
      b.setInsertionPointToStart(block);
      Value bindings = block->getArgument(0);
      SmallVector<Value> args;
      for (unsigned i = 0; i + 2 < numParams; ++i) {
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, bindings,
                                         ArrayRef<LLVM::GEPArg>{(int32_t)i});
        args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      args.push_back(block->getArgument(1));
      args.push_back(block->getArgument(2));
      LLVM::CallOp::create(b, loc, kernel, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};
} // namespace
