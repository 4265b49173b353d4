//===- TieState.cpp - State written into its own buffer -------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_TIESTATEPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// Whether `op` uses buffer `root` (or a view of it).
static bool usesBuffer(Operation *op, Value root) {
  return llvm::any_of(op->getOperands(),
                      [&](Value v) { return bufferRoot(v) == root; });
}

/// Whether `writer`, the last command reading `in`, may write `out` over
/// it: an element-wise kernel reading `in` only as an operand it may write
/// its result of that type over.
static bool writesOverInPlace(Operation *writer, Value in, Value out) {
  auto dispatch = dyn_cast<HostDispatchOp>(writer);
  if (!dispatch || in.getType() != out.getType() ||
      dispatch.getOutputs().front().getType() != out.getType())
    return false;
  std::optional<ArrayRef<int64_t>> inPlace = dispatch.getInPlaceOperands();
  if (!inPlace)
    return false;
  for (auto [k, v] : llvm::enumerate(dispatch.getInputs()))
    if (bufferRoot(v) == in &&
        (v != in || !llvm::is_contained(*inPlace, (int64_t)k)))
      return false;
  return llvm::all_of(dispatch.getOutputs(), [&](Value v) {
    return bufferRoot(v) != out || v == out;
  });
}

namespace {
struct TieStatePass : flow::impl::TieStatePassBase<TieStatePass> {
  using TieStatePassBase::TieStatePassBase;

  void runOnOperation() override {
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      auto outputs = func->getAttrOfType<IntegerAttr>(
          FlowDialect::getHostOutputsAttrName());
      if (!outputs || func.isExternal())
        continue;
      unsigned numOutputs = outputs.getInt();
      unsigned numInputs = func.getNumArguments() - numOutputs;
      llvm::StringMap<unsigned> inputOf;
      for (unsigned i = 0; i < numInputs; ++i)
        if (auto name = func.getArgAttrOfType<StringAttr>(
                i, FlowDialect::getStateAttrName()))
          inputOf.try_emplace(name.getValue(), i);
      for (unsigned j = numInputs; j < func.getNumArguments(); ++j) {
        auto name = func.getArgAttrOfType<StringAttr>(
            j, FlowDialect::getStateAttrName());
        if (!name || func.getArgAttr(j, FlowDialect::getTiedInputAttrName()))
          continue;
        auto it = inputOf.find(name.getValue());
        if (it == inputOf.end())
          continue;
        unsigned i = it->second;
        inputOf.erase(it); // one output per input
        if (func.getArgument(i).getType() != func.getArgument(j).getType())
          continue;
        tie(func, func.getArgument(i), func.getArgument(j));
        func.setArgAttr(j, FlowDialect::getTiedInputAttrName(),
                        IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                         i));
      }
    }
  }

  /// Makes the commands writing `out` write `in`.
  void tie(func::FuncOp func, Value in, Value out) {
    Block &body = func.getBody().front();
    Operation *writer = nullptr;
    for (Operation &op : body)
      if (isHostCommand(&op) && usesBuffer(&op, out)) {
        writer = &op;
        break;
      }
    if (!writer) // nothing writes it: the old value stays
      return;
    // The state returned unchanged: no copy at all.
    if (auto copy = dyn_cast<HostCopyOp>(writer);
        copy && copy.getSource() == in && copy.getTarget() == out) {
      copy.erase();
      out.replaceAllUsesWith(in);
      ++numInPlace;
      return;
    }
    // Every other reader of the old value must run before the write. A
    // GEMM epilogue runs during the GEMM before it, which counts as the
    // writer's position.
    Operation *alongside = nullptr;
    if (auto d = dyn_cast<HostDispatchOp>(writer); d && d.getGemmEpilogue())
      alongside = previousHostCommand(writer);
    bool sound = true, seenWriter = false;
    for (Operation &op : body) {
      if (!isHostCommand(&op))
        continue;
      if (&op == writer) {
        seenWriter = true;
        if (usesBuffer(&op, in) && !writesOverInPlace(&op, in, out))
          sound = false;
        continue;
      }
      if (usesBuffer(&op, in) && (seenWriter || &op == alongside))
        sound = false;
    }
    if (sound) {
      out.replaceAllUsesWith(in);
      ++numInPlace;
      return;
    }
    // Computed aside, copied over the old value once nothing reads it.
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    auto aside = HostAllocOp::create(b, out.getLoc(),
                                     cast<MemRefType>(out.getType()));
    out.replaceAllUsesWith(aside.getResult());
    b.setInsertionPoint(body.getTerminator());
    HostCopyOp::create(b, out.getLoc(), aside, in);
    ++numCopied;
  }
};
} // namespace
