//===- PlanMemory.cpp - One arena for each host schedule ------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "flow/Support/MemoryPlan.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// Alignment of every arena slice (the runtime's arena is 64-byte aligned).
static constexpr int64_t kAlignment = 64;

/// The allocation `v` is (a view of), or null.
static HostAllocOp allocOf(Value v) {
  return bufferRoot(v).getDefiningOp<HostAllocOp>();
}

namespace {
struct PlanMemoryPass : flow::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func.isPrivate() ||
          func->hasAttr(FlowDialect::getKernelAttrName()))
        continue;
      if (!func->hasAttr(FlowDialect::getHostOutputsAttrName())) {
        func.emitError("is not a host schedule: run flow-build-host-schedule "
                       "before flow-plan-memory");
        return signalPassFailure();
      }
      if (!func.getOps<HostArenaOp>().empty())
        continue; // planned already
      if (failed(plan(func)))
        return signalPassFailure();
    }
  }

  LogicalResult plan(func::FuncOp func) {
    Block &body = func.getBody().front();

    // Live ranges in command positions, allocations in program order.
    struct Live {
      int64_t begin = 0, end = 0;
      HostAllocOp reuses;
    };
    llvm::MapVector<Operation *, Live> live;
    SmallVector<std::pair<HostDispatchOp, int64_t>> dispatches;
    SmallVector<std::pair<HostConvOp, int64_t>> convs;
    int64_t position = 0;
    for (Operation &op : body) {
      if (auto alloc = dyn_cast<HostAllocOp>(op)) {
        live[alloc] = {};
        continue;
      }
      if (!isHostCommand(&op))
        continue;
      // A GEMM epilogue runs during the GEMM (tile by tile): it shares the
      // GEMM's position, so what either uses is alive across both.
      auto dispatch = dyn_cast<HostDispatchOp>(op);
      if (!(dispatch && dispatch.getGemmEpilogue()))
        ++position;
      for (Value operand : op.getOperands())
        if (HostAllocOp alloc = allocOf(operand)) {
          Live &l = live[alloc];
          if (l.begin == 0)
            l.begin = position;
          l.end = position;
        }
      if (dispatch)
        dispatches.push_back({dispatch, position});
      if (auto conv = dyn_cast<HostConvOp>(op))
        convs.push_back({conv, position});
    }
    for (auto &[op, l] : live)
      if (l.begin == 0)
        return op->emitError("transient buffer is used by no command");

    // In place: a dispatch's first output takes over the buffer of an
    // input it is element-wise in, when that input dies at the dispatch.
    llvm::DenseSet<Operation *> taken;
    for (auto [dispatch, at] : dispatches) {
      std::optional<ArrayRef<int64_t>> operands =
          dispatch.getInPlaceOperands();
      if (!inPlace || !operands)
        continue;
      Value out = dispatch.getOutputs().front();
      HostAllocOp result = out.getDefiningOp<HostAllocOp>();
      if (!result || live[result].begin != at)
        continue;
      int64_t bytes = storageBytes(result.getType());
      // A GEMM epilogue runs while the GEMM's other pieces still read its
      // operands: it never writes over them.
      llvm::DenseSet<Operation *> gemmReads;
      if (dispatch.getGemmEpilogue())
        if (auto gemm = dyn_cast_or_null<HostGemmOp>(
                previousHostCommand(dispatch)))
          for (Value v : {gemm.getLhs(), gemm.getRhs()})
            if (HostAllocOp a = allocOf(v))
              gemmReads.insert(a);
      for (int64_t k : *operands) {
        HostAllocOp operand = allocOf(dispatch.getInputs()[k]);
        if (!operand || live[operand].end != at ||
            storageBytes(operand.getType()) < bytes ||
            taken.contains(operand) || gemmReads.contains(operand))
          continue;
        live[result].reuses = operand;
        taken.insert(operand);
        break;
      }
    }

    // A convolution writes over its residual when the residual dies there
    // and is held alike (shape, element type, layout): the library then
    // adds the destination's old contents (a sum post-op), reading and
    // writing one buffer. Always on: the library computes in place by
    // design, unlike a generated kernel.
    for (auto [conv, at] : convs) {
      Value residual = conv.getResidual();
      if (!residual || residual.getType() != conv.getOut().getType() ||
          conv.getBlockedResidual() != conv.getBlockedOutput())
        continue;
      HostAllocOp result = conv.getOut().getDefiningOp<HostAllocOp>();
      HostAllocOp operand = residual.getDefiningOp<HostAllocOp>();
      if (!result || !operand || live[result].begin != at ||
          live[result].reuses || live[operand].end != at ||
          taken.contains(operand))
        continue;
      live[result].reuses = operand;
      taken.insert(operand);
    }

    // The first command writing each buffer names it.
    llvm::DenseMap<Operation *, Operation *> writer;
    for (Operation &op : body)
      if (isHostCommand(&op))
        for (Value operand : op.getOperands())
          if (HostAllocOp alloc = allocOf(operand))
            writer.try_emplace(alloc, &op);

    std::vector<PlannedBuffer> buffers;
    llvm::DenseMap<Operation *, int64_t> indexOf;
    for (auto &[op, l] : live) {
      PlannedBuffer b;
      b.size = storageBytes(cast<HostAllocOp>(op).getType());
      b.begin = l.begin;
      b.end = l.end;
      b.reuses = l.reuses ? indexOf.lookup(l.reuses) : -1;
      b.name = bufferName(writer.lookup(op));
      indexOf[op] = buffers.size();
      buffers.push_back(std::move(b));
    }
    MemoryPlanResult plan = planMemory(buffers, kAlignment);
    if (std::optional<std::string> error =
            verifyMemoryPlan(buffers, kAlignment, plan.arenaBytes))
      return func.emitError("internal error: the arena plan is unsound: ")
             << *error;

    // The arena, and each allocation as its slice.
    MLIRContext *ctx = &getContext();
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    auto arena = HostArenaOp::create(
        b, func.getLoc(),
        MemRefType::get({plan.arenaBytes}, IntegerType::get(ctx, 8)),
        ArenaPlanAttr::get(ctx, plan.arenaBytes, plan.lowerBound,
                           plan.unplannedBytes, plan.heuristic));
    for (auto &[op, l] : live) {
      auto alloc = cast<HostAllocOp>(op);
      const PlannedBuffer &p = buffers[indexOf.lookup(op)];
      bool shared = p.reuses >= 0 && buffers[p.reuses].offset == p.offset;
      numInPlace += shared;
      b.setInsertionPoint(alloc);
      auto slice = HostSliceOp::create(b, alloc.getLoc(), alloc.getType(),
                                       arena, p.offset, p.begin, p.end, shared);
      alloc.replaceAllUsesWith(slice.getResult());
      alloc.erase();
    }
    return success();
  }
};
} // namespace
