//===- OutlineKernels.cpp - Split functions into host schedule and kernels ===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// How many rows of `op`'s result can be computed independently of each
/// other; 1 when they cannot. The rows are the first result dimension
/// longer than 1 (dimensions of 1 before it, as in a batch of one, carry
/// no work), provided the op combines no elements across it or any
/// dimension before it.
static int64_t workgroupExtent(Operation *op) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() == 0)
    return 1;
  int64_t dim = 0;
  while (dim < type.getRank() && type.getDimSize(dim) == 1)
    ++dim;
  if (dim == type.getRank() || type.getDimSize(dim) < 2)
    return 1;
  bool separable =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto r) {
            // The input dimension the rows come from: reduced axes before
            // it would be combined across rows.
            SmallVector<int64_t> axes = llvm::to_vector(r.getAxes());
            llvm::sort(axes);
            int64_t inputDim = dim;
            if (!r.getKeepdims())
              for (int64_t axis : axes)
                if (axis <= inputDim)
                  ++inputDim;
            return llvm::all_of(axes, [&](int64_t a) { return a > inputDim; });
          })
          .Case<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(
              [&](auto r) { return r.getAxis() > dim; })
          .Default(true);
  return separable ? type.getDimSize(dim) : 1;
}

static bool isEmpty(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getNumElements() == 0;
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

namespace {
struct OutlineKernelsPass
    : flow::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  using OutlineKernelsPassBase::OutlineKernelsPassBase;

  /// Ops the host schedule runs itself.
  bool staysOnHost(Operation *op) const {
    if (isa<ConstantOp, ParameterOp, ReshapeOp, AnnotateOp, AllReduceOp,
            AllGatherOp, ReduceScatterOp, AllToAllOp>(op))
      return true;
    if (auto matmul = dyn_cast<MatmulOp>(op))
      return libraryMatmul &&
             cast<RankedTensorType>(matmul.getType()).getElementType().isF32();
    return false;
  }

  /// Moves `op` into a new kernel placed after `insertAfter`; returns it.
  func::FuncOp outline(func::FuncOp host, Operation *insertAfter, Operation *op,
                       SymbolTable &symbols, unsigned index) {
    OpBuilder builder(host.getContext());
    // Empty operands are rebuilt inside the kernel: a kernel never binds a
    // buffer of zero elements.
    SmallVector<Value> args;
    for (Value operand : op->getOperands())
      if (!isSplatConstant(operand) && !isEmpty(operand) &&
          !llvm::is_contained(args, operand))
        args.push_back(operand);

    builder.setInsertionPointAfter(insertAfter);
    auto kernel = func::FuncOp::create(
        builder, op->getLoc(), (host.getSymName() + "_k" + Twine(index)).str(),
        builder.getFunctionType(ValueRange(args).getTypes(),
                                op->getResultTypes()));
    kernel.setPrivate();
    kernel->setAttr("flow.kernel", builder.getUnitAttr());
    kernel->setAttr("flow.workgroup_extent",
                    builder.getI64IntegerAttr(workgroupExtent(op)));
    symbols.insert(kernel);

    Block *body = kernel.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(args, body->getArguments()))
      mapping.map(value, arg);
    for (Value operand : op->getOperands()) {
      if (mapping.contains(operand))
        continue;
      if (isEmpty(operand))
        mapping.map(operand, emptyConstant(builder, op->getLoc(), operand));
      else
        builder.clone(*operand.getDefiningOp(), mapping);
    }
    Operation *clone = builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc(), clone->getResults());

    builder.setInsertionPoint(op);
    auto call = func::CallOp::create(builder, op->getLoc(), kernel, args);
    op->replaceAllUsesWith(call.getResults());
    op->erase();
    ++numKernels;
    return kernel;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || func.isPrivate() || func->hasAttr("flow.kernel"))
        continue;
      unsigned index = 0;
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) {
        if (isa<FlowDialect>(op->getDialect()) && !staysOnHost(op))
          ops.push_back(op);
      });
      Operation *last = func;
      for (Operation *op : ops) {
        // A result with no elements needs no computation.
        if (llvm::all_of(op->getResults(), isEmpty)) {
          OpBuilder b(op);
          for (Value result : op->getResults())
            result.replaceAllUsesWith(emptyConstant(b, op->getLoc(), result));
          op->erase();
          continue;
        }
        last = outline(func, last, op, symbols, index++);
      }
      // Splat constants only kernels used are dead now.
      for (Block &block : func.getBody())
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
          if (isa<ConstantOp>(op) && op.use_empty())
            op.erase();
    }
  }
};
} // namespace
