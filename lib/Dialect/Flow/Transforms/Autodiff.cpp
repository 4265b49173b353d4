//===- Autodiff.cpp - Reverse-mode differentiation of a scalar loss -------===//
//
// Part of the Flow project.
//
// For each function with arguments marked `flow.requires_grad`: the ops
// computing the gradient of its first result (the loss) with respect to
// those arguments, built from each op's vector-Jacobian product
// (GradientOpInterface, FlowGradients.cpp) in reverse program order, and
// returned after the function's results.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowGradient.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

struct AutodiffPass : flow::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      SmallVector<unsigned> wrt;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (func.getArgAttr(i, FlowDialect::getRequiresGradAttrName()))
          wrt.push_back(i);
      if (wrt.empty())
        continue;
      if (failed(differentiate(module, func, wrt)))
        return signalPassFailure();
    }
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp func,
                              ArrayRef<unsigned> wrt);
  /// Copies the recomputed ops of `forward` before their backward readers.
  LogicalResult recomputeInBackward(func::FuncOp func,
                                    ArrayRef<Operation *> forward);
};

} // namespace

LogicalResult AutodiffPass::differentiate(ModuleOp module, func::FuncOp func,
                                          ArrayRef<unsigned> wrt) {
  if (!SymbolTable::symbolKnownUseEmpty(func, module))
    return func.emitError("flow-autodiff: @")
           << func.getSymName()
           << " is called from elsewhere; differentiate a function no other "
              "function calls (inline it first)";
  if (!func.getBody().hasOneBlock())
    return func.emitError("flow-autodiff: @")
           << func.getSymName() << " has several blocks";
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return func.emitError("flow-autodiff: @")
           << func.getSymName()
           << " returns nothing; its first result must be the loss";
  Value loss = ret.getOperand(0);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || !isa<FloatType>(lossType.getElementType()) ||
      lossType.getNumElements() != 1)
    return func.emitError("flow-autodiff: the loss (result 0 of @")
           << func.getSymName() << ") is " << loss.getType()
           << "; the loss must be a float tensor of one element (a scalar)";

  // The values the marked arguments reach.
  DenseSet<Value> active;
  for (unsigned i : wrt)
    active.insert(func.getArgument(i));
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitError("flow-autodiff: '")
             << op.getName() << "' has regions; differentiate before fusion";
    forward.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      active.insert(op.result_begin(), op.result_end());
  }

  // Gradients, last op first, built after the forward ops.
  OpBuilder b(ret);
  DenseMap<Value, Value> grads;
  grads[loss] = ConstantOp::create(
      b, loss.getLoc(),
      DenseElementsAttr::get(lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0)));
  for (Operation *op : llvm::reverse(forward)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(grads.lookup(r));
    if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError("flow-autodiff: '")
             << op->getName()
             << "' has no gradient rule, and the loss depends on a "
                "differentiated argument through it";
    SmallVector<Value> operandGrads(op->getNumOperands());
    b.setInsertionPoint(ret);
    if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    ++numOpsDifferentiated;
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !active.contains(operand))
        continue;
      if (grad.getType() != operand.getType())
        return op->emitError("flow-autodiff: the gradient rule of '")
               << op->getName() << "' built a " << grad.getType()
               << " for an operand of type " << operand.getType();
      Value &sum = grads[operand];
      sum = sum ? AddOp::create(b, op->getLoc(), sum, grad).getResult() : grad;
    }
  }

  // The gradients as new results.
  SmallVector<Value> results(ret.getOperands());
  for (unsigned i : wrt) {
    BlockArgument arg = func.getArgument(i);
    Value grad = grads.lookup(arg);
    if (!grad) {
      auto type = cast<RankedTensorType>(arg.getType());
      InFlightDiagnostic warning =
          mlir::emitWarning(arg.getLoc(), "flow-autodiff: argument #");
      warning << i;
      if (auto name = func.getArgAttrOfType<StringAttr>(
              i, FlowDialect::getStateAttrName()))
        warning << " ('" << name.getValue() << "')";
      warning << " of @" << func.getSymName()
              << " does not reach the loss; its gradient is zero";
      grad = ConstantOp::create(
          b, arg.getLoc(),
          DenseElementsAttr::get(type,
                                 b.getFloatAttr(type.getElementType(), 0.0)));
    }
    unsigned index = results.size();
    results.push_back(grad);
    if (failed(func.insertResult(
            index, grad.getType(),
            b.getDictionaryAttr(b.getNamedAttr(
                FlowDialect::getGradientOfAttrName(),
                b.getI64IntegerAttr(i))))))
      return failure();
    func.removeArgAttr(i, FlowDialect::getRequiresGradAttrName());
  }
  ret->setOperands(results);
  return recomputeInBackward(func, forward);
}

LogicalResult AutodiffPass::recomputeInBackward(func::FuncOp func,
                                                ArrayRef<Operation *> forward) {
  llvm::StringSet<> names;
  for (const std::string &name : recompute)
    names.insert(name);
  if (auto attr = func->getAttrOfType<ArrayAttr>(
          FlowDialect::getRecomputeAttrName())) {
    for (Attribute a : attr) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name)
        return func.emitError("flow-autodiff: '")
               << FlowDialect::getRecomputeAttrName()
               << "' must be an array of op names, got " << attr;
      names.insert(name.getValue());
    }
    func->removeAttr(FlowDialect::getRecomputeAttrName());
  }
  if (names.empty())
    return success();
  for (const auto &entry : names) {
    StringRef name = entry.getKey();
    if (name != "elementwise" &&
        !RegisteredOperationName::lookup(name, func.getContext()))
      return func.emitError("flow-autodiff: cannot recompute '")
             << name << "': not an op (op names such as flow.gelu, or "
             << "elementwise)";
  }
  auto chosen = [&](Operation *op) {
    return op->getNumRegions() == 0 && isPure(op) &&
           (names.contains(op->getName().getStringRef()) ||
            (names.contains("elementwise") && isElementwise(op)));
  };
  DenseSet<Operation *> inForward(forward.begin(), forward.end());
  // Last op first: a copy of a later op is a backward reader of the ops
  // that made its operands, so their copies go before it.
  for (Operation *op : llvm::reverse(forward)) {
    if (!chosen(op))
      continue;
    Operation *first = nullptr;
    for (Operation *user : op->getUsers())
      if (!inForward.contains(user) && !isa<func::ReturnOp>(user) &&
          (!first || user->isBeforeInBlock(first)))
        first = user;
    if (!first)
      continue;
    OpBuilder b(first);
    Operation *copy = b.clone(*op);
    for (auto [value, copied] :
         llvm::zip(op->getResults(), copy->getResults()))
      value.replaceUsesWithIf(copied, [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return !inForward.contains(user) && !isa<func::ReturnOp>(user) &&
               user != copy;
      });
    ++numOpsRecomputed;
  }
  return success();
}
