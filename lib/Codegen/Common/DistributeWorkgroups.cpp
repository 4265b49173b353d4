//===- DistributeWorkgroups.cpp - Split kernel loops over workgroups ------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Codegen/Common/Passes.h"
#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_DISTRIBUTEWORKGROUPSPASS
#include "flow/Codegen/Common/Passes.h.inc"
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

/// The memref.load or memref.store `op`'s buffer and indices; null buffer
/// for other ops.
static std::pair<Value, ValueRange> access(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return {load.getMemRef(), load.getIndices()};
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return {store.getMemRef(), store.getIndices()};
  return {Value(), ValueRange()};
}

/// True if `index` is always 0: the constant, or the induction variable of
/// a loop dimension that runs once from 0 (a unit dimension's loop, before
/// canonicalization folds it).
static bool isAlwaysZero(Value index) {
  if (isConstantIntValue(index, 0))
    return true;
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg)
    return false;
  auto loop = dyn_cast<scf::ParallelOp>(arg.getOwner()->getParentOp());
  if (!loop || arg.getOwner() != loop.getBody())
    return false;
  unsigned dim = arg.getArgNumber();
  std::optional<int64_t> trips = tripCount(loop, dim);
  return trips && *trips == 1;
}

/// True if each workgroup, running its rows of every split loop, reads
/// only what it wrote itself: every buffer the kernel both writes and reads
/// (an intermediate, or a result a later loop reads) is indexed on its rows
/// by the split induction variable of the loop around the access, and has
/// `extent` rows. A fused kernel passes values between its loops through
/// such buffers; a workgroup that read another's rows would read garbage.
static bool rowsStayLocal(
    func::FuncOp kernel, int64_t extent,
    ArrayRef<std::pair<scf::ParallelOp, unsigned>> loops) {
  DenseMap<Operation *, Value> splitIV;
  for (auto [loop, dim] : loops)
    splitIV[loop] = loop.getInductionVars()[dim];
  Block &body = kernel.getBody().front();
  // Every op that touches each buffer, and whether it writes it.
  llvm::MapVector<Value, SmallVector<Operation *>> uses;
  DenseSet<Value> written;
  bool unknown = false;
  kernel.walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return;
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (MemoryEffects::EffectInstance &e : list) {
      if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
        continue;
      Value target = e.getValue();
      if (!target) {
        unknown = true;
        continue;
      }
      Value root = viewRoot(target);
      uses[root].push_back(op);
      if (isa<MemoryEffects::Write>(e.getEffect()))
        written.insert(root);
    }
  });
  if (unknown)
    return false;
  for (auto &[buffer, ops] : uses) {
    // A tile's scratch buffer: each workgroup has its own (one per call).
    if (Operation *def = buffer.getDefiningOp();
        def && def->hasAttr(FlowDialect::getScratchAttrName()))
      continue;
    // A buffer the kernel allocates and writes only outside the loops (a
    // boolean operand widened from its byte before them): each workgroup's
    // call makes its own and fills it whole before any row reads it.
    if (Operation *def = buffer.getDefiningOp();
        def && isa<memref::AllocOp, memref::AllocaOp>(def) &&
        def->getBlock() == &body &&
        llvm::all_of(ops, [&](Operation *op) {
          auto effects = dyn_cast<MemoryEffectOpInterface>(op);
          return op->getBlock() == &body || !effects ||
                 !effects.hasEffect<MemoryEffects::Write>();
        }))
      continue;
    if (!written.contains(buffer) ||
        llvm::all_of(ops, [&](Operation *op) {
          return isa<memref::StoreOp>(op);
        }))
      continue;
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (!type || !type.hasStaticShape())
      return false;
    int64_t row = 0;
    while (row < type.getRank() && type.getDimSize(row) == 1)
      ++row;
    if (row == type.getRank() || type.getDimSize(row) != extent)
      return false;
    for (Operation *op : ops) {
      auto [memref, indices] = access(op);
      if (!memref)
        return false; // not a load or store
      // The views from the buffer down to the accessed memref.
      SmallVector<Operation *> views;
      for (Value v = memref; v != buffer;) {
        Operation *def = v.getDefiningOp();
        if (!def || !isa<memref::SubViewOp, memref::CollapseShapeOp,
                         memref::ExpandShapeOp>(def))
          return false;
        views.push_back(def);
        v = def->getOperand(0);
      }
      // Follows the row dimension down the views. A view that keeps every
      // row where it is (a rank-preserving subview taking all rows, as
      // padding writes through) indexes rows as its source does; one that
      // takes a single row (a row tile's slice of the result) selects the
      // row by its offset; a reshape of unit dimensions (a row tile whose
      // unit dimensions were folded) moves the row's position.
      int64_t at = row;
      Value rowOffset;
      for (Operation *def : llvm::reverse(views)) {
        if (auto view = dyn_cast<memref::SubViewOp>(def)) {
          if (view.getSourceType().getRank() != view.getType().getRank())
            return false;
          ArrayRef<int64_t> offsets = view.getStaticOffsets(),
                            sizes = view.getStaticSizes(),
                            strides = view.getStaticStrides();
          if (strides[at] != 1)
            return false;
          if (offsets[at] == 0 && sizes[at] == extent)
            continue;
          auto offset = dyn_cast<Value>(view.getMixedOffsets()[at]);
          if (rowOffset || !offset || sizes[at] != 1)
            return false;
          rowOffset = offset;
          continue;
        }
        // A reshape: the row must stay a whole dimension of its own (its
        // group's other dimensions are units).
        auto collapse = dyn_cast<memref::CollapseShapeOp>(def);
        auto expand = dyn_cast<memref::ExpandShapeOp>(def);
        MemRefType wide = collapse ? collapse.getSrcType()
                                   : expand.getResultType();
        SmallVector<ReassociationIndices> groups =
            collapse ? collapse.getReassociationIndices()
                     : expand.getReassociationIndices();
        std::optional<int64_t> moved;
        for (auto [g, group] : llvm::enumerate(groups)) {
          bool holds = collapse ? llvm::is_contained(group, at)
                                : int64_t(g) == at;
          if (!holds)
            continue;
          for (int64_t d : group)
            if (d != (collapse ? at : -1) && wide.getDimSize(d) != 1) {
              if (collapse || moved)
                return false;
              moved = d;
            }
          if (collapse)
            moved = g;
          else if (!moved) // the row is one of the group's unit dimensions
            return false;
        }
        if (!moved)
          return false;
        at = *moved;
      }
      Operation *top = op;
      while (top->getBlock() != &body)
        top = top->getParentOp();
      Value iv = splitIV.lookup(top);
      if (!iv)
        return false;
      if (rowOffset ? rowOffset != iv || !isAlwaysZero(indices[at])
                    : indices[at] != iv)
        return false;
    }
  }
  return true;
}

/// The kernel's row count in this call: `extent` over the values of the
/// size symbols, which the kernel's last input holds (in the order of its
/// `flow.dims`). Null, with an error, where the kernel lacks them.
static Value rowCount(OpBuilder &b, func::FuncOp kernel, StringAttr extent) {
  Location loc = kernel.getLoc();
  Extent rows;
  std::string error;
  auto dims = kernel->getAttrOfType<ArrayAttr>(FlowDialect::getDimsAttrName());
  auto numOutputs =
      kernel->getAttrOfType<IntegerAttr>(FlowDialect::getNumOutputsAttrName());
  // The arguments: inputs (the sizes last), outputs, workgroup id and count.
  int64_t at = (int64_t)kernel.getNumArguments() - 2 -
               (numOutputs ? numOutputs.getInt() : 0) - 1;
  auto sizesType = at >= 0
                       ? dyn_cast<MemRefType>(kernel.getArgument(at).getType())
                       : MemRefType();
  if (!Extent::parse(extent.str(), rows, error) || !dims || !sizesType ||
      sizesType.getRank() != 1 || !sizesType.getElementType().isInteger(64) ||
      sizesType.getDimSize(0) != (int64_t)dims.size()) {
    kernel.emitError("kernel over rows of extent ")
        << extent.getValue()
        << " has no size symbols to count them from (its flow.dims and "
           "its last input, from flow-bound-symbolic-shapes)";
    return Value();
  }
  Value sizes = kernel.getArgument(at);
  auto symbol = [&](const std::string &name) -> Value {
    for (auto [i, entry] : llvm::enumerate(dims))
      if (cast<DimAttr>(entry).getName().getValue() == name) {
        Value index = arith::ConstantIndexOp::create(b, loc, i);
        Value v = memref::LoadOp::create(b, loc, sizes, index);
        return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
      }
    return Value();
  };
  // sum of coefficient * product of symbols.
  Value sum = arith::ConstantIndexOp::create(b, loc, 0);
  for (const auto &[monomial, coefficient] : rows.terms()) {
    Value term = arith::ConstantIndexOp::create(b, loc, coefficient);
    for (const std::string &name : monomial) {
      Value v = symbol(name);
      if (!v) {
        kernel.emitError("kernel's rows use size symbol '")
            << name << "', which its flow.dims does not declare";
        return Value();
      }
      term = arith::MulIOp::create(b, loc, term, v);
    }
    sum = arith::AddIOp::create(b, loc, sum, term);
  }
  return sum;
}

namespace {
struct DistributeWorkgroupsPass
    : mlir::flow::impl::DistributeWorkgroupsPassBase<DistributeWorkgroupsPass> {
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
    splittable = splittable && rowsStayLocal(kernel, extent, loops);
    // Rows counted at run time: the split is what keeps each loop within
    // the call's rows, so a kernel that cannot split cannot run.
    auto rowExtent =
        kernel->getAttrOfType<StringAttr>(FlowDialect::getRowExtentAttrName());
    if (rowExtent && !splittable) {
      kernel.emitError("kernel over rows of extent ")
          << rowExtent.getValue()
          << " does not split into its rows after lowering (a loop of it "
             "is not over the rows): this is not compiled for symbolic "
             "rows yet";
      return signalPassFailure();
    }
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
    Value rows = rowExtent ? rowCount(b, kernel, rowExtent)
                           : arith::ConstantIndexOp::create(b, loc, extent);
    if (!rows)
      return signalPassFailure();
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
