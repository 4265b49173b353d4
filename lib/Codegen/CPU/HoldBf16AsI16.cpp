//===- HoldBf16AsI16.cpp - bf16 kernels hold their bits as i16 -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_HOLDBF16ASI16PASS
#include "flow/Codegen/CPU/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {
/// \p type with i16 wherever it holds bf16; null when it holds none.
Type bitsType(Type type) {
  MLIRContext *context = type.getContext();
  if (type.isBF16())
    return IntegerType::get(context, 16);
  if (auto vector = dyn_cast<VectorType>(type))
    if (vector.getElementType().isBF16())
      return vector.clone(IntegerType::get(context, 16));
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    if (Type element = bitsType(array.getElementType()))
      return LLVM::LLVMArrayType::get(element, array.getNumElements());
  return nullptr;
}

/// Ops that only move bf16 bits: they compute the same on i16.
bool movesBits(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::SelectOp, LLVM::BitcastOp,
             LLVM::ConstantOp, LLVM::AllocaOp, LLVM::GEPOp,
             LLVM::InsertElementOp, LLVM::ExtractElementOp,
             LLVM::ShuffleVectorOp, LLVM::InsertValueOp,
             LLVM::ExtractValueOp, LLVM::PoisonOp, LLVM::UndefOp,
             LLVM::ZeroOp, LLVM::BrOp, LLVM::CondBrOp, LLVM::SwitchOp,
             LLVM::ReturnOp, LLVM::MaskedLoadOp, LLVM::MaskedStoreOp,
             LLVM::masked_gather, LLVM::masked_scatter, LLVM::MemcpyOp,
             LLVM::MemmoveOp, LLVM::MemsetOp, LLVM::CallOp, LLVM::LLVMFuncOp,
             LLVM::NoAliasScopeDeclOp, LLVM::AssumeOp, LLVM::LifetimeStartOp,
             LLVM::LifetimeEndOp>(op);
}

bool touchesBf16(Operation *op) {
  auto has = [](Type t) { return bitsType(t) != nullptr; };
  return llvm::any_of(op->getOperandTypes(), has) ||
         llvm::any_of(op->getResultTypes(), has);
}

struct HoldBf16AsI16Pass
    : flow::impl::HoldBf16AsI16PassBase<HoldBf16AsI16Pass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult computed = module.walk([](Operation *op) {
      if (!touchesBf16(op) || movesBits(op))
        return WalkResult::advance();
      op->emitError("computes on bf16 in a kernel for a CPU without bf16 "
                    "conversion instructions (flow-expand-bf16 should have "
                    "widened it to f32)");
      return WalkResult::interrupt();
    });
    if (computed.wasInterrupted())
      return signalPassFailure();

    SmallVector<LLVM::BitcastOp> bitcasts;
    module.walk([&](Operation *op) {
      // Types held in attributes: functions' signatures, GEP and alloca
      // element types, constants' values.
      if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op)) {
        LLVM::LLVMFunctionType type = func.getFunctionType();
        SmallVector<Type> params;
        for (Type t : type.getParams())
          params.push_back(bitsType(t) ? bitsType(t) : t);
        Type result = type.getReturnType();
        if (Type bits = bitsType(result))
          result = bits;
        func.setFunctionType(
            LLVM::LLVMFunctionType::get(result, params, type.isVarArg()));
      }
      if (auto gep = dyn_cast<LLVM::GEPOp>(op))
        if (Type bits = bitsType(gep.getElemType()))
          gep.setElemType(bits);
      if (auto alloca = dyn_cast<LLVM::AllocaOp>(op))
        if (Type bits = bitsType(alloca.getElemType()))
          alloca.setElemType(bits);
      if (auto constant = dyn_cast<LLVM::ConstantOp>(op)) {
        if (Type bits = bitsType(constant.getType())) {
          Attribute value = constant.getValue();
          if (auto f = dyn_cast<FloatAttr>(value))
            value = IntegerAttr::get(
                bits, f.getValue().bitcastToAPInt());
          else if (auto dense = dyn_cast<DenseElementsAttr>(value))
            value = dense.bitcast(IntegerType::get(op->getContext(), 16));
          constant.setValueAttr(value);
        }
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            if (Type bits = bitsType(arg.getType()))
              arg.setType(bits);
      for (OpResult result : op->getResults())
        if (Type bits = bitsType(result.getType()))
          result.setType(bits);
      if (auto cast = dyn_cast<LLVM::BitcastOp>(op))
        bitcasts.push_back(cast);
    });
    for (LLVM::BitcastOp cast : bitcasts)
      if (cast.getArg().getType() == cast.getType()) {
        cast.replaceAllUsesWith(cast.getArg());
        cast.erase();
      }
  }
};
} // namespace
