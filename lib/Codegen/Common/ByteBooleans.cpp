//===- ByteBooleans.cpp - Boolean kernel buffers read as bytes ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_BYTEBOOLEANSPASS
#include "flow/Codegen/Common/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;

namespace {

bool isBoolTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isInteger(1);
}

RankedTensorType withElement(Type type, Type element) {
  return cast<RankedTensorType>(type).clone(element);
}

/// `value` converted element by element to `to`'s element type, by
/// `arith.trunci` or `arith.extui`.
Value convert(OpBuilder &b, Location loc, Value value, RankedTensorType to) {
  auto from = cast<RankedTensorType>(value.getType());
  int64_t rank = from.getRank();
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, to.getShape(),
                                       to.getElementType());
  bool narrow = to.getElementType().getIntOrFloatBitWidth() <
                from.getElementType().getIntOrFloatBitWidth();
  return linalg::GenericOp::create(
             b, loc, to, value, init, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Type element = to.getElementType();
               Value v = narrow ? (Value)arith::TruncIOp::create(nb, l, element,
                                                                 args[0])
                                : (Value)arith::ExtUIOp::create(nb, l, element,
                                                                args[0]);
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

struct ByteBooleansPass
    : flow::impl::ByteBooleansPassBase<ByteBooleansPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(flow::FlowDialect::getKernelAttrName()) ||
          kernel.isExternal())
        continue;
      FunctionType type = kernel.getFunctionType();
      if (llvm::none_of(llvm::concat<const Type>(type.getInputs(),
                                                 type.getResults()),
                        isBoolTensor))
        continue;
      Block &entry = kernel.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Type byte = b.getI8Type(), boolean = b.getI1Type();
      for (BlockArgument arg : entry.getArguments()) {
        if (!isBoolTensor(arg.getType()))
          continue;
        arg.setType(withElement(arg.getType(), byte));
        Value asBool = convert(b, kernel.getLoc(), arg,
                               withElement(arg.getType(), boolean));
        arg.replaceAllUsesExcept(asBool, asBool.getDefiningOp());
      }
      SmallVector<Type> results;
      kernel.walk([&](func::ReturnOp ret) {
        b.setInsertionPoint(ret);
        for (OpOperand &operand : ret->getOpOperands())
          if (isBoolTensor(operand.get().getType()))
            operand.set(convert(b, ret.getLoc(), operand.get(),
                                withElement(operand.get().getType(), byte)));
      });
      for (Type t : type.getResults())
        results.push_back(isBoolTensor(t) ? withElement(t, byte) : t);
      kernel.setFunctionType(
          FunctionType::get(&getContext(), entry.getArgumentTypes(), results));
    }
  }
};

} // namespace
