//===- BoundSymbolicShapes.cpp - Symbolic shapes at their upper bounds ----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A tensor whose only symbolic dimension is its row dimension (the first one
// that is not a static 1) is, in row-major order, its leading rows: a call
// with fewer rows fills a prefix of the buffer planned for the upper bound.
// So such a program compiles at its upper bounds, and only the number of
// rows each kernel and library GEMM runs over is taken at run time.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Fusion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_BOUNDSYMBOLICSHAPESPASS
#include "flow/Fusion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// Replaces every type under `root` (its results, block arguments and, for
/// a function, its signature) by its upper bound over `dims`.
static LogicalResult boundTypes(Operation *root, ArrayAttr dims) {
  auto bound = [&](Type type) -> Type {
    if (!isSymbolic(type))
      return type;
    FailureOr<RankedTensorType> b = upperBoundType(type, dims);
    return succeeded(b) ? Type(*b) : Type();
  };
  // Pre-order, block arguments first: an op's operands are bounded before
  // the op is (a slice reads its input's bounded shape).
  WalkResult walk = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (Type t = bound(arg.getType()))
            arg.setType(t);
    for (Value v : op->getResults()) {
      Type t = bound(v.getType());
      if (!t) {
        op->emitOpError("has a result whose symbols have no bounds");
        return WalkResult::interrupt();
      }
      v.setType(t);
    }
    // A symbolic dimension taken whole is a static one taken whole now.
    if (auto slice = dyn_cast<SliceOp>(op)) {
      SmallVector<int64_t> limits(slice.getLimits());
      ArrayRef<int64_t> shape = slice.getInput().getType().getShape();
      for (auto [d, limit] : llvm::enumerate(limits))
        if (limit == kSliceToEnd)
          limit = shape[d];
      slice.setLimits(limits);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (auto func = dyn_cast<func::FuncOp>(root)) {
    SmallVector<Type> inputs, results;
    for (Type t : func.getArgumentTypes())
      inputs.push_back(bound(t));
    for (Type t : func.getResultTypes())
      results.push_back(bound(t));
    func.setType(FunctionType::get(func.getContext(), inputs, results));
  }
  return success();
}

namespace {
struct BoundSymbolicShapesPass
    : mlir::flow::impl::BoundSymbolicShapesPassBase<BoundSymbolicShapesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // The function each kernel is called from (kernels are bound once).
    DenseMap<Operation *, func::FuncOp> callerOf;
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      ArrayAttr dims = getSizeSymbols(func);
      if (!dims || dims.empty() ||
          func->hasAttr(FlowDialect::getKernelAttrName()))
        continue;
      if (failed(boundFunction(func, dims, symbols, callerOf)))
        return signalPassFailure();
    }
  }

  /// The kernel `kernel`'s rows, if symbolic: checks that every symbolic
  /// tensor in it has the same symbolic rows and that the kernel splits
  /// over them.
  FailureOr<std::optional<Extent>> kernelRows(func::FuncOp kernel,
                                              ArrayAttr dims) {
    std::optional<Extent> rows;
    WalkResult walk = walkFunctionTypes(kernel, [&](Type t, Operation *at) {
      if (!isSymbolic(t))
        return WalkResult::advance();
      std::string why;
      FailureOr<Extent> r = rowExtent(t, why);
      if (failed(r)) {
        at->emitOpError() << "has type " << t << ": " << why;
        return WalkResult::interrupt();
      }
      if (rows && *rows != *r) {
        at->emitOpError() << "has rows of extent " << r->str()
                          << " in a kernel whose rows are " << rows->str()
                          << ": a kernel over rows of two extents is not "
                             "compiled yet";
        return WalkResult::interrupt();
      }
      rows = *r;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (!rows)
      return std::optional<Extent>();
    FailureOr<std::pair<int64_t, int64_t>> range = extentBounds(*rows, dims);
    if (failed(range))
      return kernel.emitError("kernel's rows ")
             << rows->str() << " use a size symbol without bounds";
    auto extent = kernel->getAttrOfType<IntegerAttr>(
        FlowDialect::getWorkgroupExtentAttrName());
    if (range->first != range->second &&
        (!extent || extent.getInt() != range->second))
      return kernel.emitError("kernel over rows of extent ")
             << rows->str()
             << " combines its rows (a reduction or normalization across "
                "them, or rows that are not its results' leading "
                "dimension): this is not compiled for symbolic rows yet";
    return rows;
  }

  LogicalResult boundFunction(func::FuncOp func, ArrayAttr dims,
                              SymbolTable &symbols,
                              DenseMap<Operation *, func::FuncOp> &callerOf) {
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&func.getBody().front());
    Value sizes;
    auto getSizes = [&]() {
      if (!sizes)
        sizes = SymbolsOp::create(
            b, func.getLoc(),
            RankedTensorType::get({(int64_t)dims.size()}, b.getI64Type()));
      return sizes;
    };
    WalkResult walk = func.walk([&](Operation *op) {
      bool symbolic = llvm::any_of(op->getOperandTypes(), isSymbolic) ||
                      llvm::any_of(op->getResultTypes(), isSymbolic);
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto kernel = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!kernel || !kernel->hasAttr(FlowDialect::getKernelAttrName()))
          return WalkResult::advance();
        auto [it, fresh] = callerOf.try_emplace(kernel, func);
        if (!fresh && it->second != func &&
            getSizeSymbols(it->second) != dims) {
          kernel.emitError("kernel is called from functions with different "
                           "size symbols: @")
              << it->second.getName() << " and @" << func.getName();
          return WalkResult::interrupt();
        }
        if (fresh) {
          FailureOr<std::optional<Extent>> rows = kernelRows(kernel, dims);
          if (failed(rows))
            return WalkResult::interrupt();
          if (*rows) {
            FailureOr<std::pair<int64_t, int64_t>> range =
                extentBounds(**rows, dims);
            if (range->first != range->second) {
              kernel->setAttr(FlowDialect::getRowExtentAttrName(),
                              b.getStringAttr((*rows)->str()));
              kernel->setAttr(FlowDialect::getDimsAttrName(), dims);
              unsigned n = kernel.getNumArguments();
              if (failed(kernel.insertArgument(n, getSizes().getType(),
                                               DictionaryAttr(),
                                               kernel.getLoc())))
                return WalkResult::interrupt();
            }
          }
          if (failed(boundTypes(kernel, dims)))
            return WalkResult::interrupt();
        }
        if (auto rows = kernel->getAttr(FlowDialect::getRowExtentAttrName())) {
          call.getOperandsMutable().append(getSizes());
          call->setAttr(FlowDialect::getRowsAttrName(), rows);
        }
        return WalkResult::advance();
      }
      if (!symbolic)
        return WalkResult::advance();
      // The host's own ops on symbolic tensors.
      std::optional<Extent> rows;
      SmallVector<Type> types(op->getOperandTypes());
      llvm::append_range(types, op->getResultTypes());
      for (Type t : types) {
        if (!isSymbolic(t))
          continue;
        std::string why;
        FailureOr<Extent> r = rowExtent(t, why);
        if (failed(r)) {
          op->emitOpError() << "has type " << t << ": " << why;
          return WalkResult::interrupt();
        }
        if (!isa<ReshapeOp, func::ReturnOp>(op) && rows && *rows != *r) {
          op->emitOpError() << "has rows of extents " << rows->str() << " and "
                            << r->str() << ": this is not compiled yet";
          return WalkResult::interrupt();
        }
        rows = *r;
      }
      if (isa<ReshapeOp, func::ReturnOp>(op))
        return WalkResult::advance();
      if (auto matmul = dyn_cast<MatmulOp>(op)) {
        // Rows are the result's leading dimension: the lhs's rows (not its
        // contracted columns), and for a batched product the rhs's batch.
        bool batched = matmul.getType().getRank() > 2;
        if ((matmul.getTransposeLhs() && !batched &&
             isSymbolic(matmul.getLhs().getType())) ||
            (!batched && isSymbolic(matmul.getRhs().getType()))) {
          op->emitOpError("contracts over a symbolic dimension: this is not "
                          "compiled yet");
          return WalkResult::interrupt();
        }
        op->setAttr(FlowDialect::getRowsAttrName(),
                    b.getStringAttr(rows->str()));
        return WalkResult::advance();
      }
      if (isa<Conv2dOp, AttentionOp>(op)) {
        // The library counts the batch (a convolution's n, attention's
        // first leading dimension): the rows must be dimension 0.
        for (Type t : types) {
          FailureOr<Extents> e = getExtents(t);
          if (isSymbolic(t) && (failed(e) || (*e)[0].isConstant())) {
            op->emitOpError() << "has type " << t
                              << ": its symbolic rows are not its first "
                                 "dimension, which the library counts";
            return WalkResult::interrupt();
          }
        }
        op->setAttr(FlowDialect::getRowsAttrName(),
                    b.getStringAttr(rows->str()));
        return WalkResult::advance();
      }
      op->emitOpError("on symbolic shapes is not compiled yet (a library "
                      "matmul, convolution or attention, a kernel and a "
                      "reshape are)");
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
    // State (training) is not compiled with symbolic rows.
    for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
      if (isSymbolic(t) && func.getArgAttr(i, FlowDialect::getStateAttrName()))
        return func.emitError("argument #")
               << i << " is state of a symbolic type " << t
               << ": a function whose rows vary keeps no state yet";
    // The signature keeps its symbolic types for the executable writer.
    for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
      if (isSymbolic(t))
        func.setArgAttr(i, FlowDialect::getSymbolicTypeAttrName(),
                        TypeAttr::get(t));
    for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
      if (isSymbolic(t))
        func.setResultAttr(i, FlowDialect::getSymbolicTypeAttrName(),
                           TypeAttr::get(t));
    return boundTypes(func, dims);
  }
};
} // namespace
