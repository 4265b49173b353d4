//===- PropagateSbp.cpp - Give every value an SBP -------------------------===//
//
// Part of the Flow project.
//
// Greedy, in program order: every op takes, among its valid nd signatures,
// the one whose operands are cheapest to box into from the SBPs they have
// (ties: the one that splits the op's work the most); then moves of one op,
// or of one op with its users, that lower the plan's cost (the boxing of
// values as their users want them, and compute), until none helps. SBPs pinned by function arguments and flow.annotate are kept, and
// so is a signature written on an op (flow.operand_sbp and flow.sbp, as
// this pass writes it); function results take their `flow.sbp` (B by
// default: every device gets the whole result).
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
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
/// An op's signatures on the mesh and the one chosen.
struct Placed {
  SmallVector<NdSbpSignature> candidates;
  unsigned chosen = 0;
  bool pinned = false;
  double compute = 0;
  const NdSbpSignature &signature() const { return candidates[chosen]; }
};

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
    std::string why;
    std::optional<MeshSpec> spec = loadMeshSpec(meshSpec, why);
    if (!spec || !spec->fits(rank, why)) {
      func.emitError("mesh description: ") << why;
      return signalPassFailure();
    }
    StringRef sbpName = FlowDialect::getSbpAttrName();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("SBP propagation needs a single-block function");
      return signalPassFailure();
    }

    DenseMap<Value, NdSbp> sbp;
    DenseMap<Operation *, Placed> placedOps;
    for (BlockArgument arg : func.getArguments()) {
      auto pinned = func.getArgAttrOfType<SbpAttr>(arg.getArgNumber(), sbpName);
      sbp[arg] = pinned ? NdSbp(pinned.getDims()) : broadcastSbp(rank);
    }

    // What each function result is boxed into at the return: its
    // `flow.sbp`, else B, except a state's next value, which lies as its
    // current value (the argument of its `flow.state` name), so each device
    // updates its own piece where it keeps it.
    StringRef stateName = FlowDialect::getStateAttrName();
    llvm::StringMap<NdSbp> stateSbp;
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        stateName))
        stateSbp.try_emplace(name.getValue(), sbp[arg]);
    SmallVector<NdSbp> resultSbp;
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      NdSbp layout = broadcastSbp(rank);
      if (auto pinned = func.getResultAttrOfType<SbpAttr>(i, sbpName))
        layout = NdSbp(pinned.getDims());
      else if (auto name = func.getResultAttrOfType<StringAttr>(i, stateName))
        if (auto it = stateSbp.find(name.getValue()); it != stateSbp.end())
          layout = it->second;
      resultSbp.push_back(layout);
    }

    // The op's compute divided by the devices its signature splits it over.
    auto share = [&](const Placed &placed, const NdSbpSignature &sig) {
      double share = placed.compute;
      for (unsigned axis = 0; axis < rank; ++axis)
        if (llvm::any_of(sig.results, [&](const NdSbp &s) {
              return !s[axis].isBroadcast();
            }))
          share /= static_cast<double>(meshShape[axis]);
      return share;
    };

    // Gives `op` its signature `i`: its results take their SBPs.
    auto choose = [&](Operation *op, unsigned i) {
      Placed &placed = placedOps[op];
      placed.chosen = i;
      for (auto [result, s] :
           llvm::zip(op->getResults(), placed.signature().results))
        sbp[result] = s;
    };

    // Greedy, in program order.
    SmallVector<Operation *> order;
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
          for (const SbpSignature &r : iface.getSbpRules()) {
            remark << " (" << str(r.operands) << " -> " << str(r.results)
                   << (r.evenSplits ? " even" : "");
            if (r.blocks > 0)
              remark << " in " << r.blocks << " blocks";
            remark << ")";
          }
        }
      }
      Placed &placed = placedOps[&op];
      placed.candidates = getNdSbpSignatures(&op, meshShape, *spec);
      if (placed.candidates.empty()) {
        op.emitError("has no SBP signature: it cannot be placed on a mesh");
        return signalPassFailure();
      }
      order.push_back(&op);
      if (auto iface = dyn_cast<SbpOpInterface>(op))
        placed.compute = iface.getComputeCost();
      // A signature written on the op (flow.operand_sbp and flow.sbp) is
      // kept: it must be one of the op's.
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
        for (auto [i, sig] : llvm::enumerate(placed.candidates))
          if (same(pinnedOperands, sig.operands) &&
              same(pinnedResults, sig.results)) {
            placed.chosen = i;
            placed.pinned = true;
          }
        if (!placed.pinned) {
          op.emitError("the SBP signature written on the op is not one of "
                       "its signatures on this mesh (print them with "
                       "--flow-propagate-sbp=print-rules)");
          return signalPassFailure();
        }
      } else {
        double bestBoxing = std::numeric_limits<double>::infinity();
        double bestShare = bestBoxing;
        for (auto [i, sig] : llvm::enumerate(placed.candidates)) {
          double boxing = sig.collectiveCost;
          for (auto [operand, want] :
               llvm::zip(op.getOperands(), sig.operands))
            boxing += boxingCost(sbp[operand], want,
                                 cast<RankedTensorType>(operand.getType()),
                                 meshShape, *spec);
          double divided = share(placed, sig);
          // Times that differ by rounding alone are a tie.
          double tolerance =
              std::isfinite(bestBoxing) ? 1e-9 * bestBoxing : 0.0;
          if (boxing < bestBoxing - tolerance ||
              (boxing <= bestBoxing + tolerance && divided < bestShare)) {
            bestBoxing = boxing;
            bestShare = divided;
            placed.chosen = i;
          }
        }
      }
      choose(&op, placed.chosen);
    }

    // Refinement: greedy placement sees an op's operands but not its
    // users. A move gives one op another signature, alone or together with
    // its users (each then taking its best signature given the op's new
    // one: a norm and the reshape after it move as one); it is made when
    // it lowers the boxing of the values it touches as their users want
    // them plus the ops' compute (a weight's gradient is not computed
    // whole on every device to save its all-reduce). A value is boxed once
    // per distinct layout its users want (flow-partition emits identical
    // collectives once). Every move lowers the plan's total cost, so this
    // ends.
    auto wanted = [&](OpOperand &use) -> std::optional<NdSbp> {
      Operation *user = use.getOwner();
      if (auto annotate = dyn_cast<AnnotateOp>(user))
        return NdSbp(annotate.getSbp().getDims());
      if (isa<func::ReturnOp>(user))
        return resultSbp[use.getOperandNumber()];
      auto it = placedOps.find(user);
      if (it == placedOps.end())
        return std::nullopt;
      return it->second.signature().operands[use.getOperandNumber()];
    };
    // The boxing of `value` into each distinct layout its users want;
    // `visit` sees each step.
    auto boxValue = [&](Value value,
                        function_ref<void(unsigned, SbpDim, SbpDim, double)>
                            visit) {
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<NdSbp, 2> seen;
      double cost = 0;
      for (OpOperand &use : value.getUses()) {
        std::optional<NdSbp> want = wanted(use);
        if (!want || llvm::is_contained(seen, *want))
          continue;
        seen.push_back(*want);
        cost += forEachBoxingStep(sbp[value], *want, type, meshShape, *spec,
                                  visit);
      }
      return cost;
    };
    auto valueCost = [&](Value value) {
      return boxValue(value, [](unsigned, SbpDim, SbpDim, double) {});
    };
    // The time of the boxing and compute the ops' choices decide (a
    // device's share of the flops at the device's rate), then the compute
    // alone to break ties.
    using Cost = std::pair<double, double>;
    auto costOf = [&](ArrayRef<Operation *> ops) {
      SetVector<Value> touched;
      Cost cost{0, 0};
      for (Operation *op : ops) {
        const Placed &placed = placedOps[op];
        touched.insert(op->operand_begin(), op->operand_end());
        touched.insert(op->result_begin(), op->result_end());
        cost.first += placed.signature().collectiveCost;
        cost.second += share(placed, placed.signature());
      }
      for (Value value : touched)
        cost.first += valueCost(value);
      cost.first += cost.second / spec->flops;
      return cost;
    };
    auto better = [](Cost a, Cost b) {
      double tolerance = 1e-9 * std::max(1.0, std::abs(b.first));
      return a.first < b.first - tolerance ||
             (a.first <= b.first + tolerance &&
              a.second < b.second - 1e-9 * std::abs(b.second));
    };
    auto movable = [&](Operation *op) {
      const Placed &placed = placedOps[op];
      return !placed.pinned && placed.candidates.size() > 1;
    };
    // The op's best signature with everything else as it is.
    auto placeBest = [&](Operation *op) {
      Placed &placed = placedOps[op];
      unsigned best = placed.chosen;
      Cost bestCost = costOf(op);
      for (unsigned i = 0, e = placed.candidates.size(); i < e; ++i) {
        if (i == best)
          continue;
        choose(op, i);
        Cost cost = costOf(op);
        if (better(cost, bestCost)) {
          bestCost = cost;
          best = i;
        }
        choose(op, best);
      }
    };
    // Moves `op` with its users; true if that lowered the cost.
    auto moveWithUsers = [&](Operation *op) {
      SmallVector<Operation *> group{op};
      for (Operation *user : op->getUsers())
        if (placedOps.count(user) && movable(user) &&
            !llvm::is_contained(group, user))
          group.push_back(user);
      if (group.size() == 1)
        return false;
      llvm::sort(group.begin() + 1, group.end(),
                 [](Operation *a, Operation *b) {
                   return a->isBeforeInBlock(b);
                 });
      auto snapshot = [&] {
        SmallVector<unsigned> choices;
        for (Operation *member : group)
          choices.push_back(placedOps[member].chosen);
        return choices;
      };
      auto restore = [&](ArrayRef<unsigned> choices) {
        for (auto [member, i] : llvm::zip(group, choices))
          choose(member, i);
      };
      SmallVector<unsigned> start = snapshot(), best = start;
      Cost bestCost = costOf(group);
      for (unsigned i = 0, e = placedOps[op].candidates.size(); i < e; ++i) {
        if (i == start[0])
          continue;
        restore(start);
        choose(op, i);
        for (Operation *user : ArrayRef(group).drop_front())
          placeBest(user);
        Cost cost = costOf(group);
        if (better(cost, bestCost)) {
          bestCost = cost;
          best = snapshot();
        }
      }
      restore(best);
      return best != start;
    };
    StringRef search = refine ? "greedy+refine" : "greedy";
    if (exhaustive) {
      // Every combination of the free ops' signatures, the cheapest by the
      // refinement's measure over the whole function: an oracle for small
      // graphs (tests check the refinement against it).
      SmallVector<Operation *> free;
      double combinations = 1;
      for (Operation *op : order)
        if (movable(op)) {
          free.push_back(op);
          combinations *= placedOps[op].candidates.size();
        }
      constexpr double kMaxCombinations = 1e6;
      if (combinations > kMaxCombinations) {
        std::string count;
        llvm::raw_string_ostream(count) << llvm::format("%.3g", combinations);
        func.emitError("exhaustive SBP search: ")
            << count << " combinations of " << free.size()
            << " ops' signatures, more than 10^6";
        return signalPassFailure();
      }
      SmallVector<unsigned> choice(free.size(), 0), best;
      for (Operation *op : free)
        choose(op, 0);
      Cost bestCost{std::numeric_limits<double>::infinity(), 0};
      while (true) {
        Cost cost = costOf(order);
        if (best.empty() || better(cost, bestCost)) {
          bestCost = cost;
          best = choice;
        }
        size_t i = 0;
        for (; i < free.size(); ++i) {
          if (++choice[i] < placedOps[free[i]].candidates.size()) {
            choose(free[i], choice[i]);
            break;
          }
          choice[i] = 0;
          choose(free[i], 0);
        }
        if (i == free.size())
          break;
      }
      for (auto [op, i] : llvm::zip(free, best))
        choose(op, i);
      search = "exhaustive";
    } else if (refine) {
      constexpr int kMaxSweeps = 16;
      for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        bool moved = false;
        for (Operation *op : order) {
          if (!movable(op))
            continue;
          unsigned before = placedOps[op].chosen;
          placeBest(op);
          if (placedOps[op].chosen != before) {
            moved = true;
            ++numOpsMoved;
          }
        }
        if (moved)
          continue;
        // No single move helps: try ops with their users.
        for (Operation *op : order)
          if (movable(op) && moveWithUsers(op)) {
            moved = true;
            ++numOpsMoved;
          }
        if (!moved)
          break;
      }
    }

    for (Operation *op : order) {
      const NdSbpSignature &sig = placedOps[op].signature();
      SmallVector<Attribute> operands, results;
      for (const NdSbp &s : sig.operands)
        operands.push_back(toAttr(ctx, s));
      for (const NdSbp &s : sig.results)
        results.push_back(toAttr(ctx, s));
      op->setAttr(sbpName, ArrayAttr::get(ctx, results));
      op->setAttr(FlowDialect::getOperandSbpAttrName(),
                  ArrayAttr::get(ctx, operands));
      ++numOpsPlaced;
    }

    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      if (!func.getResultAttr(i, sbpName))
        func.setResultAttr(i, sbpName, toAttr(ctx, resultSbp[i]));

    // The plan's modeled time, for the report: a device's compute, and
    // each kind of collective (the boxing, and the statistics ops reduce
    // themselves), as if they ran one after another.
    double compute = 0;
    llvm::StringMap<double> collectives;
    for (Operation *op : order) {
      const Placed &placed = placedOps[op];
      compute += share(placed, placed.signature()) / spec->flops;
      if (placed.signature().collectiveCost > 0)
        collectives["all_reduce"] += placed.signature().collectiveCost;
    }
    auto count = [&](unsigned, SbpDim from, SbpDim to, double seconds) {
      StringRef kind = boxingStepKind(from, to);
      if (kind != "local")
        collectives[kind] += seconds;
    };
    for (BlockArgument arg : func.getArguments())
      boxValue(arg, count);
    for (Operation &op : func.getBody().front())
      for (Value result : op.getResults())
        if (sbp.count(result))
          boxValue(result, count);
    SmallVector<NamedAttribute> plan;
    Builder b(ctx);
    plan.push_back(b.getNamedAttr("mesh_spec", b.getStringAttr(spec->name)));
    plan.push_back(b.getNamedAttr("search", b.getStringAttr(search)));
    plan.push_back(b.getNamedAttr("compute_seconds", b.getF64FloatAttr(compute)));
    for (const auto &entry : collectives)
      plan.push_back(b.getNamedAttr((entry.getKey() + "_seconds").str(),
                                    b.getF64FloatAttr(entry.getValue())));
    func->setAttr(FlowDialect::getModeledPlanAttrName(),
                  b.getDictionaryAttr(plan));
  }
};
} // namespace
