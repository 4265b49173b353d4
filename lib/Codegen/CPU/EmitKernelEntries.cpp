//===- EmitKernelEntries.cpp - The runtime's entry point per kernel -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Codegen/CPU/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_EMITKERNELENTRIESPASS
#include "flow/Codegen/CPU/Passes.h.inc"
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
    abi.clear();
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
      auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(
          FlowDialect::getBindingSizesAttrName());
      auto numOutputs = kernel->getAttrOfType<IntegerAttr>(
          FlowDialect::getNumOutputsAttrName());
      if (!sizes || !numOutputs) {
        kernel.emitError("kernel has no '")
            << FlowDialect::getBindingSizesAttrName() << "' and '"
            << FlowDialect::getNumOutputsAttrName()
            << "' (run flow-record-kernel-abi before bufferization)";
        return signalPassFailure();
      }
      if ((int64_t)sizes.size() != numParams - 2 ||
          numOutputs.getInt() > (int64_t)sizes.size()) {
        kernel.emitError("kernel takes ")
            << numParams - 2 << " buffers but records " << sizes.size()
            << " binding sizes (" << numOutputs.getInt() << " written)";
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
      abi.push_back({entry, sizes, numOutputs.getInt()});
    }
    if (!abi.empty())
      emitAbiTable(module, abi);
  }

private:
  struct AbiEntry {
    LLVM::LLVMFuncOp entry;
    DenseI64ArrayAttr sizes;
    int64_t numOutputs;
  };
  SmallVector<AbiEntry> abi;

  /// Adds `@flow_kernel_abi`, the FlowKernelAbiTable of
  /// flow/runtime/KernelAbi.h: {magic, count, entries}, each entry
  /// {symbol, entry, num_bindings, num_outputs, binding_sizes}.
  void emitAbiTable(ModuleOp module, MutableArrayRef<AbiEntry> entries) {
    MLIRContext *ctx = module.getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i8 = IntegerType::get(ctx, 8);
    auto i64 = IntegerType::get(ctx, 64);
    auto entryType =
        LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, i64, i64, ptr});
    auto tableType = LLVM::LLVMStructType::getLiteral(ctx, {i64, i64, ptr});
    auto entriesType = LLVM::LLVMArrayType::get(entryType, entries.size());
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    auto constant = [&](StringRef name, Type type, Attribute value) {
      return LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, name, value);
    };
    // Names and size arrays.
    SmallVector<std::pair<std::string, std::string>> symbols;
    for (auto [i, e] : llvm::enumerate(entries)) {
      std::string name = "__flow_abi_name_" + std::to_string(i);
      std::string sizesName = "__flow_abi_sizes_" + std::to_string(i);
      std::string text = (e.entry.getSymName() + Twine('\0')).str();
      constant(name, LLVM::LLVMArrayType::get(i8, text.size()),
               b.getStringAttr(text));
      ArrayRef<int64_t> values = e.sizes.asArrayRef();
      auto tensorType =
          RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
      constant(sizesName, LLVM::LLVMArrayType::get(i64, values.size()),
               DenseElementsAttr::get(tensorType, values));
      symbols.push_back({name, sizesName});
    }
    // The entries.
    auto entriesGlobal =
        constant("__flow_abi_entries", entriesType, Attribute());
    {
      OpBuilder::InsertionGuard guard(b);
      b.createBlock(&entriesGlobal.getInitializerRegion());
      Value array = LLVM::PoisonOp::create(b, loc, entriesType);
      for (auto [i, e] : llvm::enumerate(entries)) {
        Value fields[] = {
            LLVM::AddressOfOp::create(b, loc, ptr, symbols[i].first),
            LLVM::AddressOfOp::create(b, loc, ptr, e.entry.getSymName()),
            LLVM::ConstantOp::create(b, loc, i64, e.sizes.size()),
            LLVM::ConstantOp::create(b, loc, i64, e.numOutputs),
            LLVM::AddressOfOp::create(b, loc, ptr, symbols[i].second)};
        for (auto [f, value] : llvm::enumerate(fields))
          array = LLVM::InsertValueOp::create(
              b, loc, array, value,
              ArrayRef<int64_t>{(int64_t)i, (int64_t)f});
      }
      LLVM::ReturnOp::create(b, loc, array);
    }
    // The exported table.
    auto table = LLVM::GlobalOp::create(b, loc, tableType, /*isConstant=*/true,
                                        LLVM::Linkage::External,
                                        "flow_kernel_abi", Attribute());
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&table.getInitializerRegion());
    Value value = LLVM::PoisonOp::create(b, loc, tableType);
    // "FLOWABI1", little-endian (FLOW_KERNEL_ABI_MAGIC).
    constexpr int64_t kMagic = 0x31494241574f4c46ll;
    Value fields[] = {
        LLVM::ConstantOp::create(b, loc, i64, kMagic),
        LLVM::ConstantOp::create(b, loc, i64, (int64_t)entries.size()),
        LLVM::AddressOfOp::create(b, loc, ptr, "__flow_abi_entries")};
    for (auto [f, field] : llvm::enumerate(fields))
      value = LLVM::InsertValueOp::create(b, loc, value, field,
                                          ArrayRef<int64_t>{(int64_t)f});
    LLVM::ReturnOp::create(b, loc, value);
  }
};
} // namespace
