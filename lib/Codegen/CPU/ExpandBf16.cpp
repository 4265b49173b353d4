//===- ExpandBf16.cpp - bf16 without conversion instructions --------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/CPU/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_EXPANDBF16PASS
#define GEN_PASS_DEF_HOLDBF16ASI16PASS
#include "flow/Codegen/CPU/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {
bool isBf16(Type type) { return getElementTypeOrSelf(type).isBF16(); }

/// \p type with f32 elements in place of bf16 ones.
Type widened(Type type) {
  Type f32 = Float32Type::get(type.getContext());
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(f32);
  return f32;
}

/// True for ops this pass computes in f32 when they touch bf16: arithmetic
/// of the arith and math dialects, and vector reductions and FMAs. Moves
/// of bits (constants, selects, bitcasts) and the conversions themselves
/// stay as they are.
bool computesInF32(Operation *op) {
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::ConstantOp, arith::SelectOp,
          arith::BitcastOp>(op))
    return false;
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if (dialect != "arith" && dialect != "math" &&
      !isa<vector::ReductionOp, vector::FMAOp>(op))
    return false;
  if (op->getNumRegions() != 0)
    return false;
  return llvm::any_of(op->getOperandTypes(), isBf16) ||
         llvm::any_of(op->getResultTypes(), isBf16);
}

/// Rewrites a bf16 op as its f32 twin between widening and rounding.
struct ComputeInF32 : RewritePattern {
  ComputeInF32(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!computesInF32(op))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(
          isBf16(operand.getType())
              ? arith::ExtFOp::create(rewriter, loc,
                                      widened(operand.getType()), operand)
                    .getResult()
              : operand);
    SmallVector<Type> types;
    for (Type type : op->getResultTypes())
      types.push_back(isBf16(type) ? widened(type) : type);
    OperationState state(loc, op->getName(), operands, types,
                         op->getAttrs());
    Operation *wide = rewriter.create(state);
    SmallVector<Value> results;
    for (auto [old, value] : llvm::zip(op->getResults(), wide->getResults()))
      results.push_back(
          isBf16(old.getType())
              ? arith::TruncFOp::create(rewriter, loc, old.getType(), value)
                    .getResult()
              : value);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// f64 (or any type wider than f32) to bf16 in two steps, through f32.
struct TruncThroughF32 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = getElementTypeOrSelf(op.getIn().getType());
    if (!isBf16(op.getType()) || from.isF32() ||
        from.getIntOrFloatBitWidth() <= 32)
      return failure();
    Value f32 = arith::TruncFOp::create(
        rewriter, op.getLoc(), widened(op.getType()), op.getIn());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), f32);
    return success();
  }
};

struct ExpandBf16Pass : flow::impl::ExpandBf16PassBase<ExpandBf16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ComputeInF32, TruncThroughF32>(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // What LLVM would still round in software is an error here, not a
    // library that fails to load.
    WalkResult left = getOperation()->walk([](arith::TruncFOp op) {
      if (!isBf16(op.getType()))
        return WalkResult::advance();
      op.emitError("cannot expand this rounding to bf16 for a CPU without "
                   "bf16 conversion instructions");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

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
