//===- MatmulsToBf16.cpp - Mixed precision for matrix products ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APFloat.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_MATMULSTOBF16PASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// `type` with bf16 elements.
static RankedTensorType asBf16(Type type) {
  auto t = cast<RankedTensorType>(type);
  return RankedTensorType::get(t.getShape(), BFloat16Type::get(t.getContext()));
}

/// Rounds an f32 to bf16 (to nearest, ties to even; NaN stays NaN).
static uint16_t roundToBf16(float value) {
  llvm::APFloat f(value);
  bool lost;
  f.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

/// The f32 values of a constant, or nullopt if they are not available.
static std::optional<std::vector<float>> constantValues(ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  std::vector<float> values;
  values.reserve(type.getNumElements());
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    for (float v : dense.getValues<float>())
      values.push_back(v);
    return values;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(op.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob ||
        blob->getData().size() != size_t(type.getNumElements()) * sizeof(float))
      return std::nullopt;
    values.resize(type.getNumElements());
    std::memcpy(values.data(), blob->getData().data(),
                values.size() * sizeof(float));
    return values;
  }
  return std::nullopt;
}

namespace {
struct MatmulsToBf16Pass
    : flow::impl::MatmulsToBf16PassBase<MatmulsToBf16Pass> {
  /// `v` rounded to bf16, built once per value.
  Value toBf16(OpBuilder &b, Value v) {
    if (Value done = converted.lookup(v))
      return done;
    Value result;
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    Location loc = v.getLoc();
    if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      // The converted source is built right after the source: before this
      // reshape.
      Value source = toBf16(b, reshape.getOperand());
      b.setInsertionPointAfter(reshape);
      result = ReshapeOp::create(b, loc, asBf16(v.getType()), source);
    } else if (auto parameter = v.getDefiningOp<ParameterOp>()) {
      result = ParameterOp::create(b, loc, asBf16(v.getType()),
                                   parameter.getNameAttr(),
                                   parameter.getPieceOffsetsAttr(),
                                   parameter.getPieceOfAttr(),
                                   parameter.getPieceSbpAttr(),
                                   parameter.getPieceSbpOfAttr());
    } else if (auto constant = v.getDefiningOp<ConstantOp>();
               constant && constantValues(constant)) {
      std::vector<float> values = *constantValues(constant);
      std::vector<uint16_t> bits;
      bits.reserve(values.size());
      for (float f : values)
        bits.push_back(roundToBf16(f));
      ArrayRef<char> raw(reinterpret_cast<const char *>(bits.data()),
                         bits.size() * sizeof(uint16_t));
      result = ConstantOp::create(
          b, loc, DenseElementsAttr::getFromRawBuffer(asBf16(v.getType()), raw));
    } else {
      result = CastOp::create(b, loc, asBf16(v.getType()), v);
    }
    converted[v] = result;
    return result;
  }

  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) {
      auto type = [](Value v) {
        return cast<RankedTensorType>(v.getType()).getElementType();
      };
      if (type(op.getLhs()).isF32() && type(op.getRhs()).isF32() &&
          type(op.getResult()).isF32())
        matmuls.push_back(op);
    });
    OpBuilder b(&getContext());
    for (MatmulOp op : matmuls) {
      Value lhs = toBf16(b, op.getLhs()), rhs = toBf16(b, op.getRhs());
      b.setInsertionPoint(op);
      auto mixed = MatmulOp::create(b, op.getLoc(), op.getType(), lhs, rhs,
                                    op.getTransposeLhs(),
                                    op.getTransposeRhs(), /*accumulate=*/true);
      op.replaceAllUsesWith(mixed.getResult());
      op.erase();
      ++numMatmuls;
    }
    converted.clear();
    // The f32 operands only the old products read (their views, weights,
    // constants) are dead now: drop them, or fusion would keep computing
    // them for nothing.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : llvm::reverse(ops))
      if (isa<FlowDialect>(op->getDialect()) && isOpTriviallyDead(op))
        op->erase();
  }

  llvm::DenseMap<Value, Value> converted;
};
} // namespace
