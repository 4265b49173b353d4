//===- FuseSiblingMatmuls.cpp - One GEMM for products of one input --------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The query, key and value projections of attention read one activation
// with three weights: three GEMMs of n columns each. Joined along the
// weights' output axis they are one GEMM of 3n columns, whose result the
// three consumers read through slices. The joined weight is a flow.concat
// of parameters, which the runtime assembles once when it binds the
// executable, so nothing is copied per call.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FUSESIBLINGMATMULSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// What products must share to be one: the input, the block, the
/// transposes, the accumulation and the element types (the contracted
/// size follows from the input).
struct SiblingKey {
  Value lhs;
  Block *block;
  bool transposeLhs, transposeRhs, accumulate;
  Type rhsElement, resultElement;

  bool operator<(const SiblingKey &o) const {
    auto tie = [](const SiblingKey &k) {
      return std::make_tuple(k.lhs.getAsOpaquePointer(), k.block,
                             k.transposeLhs, k.transposeRhs, k.accumulate,
                             k.rhsElement.getAsOpaquePointer(),
                             k.resultElement.getAsOpaquePointer());
    };
    return tie(*this) < tie(o);
  }
};

/// The key of a product whose weight is a 2-D parameter (or piece), else
/// nullopt.
std::optional<SiblingKey> keyOf(MatmulOp op) {
  auto rhs = cast<RankedTensorType>(op.getRhs().getType());
  if (rhs.getRank() != 2 || !rhs.hasStaticShape() ||
      !op.getRhs().getDefiningOp<ParameterOp>())
    return std::nullopt;
  auto result = cast<RankedTensorType>(op.getType());
  if (!result.hasStaticShape())
    return std::nullopt;
  return SiblingKey{op.getLhs(),
                    op->getBlock(),
                    op.getTransposeLhs(),
                    op.getTransposeRhs(),
                    op.getAccumulateF32(),
                    rhs.getElementType(),
                    result.getElementType()};
}

struct FuseSiblingMatmulsPass
    : flow::impl::FuseSiblingMatmulsPassBase<FuseSiblingMatmulsPass> {
  void runOnOperation() override {
    // Groups in program order of their first product, so the rewrite is
    // deterministic.
    std::map<SiblingKey, unsigned> index;
    std::vector<SmallVector<MatmulOp>> groups;
    getOperation().walk([&](MatmulOp op) {
      std::optional<SiblingKey> key = keyOf(op);
      if (!key)
        return;
      auto [it, inserted] = index.try_emplace(*key, groups.size());
      if (inserted)
        groups.emplace_back();
      groups[it->second].push_back(op);
    });
    for (SmallVector<MatmulOp> &group : groups)
      if (group.size() > 1)
        join(group);
  }

  /// The adds of a 1-D bias (a parameter or a constant) that are the only
  /// use of each product of `group`, or none when one has no such add.
  static SmallVector<Operation *> biasAdds(ArrayRef<MatmulOp> group) {
    SmallVector<Operation *> adds;
    for (MatmulOp op : group) {
      if (!op->hasOneUse())
        return {};
      auto add = dyn_cast<AddOp>(*op->getUsers().begin());
      if (!add || add.getType() != op.getType() ||
          add->getBlock() != op->getBlock())
        return {};
      Value bias = add.getLhs() == op.getResult() ? add.getRhs() : add.getLhs();
      auto type = cast<RankedTensorType>(bias.getType());
      int64_t width = cast<RankedTensorType>(op.getType()).getShape().back();
      if (type.getRank() != 1 || type.getDimSize(0) != width ||
          !(bias.getDefiningOp<ParameterOp>() ||
            bias.getDefiningOp<ConstantOp>()))
        return {};
      adds.push_back(add);
    }
    return adds;
  }

  /// The 1-D `biases` concatenated: a join of parameters at bind, a new
  /// constant for constants; null for a mix (or constants whose values are
  /// not at hand).
  static Value joinBiases(OpBuilder &b, Location loc, ArrayRef<Value> biases) {
    if (llvm::all_of(biases, [](Value v) {
          return v.getDefiningOp<ParameterOp>() != nullptr;
        })) {
      for (Value v : biases) {
        Operation *def = v.getDefiningOp();
        if (def->getBlock() == b.getInsertionBlock() &&
            b.getInsertionPoint() != def->getBlock()->end() &&
            b.getInsertionPoint()->isBeforeInBlock(def))
          def->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
      }
      return ConcatOp::create(b, loc, biases, b.getI64IntegerAttr(0));
    }
    SmallVector<Attribute> values;
    Type element;
    for (Value v : biases) {
      auto constant = v.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (!dense)
        return {};
      element = dense.getElementType();
      llvm::append_range(values, dense.getValues<Attribute>());
    }
    auto type = RankedTensorType::get({(int64_t)values.size()}, element);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
  }

  /// Replaces `group` (products in program order) by one product over the
  /// concatenated weights, at the first of them, and a slice per product.
  void join(MutableArrayRef<MatmulOp> group) {
    MatmulOp first = group.front();
    bool transposeRhs = first.getTransposeRhs();
    // The output axis of a weight: its columns, or rows when transposed.
    int64_t axis = transposeRhs ? 0 : 1;
    SmallVector<Value> weights;
    SmallVector<int64_t> widths;
    for (MatmulOp op : group) {
      Operation *weight = op.getRhs().getDefiningOp();
      // A parameter has no operands: it may move up to the first product.
      if (weight->getBlock() == first->getBlock() &&
          first->isBeforeInBlock(weight))
        weight->moveBefore(first);
      weights.push_back(op.getRhs());
      widths.push_back(
          cast<RankedTensorType>(op.getRhs().getType()).getDimSize(axis));
    }
    OpBuilder b(first);
    Location loc = b.getFusedLoc(llvm::to_vector(
        llvm::map_range(group, [](MatmulOp op) { return op.getLoc(); })));
    Value joined = ConcatOp::create(b, loc, weights, b.getI64IntegerAttr(axis));
    auto resultType = cast<RankedTensorType>(first.getType());
    SmallVector<int64_t> shape(resultType.getShape());
    int64_t total = 0;
    for (int64_t w : widths)
      total += w;
    shape.back() = total;
    auto product = MatmulOp::create(
        b, loc, RankedTensorType::get(shape, resultType.getElementType()),
        first.getLhs(), joined, first.getTransposeLhs(), transposeRhs,
        first.getAccumulateF32());
    // Each product's bias, joined the same way: the add stays one
    // element-wise op after the GEMM (a library epilogue where the target
    // has them).
    Value joinedResult = product;
    SmallVector<Operation *> adds = biasAdds(group);
    if (!adds.empty()) {
      SmallVector<Value> biases;
      for (auto [op, add] : llvm::zip(group, adds))
        biases.push_back(add->getOperand(0) == op.getResult()
                             ? add->getOperand(1)
                             : add->getOperand(0));
      if (Value bias = joinBiases(b, loc, biases)) {
        joinedResult = AddOp::create(b, loc, product, bias);
        for (auto [op, add] : llvm::zip(group, adds)) {
          add->replaceAllUsesWith(op->getResults());
          add->erase();
        }
        llvm::SmallPtrSet<Operation *, 4> dead;
        for (Value old : biases)
          if (old.use_empty())
            dead.insert(old.getDefiningOp());
        for (Operation *op : dead)
          op->erase();
      }
    }
    int64_t start = 0;
    for (auto [op, width] : llvm::zip(group, widths)) {
      auto type = cast<RankedTensorType>(op.getType());
      SmallVector<int64_t> starts(type.getRank(), 0), limits(shape),
          strides(type.getRank(), 1);
      starts.back() = start;
      limits.back() = start + width;
      start += width;
      Value slice = SliceOp::create(
          b, op.getLoc(), type, joinedResult, b.getDenseI64ArrayAttr(starts),
          b.getDenseI64ArrayAttr(limits), b.getDenseI64ArrayAttr(strides));
      op.replaceAllUsesWith(slice);
    }
    // Erased last: the builder inserts before the first of them.
    for (MatmulOp op : group)
      op.erase();
    numJoined += group.size() - 1;
  }
};

} // namespace
