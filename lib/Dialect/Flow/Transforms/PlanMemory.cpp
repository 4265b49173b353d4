//===- PlanMemory.cpp - Buffers and the arena of each host schedule -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Support/MemoryPlan.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// Alignment of every arena slice (the runtime's arena is 64-byte aligned).
static constexpr int64_t kAlignment = 64;

/// Ops of the host schedule that compute their results into buffers.
static bool computes(Operation *op) {
  return isa<func::CallOp, MatmulOp, AllReduceOp, AllGatherOp, ReduceScatterOp,
             AllToAllOp>(op);
}

static int64_t bytesOf(Value v) {
  return storageBytes(cast<RankedTensorType>(v.getType()));
}

namespace {
struct PlanMemoryPass : flow::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.isPrivate() ||
          func->hasAttr(FlowDialect::getKernelAttrName()))
        continue;
      if (failed(plan(func)))
        return signalPassFailure();
    }
  }

  LogicalResult plan(func::FuncOp func) {
    MLIRContext *ctx = &getContext();
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // Returned values a command computes go straight into the output.
    llvm::DenseMap<Value, int64_t> outputOf;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      Value root = bufferRoot(v);
      Operation *def = root.getDefiningOp();
      if (def && computes(def) && !outputOf.count(root) &&
          bytesOf(root) == bytesOf(v))
        outputOf[root] = i;
    }

    // Arena values in order of definition, with their live ranges.
    struct Live {
      int64_t begin = 0, end = 0;
      Value reuses;
    };
    llvm::MapVector<Value, Live> arena;
    SmallVector<std::pair<func::CallOp, int64_t>> calls;
    int64_t position = 0;
    for (Operation &op : body) {
      ++position;
      for (Value operand : op.getOperands()) {
        auto it = arena.find(bufferRoot(operand));
        if (it != arena.end())
          it->second.end = position;
      }
      if (!computes(&op))
        continue;
      if (auto call = dyn_cast<func::CallOp>(op))
        calls.push_back({call, position});
      for (Value result : op.getResults())
        if (!outputOf.count(result))
          arena[result] = {position, position, Value()};
    }

    // In place: a kernel's first result takes over the slice of an operand
    // the kernel is element-wise in, when that operand dies at the call.
    llvm::DenseSet<Value> taken;
    for (auto [call, at] : calls) {
      auto operands = call->getAttrOfType<DenseI64ArrayAttr>(
          FlowDialect::getInPlaceOperandsAttrName());
      if (!inPlace || !operands || call.getNumResults() == 0)
        continue;
      auto result = arena.find(call.getResult(0));
      if (result == arena.end())
        continue;
      for (int64_t k : operands.asArrayRef()) {
        if (k < 0 || k >= (int64_t)call.getNumOperands())
          continue;
        Value root = bufferRoot(call.getOperand(k));
        auto operand = arena.find(root);
        if (operand == arena.end() || operand->second.end != at ||
            bytesOf(root) < bytesOf(call.getResult(0)) || taken.contains(root))
          continue;
        result->second.reuses = root;
        taken.insert(root);
        break;
      }
    }

    std::vector<PlannedBuffer> buffers;
    llvm::DenseMap<Value, int64_t> indexOf;
    for (auto &[value, live] : arena) {
      PlannedBuffer b;
      b.size = bytesOf(value);
      b.begin = live.begin;
      b.end = live.end;
      b.reuses = live.reuses ? indexOf.lookup(live.reuses) : -1;
      b.name = bufferName(value.getDefiningOp());
      indexOf[value] = buffers.size();
      buffers.push_back(std::move(b));
    }
    MemoryPlanResult plan = planMemory(buffers, kAlignment);
    if (std::optional<std::string> error =
            verifyMemoryPlan(buffers, kAlignment, plan.arenaBytes))
      return func.emitError("internal error: the arena plan is unsound: ")
             << *error;

    // Record it.
    for (Operation &op : body) {
      if (!computes(&op))
        continue;
      SmallVector<Attribute> list;
      for (Value result : op.getResults()) {
        if (auto it = outputOf.find(result); it != outputOf.end()) {
          list.push_back(OutputBufferAttr::get(ctx, it->second));
          continue;
        }
        const PlannedBuffer &b = buffers[indexOf.lookup(result)];
        bool inPlace = b.reuses >= 0 && buffers[b.reuses].offset == b.offset;
        numInPlace += inPlace;
        list.push_back(ArenaSliceAttr::get(ctx, b.offset, b.size, b.begin,
                                           b.end, inPlace));
      }
      op.setAttr(FlowDialect::getBuffersAttrName(), ArrayAttr::get(ctx, list));
    }
    func->setAttr(FlowDialect::getArenaAttrName(),
                  ArenaPlanAttr::get(ctx, plan.arenaBytes, plan.lowerBound,
                                     plan.unplannedBytes, plan.heuristic));
    return success();
  }
};
} // namespace
