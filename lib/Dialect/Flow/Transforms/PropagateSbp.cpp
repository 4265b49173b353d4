//===- PropagateSbp.cpp - Give every value an SBP -------------------------===//
//
// Part of the Flow project.
//
// Greedy, in program order: every op takes, among its valid nd signatures,
// the one whose operands are cheapest to box into from the SBPs they have
// (ties: the one that splits the op's work the most). SBPs pinned by
// function arguments and flow.annotate are kept, and so is a signature
// written on an op (flow.operand_sbp and flow.sbp, as this pass writes it); function results take
// their `flow.sbp` (B by default: every device gets the whole result).
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_PROPAGATESBPPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

static SbpAttr toAttr(MLIRContext *ctx, ArrayRef<SbpDim> sbp) {
  return SbpAttr::get(ctx, sbp);
}

static std::string str(ArrayRef<SbpDim> sbp) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(sbp, os);
  os << "]";
  return s;
}

namespace {
struct PropagateSbpPass
    : flow::impl::PropagateSbpPassBase<PropagateSbpPass> {
  using PropagateSbpPassBase::PropagateSbpPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto meshRef = func->getAttrOfType<FlatSymbolRefAttr>(
        FlowDialect::getMeshAttrName());
    if (!meshRef)
      return; // a single-device function
    MeshOp mesh = lookupMesh(func, meshRef);
    if (!mesh) {
      func.emitError("'flow.mesh' names no mesh");
      return signalPassFailure();
    }
    ArrayRef<int64_t> meshShape = mesh.getShape();
    unsigned rank = meshShape.size();
    MLIRContext *ctx = &getContext();
    StringRef sbpName = FlowDialect::getSbpAttrName();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("SBP propagation needs a single-block function");
      return signalPassFailure();
    }

    DenseMap<Value, NdSbp> sbp;
    for (BlockArgument arg : func.getArguments()) {
      auto pinned = func.getArgAttrOfType<SbpAttr>(arg.getArgNumber(), sbpName);
      sbp[arg] = pinned ? NdSbp(pinned.getDims()) : broadcastSbp(rank);
    }

    for (Operation &op : func.getBody().front()) {
      if (auto annotate = dyn_cast<AnnotateOp>(op)) {
        if (annotate.getMesh() != meshRef.getValue()) {
          annotate.emitError("annotates on mesh @")
              << annotate.getMesh() << " but the function runs on "
              << meshRef;
          return signalPassFailure();
        }
        sbp[annotate.getResult()] = NdSbp(annotate.getSbp().getDims());
        continue;
      }
      if (isa<func::ReturnOp>(op))
        continue;
      if (printRules) {
        if (auto iface = dyn_cast<SbpOpInterface>(op)) {
          InFlightDiagnostic remark = op.emitRemark("rules:");
          for (const SbpSignature &r : iface.getSbpRules())
            remark << " (" << str(r.operands) << " -> " << str(r.results)
                   << (r.evenSplits ? " even" : "") << ")";
        }
      }
      SmallVector<NdSbpSignature> candidates =
          getNdSbpSignatures(&op, meshShape);
      if (candidates.empty()) {
        op.emitError("has no SBP signature: it cannot be placed on a mesh");
        return signalPassFailure();
      }
      // A signature written on the op (flow.operand_sbp and flow.sbp) is
      // kept: it must be one of the op's.
      const NdSbpSignature *pinned = nullptr;
      auto pinnedOperands =
          op.getAttrOfType<ArrayAttr>(FlowDialect::getOperandSbpAttrName());
      auto pinnedResults = op.getAttrOfType<ArrayAttr>(sbpName);
      if (pinnedOperands || pinnedResults) {
        auto same = [](ArrayAttr attrs, ArrayRef<NdSbp> sbps) {
          if (!attrs || attrs.size() != sbps.size())
            return false;
          for (auto [a, s] : llvm::zip(attrs, sbps)) {
            auto sbp = dyn_cast<SbpAttr>(a);
            if (!sbp || NdSbp(sbp.getDims()) != s)
              return false;
          }
          return true;
        };
        for (const NdSbpSignature &sig : candidates)
          if (same(pinnedOperands, sig.operands) &&
              same(pinnedResults, sig.results))
            pinned = &sig;
        if (!pinned) {
          op.emitError("the SBP signature written on the op is not one of "
                       "its signatures on this mesh (print them with "
                       "--flow-propagate-sbp=print-rules)");
          return signalPassFailure();
        }
      }
      double bestBoxing = std::numeric_limits<double>::infinity();
      double bestCompute = bestBoxing;
      const NdSbpSignature *best = nullptr;
      double compute = 0;
      if (auto iface = dyn_cast<SbpOpInterface>(op))
        compute = iface.getComputeCost();
      for (const NdSbpSignature &sig : candidates) {
        if (pinned && &sig != pinned)
          continue;
        double boxing = sig.collectiveCost;
        for (auto [operand, want] : llvm::zip(op.getOperands(), sig.operands))
          boxing += boxingCost(sbp[operand], want,
                               cast<RankedTensorType>(operand.getType()),
                               meshShape);
        double share = compute;
        for (unsigned axis = 0; axis < rank; ++axis) {
          bool divided = llvm::any_of(sig.results, [&](const NdSbp &s) {
            return !s[axis].isBroadcast();
          });
          if (divided)
            share /= static_cast<double>(meshShape[axis]);
        }
        if (boxing < bestBoxing ||
            (boxing == bestBoxing && share < bestCompute)) {
          bestBoxing = boxing;
          bestCompute = share;
          best = &sig;
        }
      }
      SmallVector<Attribute> operands, results;
      for (const NdSbp &s : best->operands)
        operands.push_back(toAttr(ctx, s));
      for (auto [result, s] : llvm::zip(op.getResults(), best->results)) {
        results.push_back(toAttr(ctx, s));
        sbp[result] = s;
      }
      op.setAttr(FlowDialect::getSbpAttrName(), ArrayAttr::get(ctx, results));
      op.setAttr(FlowDialect::getOperandSbpAttrName(),
                 ArrayAttr::get(ctx, operands));
      ++numOpsPlaced;
    }

    // Results: B unless the signature says otherwise; a state's next value
    // lies as its current value (the argument of its `flow.state` name), so
    // each device updates its own piece where it keeps it.
    StringRef stateName = FlowDialect::getStateAttrName();
    llvm::StringMap<NdSbp> stateSbp;
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        stateName))
        stateSbp.try_emplace(name.getValue(), sbp[arg]);
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      if (func.getResultAttr(i, sbpName))
        continue;
      NdSbp layout = broadcastSbp(rank);
      if (auto name = func.getResultAttrOfType<StringAttr>(i, stateName))
        if (auto it = stateSbp.find(name.getValue()); it != stateSbp.end())
          layout = it->second;
      func.setResultAttr(i, sbpName, toAttr(ctx, layout));
    }
  }
};
} // namespace
