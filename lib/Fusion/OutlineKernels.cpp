//===- OutlineKernels.cpp - Split functions into host schedule and kernels ===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Fusion/Passes.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "flow/Fusion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

static bool isEmpty(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 0;
}

/// An empty constant of `v`'s type, built at `b`.
static Value emptyConstant(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<Attribute>{}));
}

/// A splat constant: cheaper to rebuild inside a kernel than to pass.
static bool isSplatConstant(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  return dense && dense.isSplat();
}

/// The operands (indices into `args`) whose buffer the region's first result
/// may take over: every op is element-wise, and reads the operand at the
/// result's own shape (no broadcast), so each result element is written
/// after the only read of the operand element at the same place.
static SmallVector<int64_t> inPlaceOperands(DispatchRegionOp region,
                                            ArrayRef<Value> args) {
  SmallVector<int64_t> indices;
  Block &body = region.getBody().front();
  if (region.getNumResults() == 0 ||
      !llvm::all_of(body.without_terminator(),
                    [](Operation &op) { return isElementwise(&op); }))
    return indices;
  auto resultType = cast<RankedTensorType>(region.getResult(0).getType());
  for (auto [i, arg] : llvm::enumerate(args)) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (type != resultType)
      continue;
    bool sameShapeUses = llvm::all_of(arg.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (!region->isAncestor(user))
        return true;
      return llvm::all_of(user->getResults(), [&](Value r) {
        return cast<RankedTensorType>(r.getType()).getShape() ==
               type.getShape();
      });
    });
    if (sameShapeUses)
      indices.push_back(i);
  }
  return indices;
}

namespace {
struct OutlineKernelsPass
    : flow::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  /// Moves `region`'s ops into a new kernel placed after `insertAfter`;
  /// returns it.
  func::FuncOp outline(func::FuncOp host, Operation *insertAfter,
                       DispatchRegionOp region, SymbolTable &symbols,
                       unsigned index) {
    OpBuilder builder(host.getContext());
    Block &regionBody = region.getBody().front();
    // The values the region reads from above: the kernel's operands. Splat
    // and empty constants are rebuilt inside (a kernel never binds a
    // buffer of zero elements).
    SmallVector<Value> args, rebuilt;
    regionBody.walk([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        if (region->isAncestor(operand.getParentRegion()->getParentOp()))
          continue;
        if (isSplatConstant(operand) || isEmpty(operand)) {
          if (!llvm::is_contained(rebuilt, operand))
            rebuilt.push_back(operand);
        } else if (!llvm::is_contained(args, operand)) {
          args.push_back(operand);
        }
      }
    });

    builder.setInsertionPointAfter(insertAfter);
    auto kernel = func::FuncOp::create(
        builder, region.getLoc(),
        (host.getSymName() + "_k" + Twine(index)).str(),
        builder.getFunctionType(ValueRange(args).getTypes(),
                                region.getResultTypes()));
    kernel.setPrivate();
    kernel->setAttr("flow.kernel", builder.getUnitAttr());
    kernel->setAttr("flow.workgroup_extent",
                    builder.getI64IntegerAttr(region.getRows()));
    symbols.insert(kernel);

    Block *body = kernel.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(args, body->getArguments()))
      mapping.map(value, arg);
    for (Value value : rebuilt) {
      if (isEmpty(value))
        mapping.map(value, emptyConstant(builder, region.getLoc(), value));
      else
        builder.clone(*value.getDefiningOp(), mapping);
    }
    for (Operation &op : regionBody.without_terminator())
      builder.clone(op, mapping);
    SmallVector<Value> results = llvm::map_to_vector(
        regionBody.getTerminator()->getOperands(),
        [&](Value v) { return mapping.lookupOrDefault(v); });
    func::ReturnOp::create(builder, region.getLoc(), results);

    builder.setInsertionPoint(region);
    auto call = func::CallOp::create(builder, region.getLoc(), kernel, args);
    SmallVector<int64_t> inPlace = inPlaceOperands(region, args);
    if (!inPlace.empty())
      call->setAttr(FlowDialect::getInPlaceOperandsAttrName(),
                    builder.getDenseI64ArrayAttr(inPlace));
    region->replaceAllUsesWith(call.getResults());
    region->erase();
    ++numKernels;
    return kernel;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || func.isPrivate() || func->hasAttr("flow.kernel"))
        continue;
      // Every compute op must be in a region by now.
      WalkResult loose = func.walk([&](Operation *op) {
        if (!isa<FlowDialect>(op->getDialect()) ||
            isa<DispatchRegionOp, ReturnOp>(op) ||
            op->getParentOfType<DispatchRegionOp>() ||
            isa<ConstantOp, ParameterOp, PieceOffsetsOp, ReshapeOp, AnnotateOp,
                MeshOp, AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
                BroadcastOp, MatmulOp, Conv2dOp, AttentionOp>(op) ||
            isParameterConcat(op))
          return WalkResult::advance();
        op->emitOpError("is not in a flow.dispatch_region: run "
                        "flow-form-dispatch-regions before outlining");
        return WalkResult::interrupt();
      });
      if (loose.wasInterrupted())
        return signalPassFailure();
      unsigned index = 0;
      Operation *last = func;
      for (auto region : llvm::to_vector(func.getOps<DispatchRegionOp>()))
        last = outline(func, last, region, symbols, index++);
      // Splat constants only kernels used are dead now.
      for (Block &block : func.getBody())
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
          if (isa<ConstantOp>(op) && op.use_empty())
            op.erase();
    }
  }
};
} // namespace
