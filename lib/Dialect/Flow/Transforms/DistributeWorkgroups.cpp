//===- DistributeWorkgroups.cpp - Split kernel loops over workgroups ------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_DISTRIBUTEWORKGROUPSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// The memref a view-like chain starting at `v` is a view of.
static Value viewRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

/// True if `op` (outside the split loops) may write a kernel argument: then
/// every workgroup would write it, and the kernel must run whole, once.
static bool mayWriteArgument(Operation *op, func::FuncOp kernel) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return op->getNumRegions() > 0 || !isPure(op);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (MemoryEffects::EffectInstance &e : list) {
    if (!isa<MemoryEffects::Write>(e.getEffect()))
      continue;
    Value target = e.getValue();
    if (!target)
      return true;
    auto arg = dyn_cast<BlockArgument>(viewRoot(target));
    if (arg && arg.getOwner()->getParentOp() == kernel)
      return true;
  }
  return false;
}

/// Constant trip count of dimension `dim` of `loop`, if static.
static std::optional<int64_t> tripCount(scf::ParallelOp loop, unsigned dim) {
  APInt lb, ub, step;
  if (!matchPattern(loop.getLowerBound()[dim], m_ConstantInt(&lb)) ||
      !matchPattern(loop.getUpperBound()[dim], m_ConstantInt(&ub)) ||
      !matchPattern(loop.getStep()[dim], m_ConstantInt(&step)) ||
      lb.getSExtValue() != 0 || step.getSExtValue() != 1)
    return std::nullopt;
  return ub.getSExtValue();
}

namespace {
struct DistributeWorkgroupsPass
    : flow::impl::DistributeWorkgroupsPassBase<DistributeWorkgroupsPass> {
  void runOnOperation() override {
    for (func::FuncOp kernel : getOperation().getOps<func::FuncOp>())
      if (kernel->hasAttr("flow.kernel") && !kernel.isExternal())
        distribute(kernel);
  }

  void distribute(func::FuncOp kernel) {
    MLIRContext *ctx = &getContext();
    Type index = IndexType::get(ctx);
    unsigned n = kernel.getNumArguments();
    if (failed(kernel.insertArguments({n, n}, {index, index}, {},
                                      {kernel.getLoc(), kernel.getLoc()})))
      return signalPassFailure();
    Value wg = kernel.getArgument(n), nwg = kernel.getArgument(n + 1);

    int64_t extent = 1;
    if (auto attr = kernel->getAttrOfType<IntegerAttr>("flow.workgroup_extent"))
      extent = attr.getInt();
    // Each top-level loop is split on its first dimension of more than
    // one iteration (the rows; dimensions of one come first when the
    // result's leading dimensions are 1).
    SmallVector<std::pair<scf::ParallelOp, unsigned>> loops;
    bool splittable = extent > 1;
    for (Operation &op : kernel.getBody().front()) {
      if (!splittable)
        break;
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        unsigned dim = 0, rank = loop.getNumLoops();
        std::optional<int64_t> trips = tripCount(loop, 0);
        while (trips && *trips == 1 && dim + 1 < rank)
          trips = tripCount(loop, ++dim);
        splittable = trips && *trips == extent;
        loops.push_back({loop, dim});
      } else if (mayWriteArgument(&op, kernel)) {
        splittable = false;
      }
    }
    splittable &= !loops.empty();
    // The runtime never runs more workgroups than it has threads (4096 at
    // most), so a cap loses nothing; it keeps the count within the
    // executable's 32-bit field and `wg * rows` below within 64 bits.
    constexpr int64_t kMaxWorkgroups = 1 << 16;
    kernel->setAttr("flow.max_workgroups",
                    IntegerAttr::get(IntegerType::get(ctx, 64),
                                     splittable ? std::min(extent, kMaxWorkgroups)
                                                : 1));
    if (!splittable)
      return;

    OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
    Location loc = kernel.getLoc();
    Value rows = arith::ConstantIndexOp::create(b, loc, extent);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value lo = arith::DivUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, wg, rows), nwg);
    Value hi = arith::DivUIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, arith::AddIOp::create(b, loc, wg, one),
                              rows),
        nwg);
    for (auto [loop, dim] : loops) {
      loop.getLowerBoundMutable().slice(dim, 1).assign(lo);
      loop.getUpperBoundMutable().slice(dim, 1).assign(hi);
    }
  }
};
} // namespace
