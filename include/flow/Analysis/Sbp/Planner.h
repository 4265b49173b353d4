//===- Planner.h - The SBP planner ------------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
// The SBP planner flow-propagate-sbp runs on each mesh function: it times
// a plan on the mesh description (compute, collectives and memory, see
// lib/Dialect/Flow/Transforms/PropagateSbp.cpp for the measure and the
// searches) and writes the plan it finds as flow.sbp attributes.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_ANALYSIS_SBP_PLANNER_H
#define FLOW_ANALYSIS_SBP_PLANNER_H

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <tuple>

namespace mlir {
namespace flow {
namespace sbp {

/// An op's signatures on the mesh and the one chosen.
struct Placed {
  SmallVector<NdSbpSignature> candidates;
  unsigned chosen = 0;
  bool pinned = false;
  /// The op's work (FLOPs), and per candidate a device's seconds for it.
  double compute = 0;
  SmallVector<double> seconds;
  const NdSbpSignature &signature() const { return candidates[chosen]; }
  double time() const { return seconds[chosen]; }
};

/// A function argument the search places (auto-parallel): its layouts.
struct FreeArg {
  BlockArgument arg;
  SmallVector<NdSbp> candidates; // all-B first
  unsigned chosen = 0;
  /// For a reference plan: it must be split somewhere (not all-B).
  bool mustSplit = false;
  /// The returned values that are the argument's state next step (and
  /// not pinned): laid out as the argument is.
  SmallVector<Value, 1> next;
};

/// The choices of a plan, to keep one while trying another.
struct Choices {
  SmallVector<unsigned> ops, args;
  bool operator==(const Choices &other) const {
    return ops == other.ops && args == other.args;
  }
};

/// What the report says of a plan: seconds of a device's compute and of
/// each kind of collective, and bytes per device.
struct Figures {
  double compute = 0;
  llvm::StringMap<double> collectives;
  double memory = 0;
  double total() const {
    double t = compute;
    for (const auto &entry : collectives)
      t += entry.getValue();
    return t;
  }
};

/// Time (with memory priced at the multiplier), then compute alone to
/// break ties.
using Cost = std::pair<double, double>;

inline bool better(Cost a, Cost b) {
  double tolerance = 1e-9 * std::max(1.0, std::abs(b.first));
  return a.first < b.first - tolerance ||
         (a.first <= b.first + tolerance &&
          a.second < b.second - 1e-9 * std::abs(b.second));
}

class Planner {
public:
  Planner(func::FuncOp func, ArrayRef<int64_t> meshShape, const MeshSpec &spec)
      : func(func), meshShape(meshShape), rank(meshShape.size()), spec(spec) {}

  /// Places arguments and ops as pinned, else B and greedily; false (with
  /// an error) where an op cannot be placed.
  LogicalResult start(StringRef mesh, bool freeArguments, bool printRules);

  void greedy();
  /// Moves until none lowers the measure (of single ops, and with
  /// `withUsers` of ops with their users); the number of moves made.
  unsigned refine(bool withUsers = true);
  /// The optimum of the measure over the choices that agree with the
  /// current plan outside the mesh axes `axes` (all of them: the whole
  /// plan); false (with why) when the elimination would not fit.
  bool exact(std::string &why, ArrayRef<bool> axes);
  /// From the plan with every choice broadcast, the exact search one mesh
  /// axis at a time in `axisOrder` (each given the axes before it, the
  /// rest broadcast); false (with why) when an elimination would not fit.
  bool exactByAxis(ArrayRef<unsigned> axisOrder, std::string &why);
  /// Every combination; false (with the count) past 10^6.
  bool exhaustive(std::string &why);

  /// Runs `search` under the memory limit; false (with why) when no plan
  /// found fits it. `label` says which search gave the plan.
  bool searchWithin(double limit, function_ref<void()> search,
                    std::string &why);

  Cost planCost();
  Figures figures();
  Choices snapshot() const;
  void restore(const Choices &choices);

  /// Pins the free arguments by `layout` (nullopt: leave it free; all-B
  /// refused where `mustSplit` says so), for the reference plans.
  void pinArguments(function_ref<std::optional<NdSbp>(BlockArgument)> layout,
                    function_ref<bool(BlockArgument)> mustSplit);
  void unpinArguments() {
    pinnedArgs.assign(freeArgs.size(), false);
    for (FreeArg &free : freeArgs)
      free.mustSplit = false;
  }
  /// The layout splitting dimension 0 over every axis, where valid.
  std::optional<NdSbp> batchSplit(RankedTensorType type) const;

  /// Writes the plan on the function.
  void write(bool freeArguments);

  unsigned numOps() const { return order.size(); }

private:
  double share(const Placed &placed, const NdSbpSignature &sig) const;
  double opSeconds(Operation *op, const Placed &placed,
                   const NdSbpSignature &sig) const;
  void choose(Operation *op, unsigned i);
  void chooseArg(unsigned a, unsigned i);
  /// Marks the values whose layout or wants changed with the op's (the
  /// argument's) move as changed now.
  void noteChange(Operation *op);
  void noteArgChange(unsigned a);
  /// The last time any of these values' layouts or wants changed.
  uint64_t newest(ArrayRef<Operation *> ops);
  uint64_t newestArg(unsigned a);
  /// Forgets which moves were tried where the measure itself changed
  /// (the price of memory, the pins).
  void checkMeasure();
  bool movable(Operation *op);
  std::optional<NdSbp> wanted(OpOperand &use);
  double boxValue(Value value,
                  function_ref<void(unsigned, SbpDim, SbpDim, double)> visit);
  /// The layouts a value's users want, counted, kept up to date as
  /// choices change (a value with many users is boxed once per distinct
  /// layout, and its cost is found without visiting its users).
  struct Wants {
    SmallVector<std::pair<NdSbp, unsigned>, 2> layouts;
    double cost = 0;
    bool dirty = true;
  };
  void trackWants();
  void want(Value value, const NdSbp &layout, int delta);
  /// boxingCost, remembered per type and pair of layouts (the searches ask
  /// the same questions many times).
  double boxing(Type type, ArrayRef<SbpDim> from, ArrayRef<SbpDim> to);
  DenseMap<std::pair<const void *, std::pair<uint64_t, uint64_t>>, double>
      boxingMemo;
  double valueCost(Value value);
  double pieceBytes(Value value, ArrayRef<SbpDim> sbp) const;
  double valueMemory(Value value);
  Cost costOf(ArrayRef<Operation *> ops);
  Cost argCost(unsigned a);
  void placeBest(Operation *op);
  void placeFollowing(Operation *user, Operation *op);
  void placeBestArg(unsigned a);
  bool moveWithUsers(Operation *op);
  double peakMemory();

  func::FuncOp func;
  ArrayRef<int64_t> meshShape;
  unsigned rank;
  const MeshSpec &spec;

  DenseMap<Value, NdSbp> sbp;
  DenseMap<Value, Wants> wants;
  /// When each value's layout or wants last changed (trial moves, undone,
  /// do not count), and when each move was last tried: a move is tried
  /// again only once something it reads has changed.
  uint64_t clock = 0;
  unsigned trials = 0;
  DenseMap<Value, uint64_t> stamp;
  DenseMap<Operation *, uint64_t> triedAlone, triedWithUsers;
  SmallVector<uint64_t> triedArg;
  std::tuple<double, double, SmallVector<bool>, SmallVector<bool>> measure;
  bool tracking = false;
  DenseMap<Operation *, Placed> placedOps;
  SmallVector<Operation *> order;
  SmallVector<FreeArg> freeArgs;
  SmallVector<bool> pinnedArgs;
  /// Per function result: its pinned layout, or the argument whose state
  /// it is (-1: none).
  SmallVector<std::optional<NdSbp>> pinnedResults;
  SmallVector<int> stateArgOfResult;
  /// Seconds per byte of memory per device (0 unless a limit binds), and
  /// the weight of activations in the measure's memory (their peak over
  /// their sum in the plan without a limit).
  double lambda = 0, activationWeight = 1;
};

} // namespace sbp
} // namespace flow
} // namespace mlir

#endif // FLOW_ANALYSIS_SBP_PLANNER_H
