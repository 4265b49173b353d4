//===- OverlapCollectives.cpp - Collectives in flight while others compute ===//
//
// Part of the Flow project.
//
// A host schedule runs its commands in order; a collective placed by
// flow-partition sits just before its first reader. This pass moves
// reductions up to just after what they depend on and splits every
// collective that has work after it into a start (`async`) and a
// `host.wait` before its first reader, so the runtime's communication
// thread moves the bytes while the commands in between run.
//
// Dependences are on buffers: a command depends on another when one writes
// a buffer (through views of the same root) the other reads or writes. Run
// before flow-plan-memory, every transient buffer is its own allocation, so
// buffers with different roots never overlap.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVESPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// Whether command `op` depends on collective `c` or `c` on it.
bool conflicts(Operation *op, HostCollectiveOp c) {
  return usesCollectiveBuffers(op, c.getInput(), c.getOutput());
}

/// A dispatch that runs as the epilogue of the GEMM before it: nothing may
/// come between the two.
bool isGemmEpilogue(Operation *op) {
  auto dispatch = dyn_cast<HostDispatchOp>(op);
  return dispatch && dispatch.getGemmEpilogue();
}

struct OverlapCollectivesPass
    : flow::impl::OverlapCollectivesPassBase<OverlapCollectivesPass> {
  using OverlapCollectivesPassBase::OverlapCollectivesPassBase;

  void runOnOperation() override {
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() ||
          !func->hasAttr(FlowDialect::getHostOutputsAttrName()))
        continue;
      SmallVector<HostCollectiveOp> collectives(
          func.getBody().front().getOps<HostCollectiveOp>());
      if (llvm::any_of(collectives,
                       [](HostCollectiveOp c) { return c.getAsync(); }))
        continue; // done already
      for (HostCollectiveOp c : collectives)
        reduceInPlace(c);
      if (hoist) {
        Operation *floor = nullptr;
        for (HostCollectiveOp c : collectives) {
          if (storageBytes(c.getOutput().getType()) <=
              storageBytes(c.getInput().getType()))
            moveUp(c, floor);
          floor = c;
        }
      }
      for (HostCollectiveOp c : collectives)
        startEarly(c);
    }
  }

  /// Makes all-reduce `c` write over its input when the input is a
  /// transient buffer nothing reads after it: one buffer instead of two,
  /// while it is in flight and after (and no copy into the output).
  void reduceInPlace(HostCollectiveOp c) {
    if (c.getKind() != CollectiveKind::all_reduce ||
        c.getInput() == c.getOutput() ||
        c.getInput().getType() != c.getOutput().getType())
      return;
    auto in = c.getInput().getDefiningOp<HostAllocOp>();
    auto out = c.getOutput().getDefiningOp<HostAllocOp>();
    if (!in || !out || in->getBlock() != c->getBlock() ||
        llvm::any_of(out->getUsers(), [&](Operation *user) {
          return user != c.getOperation() && !c->isBeforeInBlock(user);
        }))
      return;
    // Every use of the input (or of a view of it) comes before `c`.
    SmallVector<Value> worklist = {in.getResult()};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (user == c.getOperation())
          continue;
        if (auto view = dyn_cast<HostViewOp>(user)) {
          worklist.push_back(view.getResult());
          continue;
        }
        if (!user->isBeforeInBlock(c))
          return;
      }
    }
    out.getResult().replaceAllUsesWith(in.getResult());
    out.erase();
    ++numInPlace;
  }

  /// Moves `c` up to just after the last op it depends on, never above
  /// `floor` (the collective before it). The buffer ops defining its
  /// operands (allocations, views) move up with it.
  void moveUp(HostCollectiveOp c, Operation *floor) {
    llvm::SetVector<Operation *> carried;
    llvm::SmallPtrSet<Operation *, 4> defs;
    auto addDefs = [&](Operation *op) {
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          defs.insert(def);
    };
    addDefs(c);
    Operation *stop = nullptr;
    for (Operation *p = c->getPrevNode(); p; p = p->getPrevNode()) {
      if (p == floor) {
        stop = p;
        break;
      }
      if (defs.contains(p)) {
        // A buffer op (no effects beyond naming a buffer) moves with it.
        if (isHostCommand(p) || p->getNumRegions() != 0 ||
            !isa<HostAllocOp, HostViewOp, HostConstantOp, HostParameterOp,
                 HostParameterConcatOp, HostPieceOffsetsOp>(p)) {
          stop = p;
          break;
        }
        carried.insert(p);
        addDefs(p);
        continue;
      }
      if (isHostCommand(p) && conflicts(p, c)) {
        stop = p;
        break;
      }
    }
    // Never between a GEMM and its epilogue.
    while (stop && stop->getNextNode() && isGemmEpilogue(stop->getNextNode()))
      stop = stop->getNextNode();
    Operation *first = stop ? stop->getNextNode()
                            : &c->getBlock()->front();
    if (first == c.getOperation())
      return;
    // Is anything but carried buffer ops passed?
    bool passesCommand = false;
    for (Operation *p = first; p != c.getOperation(); p = p->getNextNode())
      passesCommand |= isHostCommand(p);
    if (!passesCommand)
      return;
    // Right after `stop`: the carried ops in their order, then `c`.
    Block &block = *c->getBlock();
    Operation *after = stop;
    auto place = [&](Operation *op) {
      Operation *next = after ? after->getNextNode() : &block.front();
      if (next != op)
        op->moveBefore(next);
      after = op;
    };
    for (Operation *op : llvm::reverse(carried))
      place(op);
    place(c);
    ++numHoisted;
  }

  /// Makes `c` asynchronous when a command can run while it is in flight,
  /// with its wait before the first command that depends on it.
  void startEarly(HostCollectiveOp c) {
    Operation *waitAt = c->getNextNode();
    unsigned between = 0;
    for (; !waitAt->hasTrait<OpTrait::IsTerminator>();
         waitAt = waitAt->getNextNode()) {
      if (!isHostCommand(waitAt) || isa<HostWaitOp>(waitAt))
        continue;
      if (conflicts(waitAt, c))
        break;
      // Collectives queue behind it (no overlap); a GEMM's epilogue is part
      // of the GEMM, counted with it.
      between += !isa<HostCollectiveOp>(waitAt) && !isGemmEpilogue(waitAt);
    }
    // The wait goes before the GEMM whose epilogue is the first reader.
    if (isGemmEpilogue(waitAt)) {
      waitAt = previousHostCommand(waitAt);
      --between;
    }
    if (between == 0)
      return;
    c.setAsync(true);
    OpBuilder b(waitAt);
    HostWaitOp::create(b, c.getLoc(), c.getInput(), c.getOutput());
    ++numAsync;
    numOverlapped += between;
  }
};

} // namespace
