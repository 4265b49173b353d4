//===- PropagateSbp.cpp - Give every value an SBP -------------------------===//
//
// Part of the Flow project.
//
// The SBP planner. Its measure of a plan is time on the mesh description:
// each op's share of the compute, each collective the op runs itself, and
// the boxing of every value into each distinct layout its users want; when
// a memory limit binds, memory per device is priced in as well (a
// Lagrange multiplier, raised until the plan fits).
//
// Searches, cheapest first:
// - greedy: in program order, every op takes the signature whose operands
//   are cheapest to box into (ties: the one that splits its work most);
// - refine (the default): then moves of one op, or of one op with its
//   users, that lower the measure, until none helps;
// - exact: the greedy+refine plan against the optimum of the same measure
//   with each use of a value boxed on its own (variable elimination,
//   MinSum.h), refined in turn; the cheaper wins. Falls back to
//   greedy+refine, and says so, where the elimination would not fit its
//   budget;
// - exhaustive: every combination, for tests on small graphs.
//
// SBPs pinned by function arguments and flow.annotate are kept, and so is
// a signature written on an op (flow.operand_sbp and flow.sbp, as this
// pass writes it); with free-arguments (auto-parallel) the arguments
// without one are chosen too. Function results take their `flow.sbp` (B by
// default: every device gets the whole result), a state's next value its
// argument's.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Support/MinSum.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
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

static std::string bytesText(double bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes >= double(1 << 30))
    os << llvm::format("%.2f GiB", bytes / double(1 << 30));
  else if (bytes >= double(1 << 20))
    os << llvm::format("%.2f MiB", bytes / double(1 << 20));
  else
    os << llvm::format("%.0f bytes", bytes);
  return s;
}

namespace {
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

bool better(Cost a, Cost b) {
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
} // namespace

LogicalResult Planner::start(StringRef mesh, bool freeArguments,
                             bool printRules) {
  StringRef sbpName = FlowDialect::getSbpAttrName();
  for (BlockArgument arg : func.getArguments()) {
    auto pinned = func.getArgAttrOfType<SbpAttr>(arg.getArgNumber(), sbpName);
    sbp[arg] = pinned ? NdSbp(pinned.getDims()) : broadcastSbp(rank);
    if (pinned || !freeArguments)
      continue;
    // Every layout without partial values (an argument arrives whole and
    // each device takes its piece).
    auto type = cast<RankedTensorType>(arg.getType());
    FreeArg free{arg, {}, 0};
    SmallVector<SbpDim> options{SbpDim::broadcast()};
    for (int64_t d = 0; d < type.getRank(); ++d)
      options.push_back(SbpDim::split(d));
    SmallVector<unsigned> pick(rank, 0);
    while (true) {
      NdSbp layout;
      for (unsigned axis = 0; axis < rank; ++axis)
        layout.push_back(options[pick[axis]]);
      if (isValidSbp(layout, type, meshShape))
        free.candidates.push_back(layout);
      unsigned axis = 0;
      while (axis < rank && ++pick[axis] == options.size())
        pick[axis++] = 0;
      if (axis == rank)
        break;
    }
    if (free.candidates.size() > 1)
      freeArgs.push_back(std::move(free));
  }
  pinnedArgs.assign(freeArgs.size(), false);

  StringRef stateName = FlowDialect::getStateAttrName();
  llvm::StringMap<int> stateArg;
  for (BlockArgument arg : func.getArguments())
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                      stateName))
      stateArg.try_emplace(name.getValue(), arg.getArgNumber());
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    std::optional<NdSbp> pinned;
    if (auto attr = func.getResultAttrOfType<SbpAttr>(i, sbpName))
      pinned = NdSbp(attr.getDims());
    pinnedResults.push_back(pinned);
    int state = -1;
    if (auto name = func.getResultAttrOfType<StringAttr>(i, stateName))
      if (auto it = stateArg.find(name.getValue()); it != stateArg.end())
        state = it->second;
    stateArgOfResult.push_back(state);
  }
  Operation *ret = func.front().getTerminator();
  for (FreeArg &free : freeArgs)
    for (auto [r, state] : llvm::enumerate(stateArgOfResult))
      if (state == static_cast<int>(free.arg.getArgNumber()) &&
          !pinnedResults[r])
        free.next.push_back(ret->getOperand(r));

  for (Operation &op : func.getBody().front()) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      if (annotate.getMesh() != mesh)
        return annotate.emitError("annotates on mesh @")
               << annotate.getMesh() << " but the function runs on @" << mesh;
      sbp[annotate.getResult()] = NdSbp(annotate.getSbp().getDims());
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    if (printRules) {
      if (auto iface = dyn_cast<SbpOpInterface>(op)) {
        InFlightDiagnostic remark = op.emitRemark("rules:");
        for (const SbpSignature &r : iface.getSbpRules()) {
          remark << " (" << ndSbpText(r.operands) << " -> " << ndSbpText(r.results)
                 << (r.evenSplits ? " even" : "");
          if (r.blocks > 0)
            remark << " in " << r.blocks << " blocks";
          remark << ")";
        }
      }
    }
    Placed &placed = placedOps[&op];
    placed.candidates = getNdSbpSignatures(&op, meshShape, spec);
    if (placed.candidates.empty())
      return op.emitError("has no SBP signature: it cannot be placed on a mesh");
    order.push_back(&op);
    if (auto iface = dyn_cast<SbpOpInterface>(op))
      placed.compute = iface.getComputeCost();
    for (const NdSbpSignature &sig : placed.candidates)
      placed.seconds.push_back(opSeconds(&op, placed, sig));
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
      if (!placed.pinned)
        return op.emitError("the SBP signature written on the op is not one "
                            "of its signatures on this mesh (print them with "
                            "--flow-propagate-sbp=print-rules)");
    }
    choose(&op, placed.chosen);
  }
  trackWants();
  return success();
}

double Planner::share(const Placed &placed, const NdSbpSignature &sig) const {
  double share = placed.compute;
  for (unsigned axis = 0; axis < rank; ++axis)
    if (llvm::any_of(sig.results,
                     [&](const NdSbp &s) { return !s[axis].isBroadcast(); }))
      share /= static_cast<double>(meshShape[axis]);
  return share;
}

/// A device's seconds for an op under a signature: the longer of its share
/// of the work at the device's throughput and its pieces' bytes (operands
/// read, results written) at the memory's bandwidth. Views and values
/// already in memory (reshape, parameter, constant) take no time.
double Planner::opSeconds(Operation *op, const Placed &placed,
                          const NdSbpSignature &sig) const {
  if (isa<ReshapeOp, ParameterOp, ConstantOp>(op))
    return 0;
  double seconds = share(placed, sig) / spec.flops;
  if (spec.memoryBandwidth <= 0)
    return seconds;
  double bytes = 0;
  for (auto [value, layout] : llvm::zip(op->getOperands(), sig.operands))
    bytes += pieceBytes(value, layout);
  for (auto [value, layout] : llvm::zip(op->getResults(), sig.results))
    bytes += pieceBytes(value, layout);
  return std::max(seconds, bytes / spec.memoryBandwidth);
}

void Planner::choose(Operation *op, unsigned i) {
  Placed &placed = placedOps[op];
  if (tracking && placed.chosen != i)
    for (auto [operand, before, after] :
         llvm::zip(op->getOperands(), placed.signature().operands,
                   placed.candidates[i].operands))
      if (before != after) {
        want(operand, before, -1);
        want(operand, after, +1);
      }
  if (placed.chosen != i && trials == 0)
    noteChange(op);
  placed.chosen = i;
  for (auto [result, s] : llvm::zip(op->getResults(), placed.signature().results)) {
    sbp[result] = s;
    if (tracking)
      wants[result].dirty = true;
  }
}

void Planner::chooseArg(unsigned a, unsigned i) {
  BlockArgument arg = freeArgs[a].arg;
  const NdSbp &before = freeArgs[a].candidates[freeArgs[a].chosen];
  const NdSbp &after = freeArgs[a].candidates[i];
  if (tracking && before != after) {
    for (Value next : freeArgs[a].next) {
      want(next, before, -1);
      want(next, after, +1);
    }
    wants[arg].dirty = true;
  }
  if (freeArgs[a].chosen != i && trials == 0)
    noteArgChange(a);
  freeArgs[a].chosen = i;
  sbp[arg] = after;
}

void Planner::noteChange(Operation *op) {
  ++clock;
  for (Value value : op->getOperands())
    stamp[value] = clock;
  for (Value value : op->getResults())
    stamp[value] = clock;
}

void Planner::noteArgChange(unsigned a) {
  ++clock;
  stamp[freeArgs[a].arg] = clock;
  for (Value next : freeArgs[a].next)
    stamp[next] = clock;
}

uint64_t Planner::newest(ArrayRef<Operation *> ops) {
  uint64_t t = 0;
  for (Operation *op : ops) {
    for (Value value : op->getOperands())
      t = std::max(t, stamp.lookup(value));
    for (Value value : op->getResults())
      t = std::max(t, stamp.lookup(value));
  }
  return t;
}

uint64_t Planner::newestArg(unsigned a) {
  uint64_t t = stamp.lookup(freeArgs[a].arg);
  for (Value next : freeArgs[a].next)
    t = std::max(t, stamp.lookup(next));
  return t;
}

void Planner::checkMeasure() {
  SmallVector<bool> mustSplit;
  for (const FreeArg &free : freeArgs)
    mustSplit.push_back(free.mustSplit);
  auto now = std::make_tuple(lambda, activationWeight, pinnedArgs, mustSplit);
  if (now == measure)
    return;
  measure = std::move(now);
  triedAlone.clear();
  triedWithUsers.clear();
  triedArg.assign(freeArgs.size(), 0);
}

void Planner::want(Value value, const NdSbp &layout, int delta) {
  Wants &w = wants[value];
  w.dirty = true;
  for (auto *it = w.layouts.begin(); it != w.layouts.end(); ++it)
    if (it->first == layout) {
      it->second += delta;
      if (it->second == 0) {
        // Nobody wants it any more: dropped, so the list stays short.
        *it = std::move(w.layouts.back());
        w.layouts.pop_back();
      }
      return;
    }
  assert(delta > 0 && "removing a layout nobody wants");
  w.layouts.push_back({layout, static_cast<unsigned>(delta)});
}

void Planner::trackWants() {
  wants.clear();
  auto track = [&](Value value) {
    Wants &w = wants[value];
    for (OpOperand &use : value.getUses())
      if (std::optional<NdSbp> layout = wanted(use))
        want(value, *layout, +1);
    (void)w;
  };
  for (BlockArgument arg : func.getArguments())
    track(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      track(result);
  tracking = true;
}

bool Planner::movable(Operation *op) {
  const Placed &placed = placedOps[op];
  return !placed.pinned && placed.candidates.size() > 1;
}

std::optional<NdSbp> Planner::wanted(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto annotate = dyn_cast<AnnotateOp>(user))
    return NdSbp(annotate.getSbp().getDims());
  if (isa<func::ReturnOp>(user)) {
    unsigned i = use.getOperandNumber();
    if (pinnedResults[i])
      return *pinnedResults[i];
    if (stateArgOfResult[i] >= 0)
      return sbp[func.getArgument(stateArgOfResult[i])];
    return broadcastSbp(rank);
  }
  auto it = placedOps.find(user);
  if (it == placedOps.end())
    return std::nullopt;
  return it->second.signature().operands[use.getOperandNumber()];
}

double Planner::boxValue(
    Value value, function_ref<void(unsigned, SbpDim, SbpDim, double)> visit) {
  assert(tracking && "wants are tracked once the plan has started");
  auto type = cast<RankedTensorType>(value.getType());
  double cost = 0;
  const NdSbp &layout = sbp[value];
  for (const auto &[want, count] : wants[value].layouts)
    if (count > 0)
      cost += forEachBoxingStep(layout, want, type, meshShape, spec, visit);
  return cost;
}

double Planner::valueCost(Value value) {
  Wants &w = wants[value];
  if (w.dirty) {
    const NdSbp &layout = sbp[value];
    w.cost = 0;
    for (const auto &[want, count] : w.layouts)
      w.cost += boxing(value.getType(), layout, want);
    w.dirty = false;
  }
  return w.cost;
}

/// An nd-SBP as a number: 8 bits per axis (kind, split dimension), or
/// nullopt where it does not fit.
static std::optional<uint64_t> encode(ArrayRef<SbpDim> sbp) {
  if (sbp.size() > 8)
    return std::nullopt;
  uint64_t code = 0;
  for (SbpDim d : sbp) {
    if (d.isSplit() && (d.dim < 0 || d.dim >= 63))
      return std::nullopt;
    code = (code << 8) | (static_cast<uint64_t>(d.kind) << 6) |
           static_cast<uint64_t>(d.isSplit() ? d.dim : 0);
  }
  return code;
}

double Planner::boxing(Type type, ArrayRef<SbpDim> from, ArrayRef<SbpDim> to) {
  std::optional<uint64_t> a = encode(from), b = encode(to);
  auto compute = [&] {
    return boxingCost(from, to, cast<RankedTensorType>(type), meshShape, spec);
  };
  if (!a || !b)
    return compute();
  auto key = std::make_pair(type.getAsOpaquePointer(), std::make_pair(*a, *b));
  auto [it, inserted] = boxingMemo.try_emplace(key, 0.0);
  if (inserted)
    it->second = compute();
  return it->second;
}

double Planner::pieceBytes(Value value, ArrayRef<SbpDim> layout) const {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape, offset, origin(rank, 0);
  localPiece(type.getShape(), layout, meshShape, origin, shape, offset);
  double elements = 1;
  for (int64_t n : shape)
    elements *= static_cast<double>(n);
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return elements * std::max(1u, bits / 8);
}

/// The bytes a value holds on a device: an argument its piece; a parameter
/// the pieces its users take (loaded as such), at most the whole; an
/// activation its piece, weighted.
double Planner::valueMemory(Value value) {
  if (isa<BlockArgument>(value))
    return pieceBytes(value, sbp[value]);
  if (value.getDefiningOp<ParameterOp>()) {
    double bytes = 0;
    for (const auto &[want, count] : wants[value].layouts)
      if (count > 0)
        bytes += pieceBytes(value, want);
    return std::min(bytes, pieceBytes(value, broadcastSbp(rank)));
  }
  return activationWeight * pieceBytes(value, sbp[value]);
}

Cost Planner::costOf(ArrayRef<Operation *> ops) {
  // Each value the ops read or write, once (ops have few).
  SmallVector<Value, 16> touched;
  auto touch = [&](Value value) {
    if (!llvm::is_contained(touched, value))
      touched.push_back(value);
  };
  Cost cost{0, 0};
  for (Operation *op : ops) {
    const Placed &placed = placedOps[op];
    llvm::for_each(op->getOperands(), touch);
    llvm::for_each(op->getResults(), touch);
    cost.first += placed.signature().collectiveCost + placed.time();
    cost.second += share(placed, placed.signature());
  }
  for (Value value : touched) {
    cost.first += valueCost(value);
    if (lambda > 0)
      cost.first += lambda * valueMemory(value);
  }
  return cost;
}

/// What an argument's layout decides: its boxing as its users want it, its
/// memory, and the boxing of its state's next value into it.
Cost Planner::argCost(unsigned a) {
  BlockArgument arg = freeArgs[a].arg;
  if (freeArgs[a].mustSplit && freeArgs[a].chosen == 0)
    return {std::numeric_limits<double>::infinity(), 0};
  double cost = valueCost(arg) + lambda * valueMemory(arg);
  for (Value next : freeArgs[a].next)
    cost += valueCost(next);
  return {cost, 0};
}

Cost Planner::planCost() {
  // Every value once: the arguments and every op's results.
  Cost cost{0, 0};
  for (Operation *op : order) {
    const Placed &placed = placedOps[op];
    cost.first += placed.signature().collectiveCost + placed.time();
    cost.second += share(placed, placed.signature());
  }
  auto add = [&](Value value) {
    cost.first += valueCost(value);
    if (lambda > 0)
      cost.first += lambda * valueMemory(value);
  };
  for (BlockArgument arg : func.getArguments())
    add(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      if (sbp.count(result))
        add(result);
  for (const FreeArg &free : freeArgs)
    if (free.mustSplit && free.chosen == 0)
      cost.first = std::numeric_limits<double>::infinity();
  return cost;
}

/// Leaves the choice among `options` (now `current`) that `cost` finds
/// cheapest, `set` making each.
static void pickCheapest(ArrayRef<unsigned> options, unsigned current,
                         function_ref<void(unsigned)> set,
                         function_ref<Cost()> cost) {
  unsigned best = current;
  Cost bestCost = cost();
  for (unsigned i : options) {
    if (i == best)
      continue;
    set(i);
    Cost c = cost();
    if (better(c, bestCost)) {
      bestCost = c;
      best = i;
    }
    set(best);
  }
}

/// Re-places `user` at its best among the signatures that take `op`'s
/// results as they are laid out now (and the one it has).
void Planner::placeFollowing(Operation *user, Operation *op) {
  Placed &placed = placedOps[user];
  SmallVector<unsigned> options;
  for (auto [i, sig] : llvm::enumerate(placed.candidates))
    if (i == placed.chosen ||
        llvm::all_of(user->getOpOperands(), [&](OpOperand &use) {
          return use.get().getDefiningOp() != op ||
                 sig.operands[use.getOperandNumber()] == sbp[use.get()];
        }))
      options.push_back(i);
  pickCheapest(
      options, placed.chosen, [&](unsigned i) { choose(user, i); },
      [&] { return costOf(user); });
}

void Planner::placeBest(Operation *op) {
  Placed &placed = placedOps[op];
  unsigned before = placed.chosen;
  ++trials;
  pickCheapest(
      llvm::to_vector(llvm::seq<unsigned>(0, placed.candidates.size())),
      placed.chosen, [&](unsigned i) { choose(op, i); },
      [&] { return costOf(op); });
  --trials;
  if (placed.chosen != before && trials == 0)
    noteChange(op);
}

void Planner::placeBestArg(unsigned a) {
  unsigned before = freeArgs[a].chosen;
  ++trials;
  pickCheapest(
      llvm::to_vector(llvm::seq<unsigned>(0, freeArgs[a].candidates.size())),
      freeArgs[a].chosen, [&](unsigned i) { chooseArg(a, i); },
      [&] { return argCost(a); });
  --trials;
  if (freeArgs[a].chosen != before && trials == 0)
    noteArgChange(a);
}

bool Planner::moveWithUsers(Operation *op) {
  SmallVector<Operation *> group{op};
  for (Operation *user : op->getUsers())
    if (placedOps.count(user) && movable(user) &&
        !llvm::is_contained(group, user))
      group.push_back(user);
  if (group.size() == 1)
    return false;
  // Tried already, and nothing the group's measure reads has changed.
  uint64_t &triedAt = triedWithUsers[op];
  if (triedAt && newest(group) <= triedAt)
    return false;
  llvm::sort(group.begin() + 1, group.end(),
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  auto groupChoices = [&] {
    SmallVector<unsigned> choices;
    for (Operation *member : group)
      choices.push_back(placedOps[member].chosen);
    return choices;
  };
  auto setGroup = [&](ArrayRef<unsigned> choices) {
    for (auto [member, i] : llvm::zip(group, choices))
      choose(member, i);
  };
  SmallVector<unsigned> initial = groupChoices(), best = initial;
  Cost bestCost = costOf(group);
  ++trials;
  // The users' best answer depends on the op's results alone: one answer
  // per distinct layout of the results, then the op's best signature with
  // those results.
  const SmallVector<NdSbpSignature> &candidates = placedOps[op].candidates;
  SmallVector<bool> tried(candidates.size(), false);
  for (unsigned i = 0, e = candidates.size(); i < e; ++i) {
    if (tried[i])
      continue;
    SmallVector<unsigned> same;
    for (unsigned j = i; j < e; ++j)
      if (!tried[j] && candidates[j].results == candidates[i].results) {
        tried[j] = true;
        same.push_back(j);
      }
    if (candidates[i].results == candidates[initial[0]].results)
      continue; // the users' answer is what they have: single moves
    setGroup(initial);
    choose(op, i);
    for (Operation *user : ArrayRef(group).drop_front())
      placeFollowing(user, op);
    for (unsigned j : same) {
      choose(op, j);
      Cost cost = costOf(group);
      if (better(cost, bestCost)) {
        bestCost = cost;
        best = groupChoices();
      }
    }
  }
  setGroup(best);
  --trials;
  for (auto [member, before, after] : llvm::zip(group, initial, best))
    if (before != after)
      noteChange(member);
  triedWithUsers[op] = clock;
  return best != initial;
}

void Planner::greedy() {
  for (auto [a, free] : llvm::enumerate(freeArgs))
    if (!pinnedArgs[a])
      chooseArg(a, free.mustSplit ? 1 : 0);
  for (Operation *op : order) {
    if (!movable(op))
      continue;
    Placed &placed = placedOps[op];
    double bestBoxing = std::numeric_limits<double>::infinity();
    double bestShare = bestBoxing;
    unsigned best = 0;
    for (auto [i, sig] : llvm::enumerate(placed.candidates)) {
      double boxing = sig.collectiveCost;
      for (auto [operand, want] : llvm::zip(op->getOperands(), sig.operands))
        boxing += boxingCost(sbp[operand], want,
                             cast<RankedTensorType>(operand.getType()),
                             meshShape, spec);
      double divided = share(placed, sig);
      // Times that differ by rounding alone are a tie.
      double tolerance = std::isfinite(bestBoxing) ? 1e-9 * bestBoxing : 0.0;
      if (boxing < bestBoxing - tolerance ||
          (boxing <= bestBoxing + tolerance && divided < bestShare)) {
        bestBoxing = boxing;
        bestShare = divided;
        best = i;
      }
    }
    choose(op, best);
  }
}

// Greedy placement sees an op's operands but not its users. A move gives
// one op another signature, alone or together with its users (each then
// taking its best signature among those that take the op's new layouts as
// they are: a norm and the reshape after it move as one; users that would
// rather box them are left to single moves), or a free argument another
// layout; it is made
// when it lowers the measure of what it touches. Every move lowers the
// plan's measure, so this ends.
unsigned Planner::refine(bool withUsers) {
  constexpr int kMaxSweeps = 16;
  unsigned moves = 0;
  checkMeasure();
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool moved = false;
    for (auto [a, free] : llvm::enumerate(freeArgs)) {
      if (pinnedArgs[a] || (triedArg[a] && newestArg(a) <= triedArg[a]))
        continue;
      unsigned before = free.chosen;
      placeBestArg(a);
      triedArg[a] = clock;
      if (free.chosen != before) {
        moved = true;
        ++moves;
      }
    }
    for (Operation *op : order) {
      if (!movable(op))
        continue;
      uint64_t &tried = triedAlone[op];
      if (tried && newest(op) <= tried)
        continue;
      unsigned before = placedOps[op].chosen;
      placeBest(op);
      tried = clock;
      if (placedOps[op].chosen != before) {
        moved = true;
        ++moves;
      }
    }
    if (moved)
      continue;
    if (!withUsers)
      break;
    // No single move helps: try ops with their users.
    for (Operation *op : order)
      if (movable(op) && moveWithUsers(op)) {
        moved = true;
        ++moves;
      }
    if (!moved)
      break;
  }
  return moves;
}

/// Whether two layouts agree on the axes `axes` leaves undecided.
static bool sameOutside(ArrayRef<SbpDim> a, ArrayRef<SbpDim> b,
                        ArrayRef<bool> axes) {
  for (auto [axis, decide] : llvm::enumerate(axes))
    if (!decide && a[axis] != b[axis])
      return false;
  return true;
}

bool Planner::exact(std::string &why, ArrayRef<bool> axes) {
  // The choices open to each op and argument: those agreeing with its
  // current one outside `axes` (all of them when every axis is decided).
  DenseMap<Operation *, SmallVector<unsigned>> opDomain;
  DenseMap<Value, SmallVector<unsigned>> argDomain;
  DenseMap<Value, unsigned> argIndex;
  for (Operation *op : order) {
    if (!movable(op))
      continue;
    const Placed &placed = placedOps[op];
    const NdSbpSignature &now = placed.signature();
    SmallVector<unsigned> domain;
    for (auto [i, sig] : llvm::enumerate(placed.candidates)) {
      bool agrees = true;
      for (auto [a, b] : llvm::zip(sig.operands, now.operands))
        agrees = agrees && sameOutside(a, b, axes);
      for (auto [a, b] : llvm::zip(sig.results, now.results))
        agrees = agrees && sameOutside(a, b, axes);
      if (agrees)
        domain.push_back(i);
    }
    if (domain.size() > 1)
      opDomain[op] = std::move(domain);
  }
  for (auto [a, free] : llvm::enumerate(freeArgs)) {
    argIndex[free.arg] = a;
    if (pinnedArgs[a])
      continue;
    SmallVector<unsigned> domain;
    for (auto [i, layout] : llvm::enumerate(free.candidates))
      if (sameOutside(layout, free.candidates[free.chosen], axes))
        domain.push_back(i);
    if (domain.size() > 1)
      argDomain[free.arg] = std::move(domain);
  }
  if (opDomain.empty() && argDomain.empty())
    return true;

  // Built twice: on scopes alone, to give up before paying for the
  // tables; then with the costs.
  DenseMap<Operation *, unsigned> opVar;
  DenseMap<Value, unsigned> argVar;
  auto build = [&](MinSumProblem &problem) {
    opVar.clear();
    argVar.clear();
    for (Operation *op : order)
      if (auto it = opDomain.find(op); it != opDomain.end())
        opVar[op] = problem.addVariable(it->second.size());
    for (const FreeArg &free : freeArgs)
      if (auto it = argDomain.find(free.arg); it != argDomain.end())
        argVar[free.arg] = problem.addVariable(it->second.size());

    // A value's or a use's layout: a variable's choices, or one fixed.
    struct Layouts {
      std::optional<unsigned> var;
      SmallVector<NdSbp> choices;
    };
    auto layoutsOf = [&](Value value) {
      Layouts l;
      if (auto it = argVar.find(value); it != argVar.end()) {
        l.var = it->second;
        const FreeArg &free = freeArgs[argIndex[value]];
        for (unsigned i : argDomain[value])
          l.choices.push_back(free.candidates[i]);
        return l;
      }
      Operation *op = value.getDefiningOp();
      if (auto it = opVar.find(op); op && it != opVar.end()) {
        l.var = it->second;
        unsigned n = cast<OpResult>(value).getResultNumber();
        for (unsigned i : opDomain[op])
          l.choices.push_back(placedOps[op].candidates[i].results[n]);
        return l;
      }
      l.choices.push_back(sbp[value]);
      return l;
    };
    auto wantsOf = [&](OpOperand &use) -> std::optional<Layouts> {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user)) {
        unsigned i = use.getOperandNumber();
        if (!pinnedResults[i] && stateArgOfResult[i] >= 0)
          return layoutsOf(func.getArgument(stateArgOfResult[i]));
      }
      if (auto it = opVar.find(user); it != opVar.end()) {
        Layouts l{it->second, {}};
        for (unsigned i : opDomain[user])
          l.choices.push_back(
              placedOps[user].candidates[i].operands[use.getOperandNumber()]);
        return l;
      }
      std::optional<NdSbp> want = wanted(use);
      if (!want)
        return std::nullopt;
      return Layouts{std::nullopt, {*want}};
    };

    // Each op's own time (and its results' memory), each argument's
    // memory.
    for (auto [op, var] : opVar) {
      const Placed &placed = placedOps[op];
      ArrayRef<unsigned> domain = opDomain[op];
      problem.addUnary(var, [&, op = op](unsigned i) {
        const NdSbpSignature &sig = placed.candidates[domain[i]];
        double cost = sig.collectiveCost + placed.seconds[domain[i]];
        if (lambda > 0 && !isa<ParameterOp>(op))
          for (auto [result, layout] : llvm::zip(op->getResults(), sig.results))
            cost += lambda * activationWeight * pieceBytes(result, layout);
        return cost;
      });
    }
    for (auto [arg, var] : argVar) {
      const FreeArg &free = freeArgs[argIndex[arg]];
      ArrayRef<unsigned> domain = argDomain[arg];
      problem.addUnary(var, [&, arg = arg](unsigned i) {
        if (free.mustSplit && domain[i] == 0)
          return std::numeric_limits<double>::infinity();
        return lambda * pieceBytes(arg, free.candidates[domain[i]]);
      });
    }

    // Where a value's producer and users are few variables with few
    // choices, one factor over them all prices the value exactly: boxed
    // once per distinct layout wanted (and a parameter loaded once per
    // piece).
    auto placeJointly = [&](Value value, const Layouts &source,
                            ArrayRef<NdSbp> fixedWants,
                            ArrayRef<Layouts> varWants) {
      SmallVector<unsigned, 4> vars;
      if (source.var)
        vars.push_back(*source.var);
      for (const Layouts &want : varWants)
        if (!llvm::is_contained(vars, *want.var))
          vars.push_back(*want.var);
      if (varWants.empty() || vars.size() > 4)
        return varWants.empty() && source.var && fixedWants.empty();
      double entries = 1;
      for (unsigned v : vars)
        entries *= problem.domain(v);
      constexpr double kMaxJointEntries = 1 << 14;
      if (entries > kMaxJointEntries)
        return false;
      bool parameter = lambda > 0 && value.getDefiningOp<ParameterOp>();
      auto type = cast<RankedTensorType>(value.getType());
      double whole = pieceBytes(value, broadcastSbp(rank));
      problem.addFactor(vars, [&](ArrayRef<unsigned> values) {
        auto valueOf = [&](unsigned var) {
          return values[llvm::find(vars, var) - vars.begin()];
        };
        const NdSbp &from = source.var ? source.choices[valueOf(*source.var)]
                                       : source.choices[0];
        SmallVector<const NdSbp *, 4> seen;
        double cost = 0, bytes = 0;
        auto visit = [&](const NdSbp &to) {
          if (llvm::any_of(seen, [&](const NdSbp *s) { return *s == to; }))
            return;
          seen.push_back(&to);
          cost += boxing(type, from, to);
          if (parameter)
            bytes += pieceBytes(value, to);
        };
        for (const NdSbp &to : fixedWants)
          visit(to);
        for (const Layouts &want : varWants)
          visit(want.choices[valueOf(*want.var)]);
        return cost + (parameter ? lambda * std::min(bytes, whole) : 0.0);
      });
      return true;
    };
    // Otherwise each use's boxing on its own (and a parameter's piece,
    // shared among its uses).
    auto place = [&](Value value) {
      // What the value's uses want: layouts fixed (each once), and
      // variables' choices.
      SmallVector<NdSbp, 2> fixedWants;
      SmallVector<Layouts> varWants;
      for (OpOperand &use : value.getUses()) {
        std::optional<Layouts> want = wantsOf(use);
        if (!want)
          continue;
        if (want->var)
          varWants.push_back(std::move(*want));
        else if (!llvm::is_contained(fixedWants, want->choices[0]))
          fixedWants.push_back(want->choices[0]);
      }
      Layouts source = layoutsOf(value);
      if (placeJointly(value, source, fixedWants, varWants))
        return;
      bool parameter = lambda > 0 && value.getDefiningOp<ParameterOp>();
      double uses = std::distance(value.use_begin(), value.use_end());
      auto memory = [&](const NdSbp &to) {
        return parameter ? lambda * pieceBytes(value, to) / uses : 0.0;
      };
      for (const Layouts &want : varWants) {
        const SmallVector<NdSbp> &to = want.choices;
        if (!source.var) {
          problem.addUnary(*want.var, [&](unsigned j) {
            return boxing(value.getType(), source.choices[0], to[j]) +
                   memory(to[j]);
          });
          continue;
        }
        if (*source.var == *want.var)
          continue; // a state passed through unchanged
        problem.addPairwise(*source.var, *want.var,
                            [&](unsigned i, unsigned j) {
                              return boxing(value.getType(),
                                            source.choices[i], to[j]) +
                                     memory(to[j]);
                            });
      }
      if (source.var && !fixedWants.empty())
        problem.addUnary(*source.var, [&](unsigned i) {
          double cost = 0;
          for (const NdSbp &to : fixedWants)
            cost += boxing(value.getType(), source.choices[i], to);
          return cost;
        });
    };
    for (BlockArgument arg : func.getArguments())
      place(arg);
    for (Operation *op : order)
      for (Value result : op->getResults())
        place(result);
    for (Operation &op : func.getBody().front())
      if (isa<AnnotateOp>(op))
        place(op.getResult(0));
  };

  // About a second of work at most here.
  constexpr uint64_t kMaxEntries = uint64_t(1) << 22;
  constexpr uint64_t kMaxWork = uint64_t(400) << 20;
  MinSumProblem scopes(/*scopesOnly=*/true);
  build(scopes);
  if (!scopes.fits(why, kMaxEntries, kMaxWork))
    return false;
  MinSumProblem problem;
  build(problem);
  double cost;
  std::optional<SmallVector<unsigned>> values =
      problem.solve(cost, why, kMaxEntries, kMaxWork);
  if (!values)
    return false;
  for (auto [op, var] : opVar)
    choose(op, opDomain[op][(*values)[var]]);
  for (auto [arg, var] : argVar)
    chooseArg(argIndex[arg], argDomain[arg][(*values)[var]]);
  return true;
}

bool Planner::exactByAxis(ArrayRef<unsigned> axisOrder, std::string &why) {
  for (auto [a, free] : llvm::enumerate(freeArgs))
    if (!pinnedArgs[a])
      chooseArg(a, 0);
  NdSbp whole = broadcastSbp(rank);
  auto broadcast = [&](ArrayRef<NdSbp> sbps) {
    return llvm::all_of(sbps, [&](const NdSbp &s) { return s == whole; });
  };
  for (Operation *op : order) {
    if (!movable(op))
      continue;
    const Placed &placed = placedOps[op];
    for (auto [i, sig] : llvm::enumerate(placed.candidates))
      if (broadcast(sig.operands) && broadcast(sig.results)) {
        choose(op, i);
        break;
      }
  }
  for (unsigned axis : axisOrder) {
    SmallVector<bool> axes(rank, false);
    axes[axis] = true;
    if (!exact(why, axes))
      return false;
  }
  return true;
}

bool Planner::exhaustive(std::string &why) {
  // Every combination of the free choices, the cheapest by the whole
  // function's measure.
  SmallVector<std::function<void(unsigned)>> setters;
  SmallVector<unsigned> sizes;
  double combinations = 1;
  for (auto [a, free] : llvm::enumerate(freeArgs))
    if (!pinnedArgs[a]) {
      sizes.push_back(free.candidates.size());
      setters.push_back([this, a = a](unsigned i) { chooseArg(a, i); });
    }
  for (Operation *op : order)
    if (movable(op)) {
      sizes.push_back(placedOps[op].candidates.size());
      setters.push_back([this, op](unsigned i) { choose(op, i); });
    }
  for (unsigned n : sizes)
    combinations *= n;
  constexpr double kMaxCombinations = 1e6;
  if (combinations > kMaxCombinations) {
    llvm::raw_string_ostream os(why);
    os << "exhaustive SBP search: " << llvm::format("%.3g", combinations)
       << " combinations of " << sizes.size() << " choices, more than 10^6";
    return false;
  }
  SmallVector<unsigned> choice(sizes.size(), 0), best;
  for (auto &set : setters)
    set(0);
  Cost bestCost{std::numeric_limits<double>::infinity(), 0};
  while (true) {
    Cost cost = planCost();
    if (best.empty() || better(cost, bestCost)) {
      bestCost = cost;
      best = choice;
    }
    size_t i = 0;
    for (; i < sizes.size(); ++i) {
      if (++choice[i] < sizes[i]) {
        setters[i](choice[i]);
        break;
      }
      choice[i] = 0;
      setters[i](0);
    }
    if (i == sizes.size())
      break;
  }
  for (auto [set, i] : llvm::zip(setters, best))
    set(i);
  return true;
}

Choices Planner::snapshot() const {
  Choices c;
  for (Operation *op : order)
    c.ops.push_back(placedOps.lookup(op).chosen);
  for (const FreeArg &free : freeArgs)
    c.args.push_back(free.chosen);
  return c;
}

void Planner::restore(const Choices &c) {
  for (auto [op, i] : llvm::zip(order, c.ops))
    choose(op, i);
  for (auto [a, i] : llvm::enumerate(c.args))
    chooseArg(a, i);
}

void Planner::pinArguments(
    function_ref<std::optional<NdSbp>(BlockArgument)> layout,
    function_ref<bool(BlockArgument)> mustSplit) {
  for (auto [a, free] : llvm::enumerate(freeArgs)) {
    std::optional<NdSbp> want = layout(free.arg);
    pinnedArgs[a] = false;
    free.mustSplit = mustSplit(free.arg);
    if (!want)
      continue;
    auto it = llvm::find(free.candidates, *want);
    if (it == free.candidates.end())
      continue;
    chooseArg(a, it - free.candidates.begin());
    pinnedArgs[a] = true;
  }
}

std::optional<NdSbp> Planner::batchSplit(RankedTensorType type) const {
  if (type.getRank() == 0)
    return std::nullopt;
  NdSbp layout(rank, SbpDim::split(0));
  if (!isValidSbp(layout, type, meshShape))
    return std::nullopt;
  return layout;
}

/// The peak, over program order, of a device's bytes: arguments and
/// parameters throughout, activations from their op to their last use.
double Planner::peakMemory() {
  double resident = 0;
  for (BlockArgument arg : func.getArguments())
    resident += pieceBytes(arg, sbp[arg]);
  Block &body = func.getBody().front();
  DenseMap<Operation *, unsigned> position;
  unsigned n = 0;
  for (Operation &op : body)
    position[&op] = n++;
  SmallVector<double> freed(n + 1, 0), born(n + 1, 0);
  for (Operation &op : body)
    for (Value result : op.getResults()) {
      if (!sbp.count(result))
        continue;
      if (isa<ParameterOp>(op)) {
        resident += valueMemory(result);
        continue;
      }
      unsigned last = position[&op];
      for (Operation *user : result.getUsers())
        last = std::max(last, position[body.findAncestorOpInBlock(*user)]);
      double bytes = pieceBytes(result, sbp[result]);
      born[position[&op]] += bytes;
      freed[last] += bytes;
    }
  double live = 0, peak = 0;
  for (unsigned i = 0; i < n; ++i) {
    live += born[i];
    peak = std::max(peak, live);
    live -= freed[i];
  }
  return resident + peak;
}

Figures Planner::figures() {
  Figures f;
  for (Operation *op : order) {
    const Placed &placed = placedOps[op];
    f.compute += placed.time();
    if (placed.signature().collectiveCost > 0)
      f.collectives["all_reduce"] += placed.signature().collectiveCost;
  }
  auto count = [&](unsigned, SbpDim from, SbpDim to, double seconds) {
    StringRef kind = boxingStepKind(from, to);
    if (kind != "local")
      f.collectives[kind] += seconds;
  };
  for (BlockArgument arg : func.getArguments())
    boxValue(arg, count);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      if (sbp.count(result))
        boxValue(result, count);
  f.memory = peakMemory();
  return f;
}

bool Planner::searchWithin(double limit, function_ref<void()> search,
                           std::string &why) {
  lambda = 0;
  activationWeight = 1;
  search();
  Figures unlimited = figures();
  if (limit <= 0 || unlimited.memory <= limit)
    return true;
  // Activations count in the measure by their share of the peak.
  double sum = 0;
  for (Operation *op : order)
    if (!isa<ParameterOp>(op))
      for (Value result : op->getResults())
        sum += pieceBytes(result, sbp[result]);
  double resident = 0;
  for (BlockArgument arg : func.getArguments())
    resident += pieceBytes(arg, sbp[arg]);
  if (sum > 0)
    activationWeight =
        std::clamp((unlimited.memory - resident) / sum, 0.0, 1.0);
  // Raise the price of memory until the plan fits, then look for the
  // lowest price that still fits (the fastest plan that does).
  double low = 0;
  double high = std::max(unlimited.total(), 1e-9) / unlimited.memory;
  std::optional<Choices> fitting;
  double smallest = unlimited.memory;
  for (int i = 0; i < 60 && !fitting; ++i, high *= 4) {
    lambda = high;
    search();
    double memory = figures().memory;
    smallest = std::min(smallest, memory);
    if (memory <= limit)
      fitting = snapshot();
    else
      low = high;
  }
  if (!fitting) {
    why = "no plan found fits the memory limit of " + bytesText(limit) +
          " per device: the smallest needs " + bytesText(smallest);
    return false;
  }
  for (int i = 0; i < 12; ++i) {
    lambda = low > 0 ? std::sqrt(low * high) : high / 16;
    search();
    if (figures().memory <= limit) {
      high = lambda;
      fitting = snapshot();
    } else {
      low = lambda;
    }
  }
  lambda = 0;
  restore(*fitting);
  return true;
}

void Planner::write(bool freeArguments) {
  MLIRContext *ctx = func.getContext();
  StringRef sbpName = FlowDialect::getSbpAttrName();
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
  }
  if (freeArguments)
    for (BlockArgument arg : func.getArguments())
      if (!func.getArgAttr(arg.getArgNumber(), sbpName))
        func.setArgAttr(arg.getArgNumber(), sbpName, toAttr(ctx, sbp[arg]));
  auto returnOp = func.front().getTerminator();
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (!func.getResultAttr(i, sbpName)) {
      OpOperand &use = returnOp->getOpOperand(i);
      func.setResultAttr(i, sbpName, toAttr(ctx, *wanted(use)));
    }
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
    if (search != "greedy" && search != "refine" && search != "exact" &&
        search != "exhaustive") {
      func.emitError("unknown SBP search '")
          << search << "' (greedy, refine, exact, exhaustive)";
      return signalPassFailure();
    }
    std::string why;
    std::optional<MeshSpec> spec = loadMeshSpec(meshSpec, why);
    if (!spec || !spec->fits(mesh.getShape().size(), why)) {
      func.emitError("mesh description: ") << why;
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("SBP propagation needs a single-block function");
      return signalPassFailure();
    }
    if (memoryLimit < 0) {
      func.emitError("the memory limit must not be negative");
      return signalPassFailure();
    }
    ArrayRef<int64_t> meshShape = mesh.getShape();
    Planner planner(func, meshShape, *spec);
    if (failed(planner.start(meshRef.getValue(), freeArguments, printRules)))
      return signalPassFailure();

    // The plan of the chosen search; `label` says which search it was.
    std::string label = search;
    bool failedSearch = false;
    auto run = [&] {
      planner.greedy();
      if (search == "greedy")
        return;
      if (search == "exhaustive") {
        std::string tooMany;
        if (!planner.exhaustive(tooMany)) {
          mlir::emitError(func.getLoc(), tooMany);
          failedSearch = true;
        }
        return;
      }
      if (search != "exact") {
        numOpsMoved += planner.refine();
        label = "greedy+refine";
        return;
      }
      // The exact plan, refined. On a mesh of several axes the exact
      // search over every axis at once may not fit; it is also run one
      // axis at a time, the axes with more devices first (of equal ones,
      // the inner first: the faster links on a mesh of nodes x GPUs), and
      // the better refined plan kept. Greedy+refine where no elimination
      // fits. (The reference plans, refined in turn, are the other
      // starting points: the best of all is kept.)
      unsigned rank = meshShape.size();
      std::optional<Choices> best;
      Cost bestCost;
      auto consider = [&](std::string name) {
        // Single moves here; moves with users once the best start is
        // known.
        numOpsMoved += planner.refine(/*withUsers=*/false);
        Cost cost = planner.planCost();
        if (!best || better(cost, bestCost)) {
          best = planner.snapshot();
          bestCost = cost;
          label = std::move(name);
        }
      };
      std::string gaveUp;
      if (planner.exact(gaveUp, SmallVector<bool>(rank, true)))
        consider("exact");
      if (rank > 1) {
        auto axes = llvm::to_vector(llvm::seq<unsigned>(0, rank));
        llvm::stable_sort(axes, [&](unsigned a, unsigned b) {
          return meshShape[a] > meshShape[b] ||
                 (meshShape[a] == meshShape[b] && a > b);
        });
        std::string name = "exact by mesh axis (";
        for (auto [k, axis] : llvm::enumerate(axes))
          name += (k ? ", " : "") + std::to_string(axis);
        name += ")";
        if (!gaveUp.empty())
          name += " (the exact search over every axis gave up: " + gaveUp + ")";
        std::string why;
        if (planner.exactByAxis(axes, why))
          consider(name);
      }
      if (best) {
        planner.restore(*best);
        return;
      }
      planner.greedy();
      numOpsMoved += planner.refine(/*withUsers=*/false);
      label = "greedy+refine (the exact search gave up: " + gaveUp + ")";
    };
    // The limit: the one given, else with free arguments the device's
    // memory (a plan that cannot fit it is still compiled, with a
    // warning: the model's peak is an estimate); greedy is a baseline and
    // does not price memory.
    bool explicitLimit = memoryLimit > 0;
    double limit = explicitLimit   ? double(memoryLimit)
                   : freeArguments ? spec->memoryBytes
                                   : 0.0;
    if (search == "greedy")
      limit = 0;
    std::string tooLarge;
    bool fits = planner.searchWithin(limit, run, tooLarge);
    if (failedSearch)
      return signalPassFailure();
    if (!fits) {
      if (explicitLimit) {
        mlir::emitError(func.getLoc(), tooLarge);
        return signalPassFailure();
      }
      mlir::emitWarning(func.getLoc(), tooLarge)
          << " (the device's memory in mesh description '" << spec->name
          << "'); compiled as if without a limit";
      limit = 0;
      planner.searchWithin(0, run, tooLarge);
    }
    Choices chosen = planner.snapshot();
    Figures figures = planner.figures();

    // Auto-parallel: the same measure of plain data parallel (inputs split
    // by their first dimension over every axis, parameters and state
    // replicated) and of tensor parallel (inputs replicated, parameters
    // and state split, each as the search prefers), the rest searched, for
    // the report; the best plan of the three is kept.
    Builder b(&getContext());
    auto describe = [&](const Figures &f, StringRef searchName) {
      SmallVector<NamedAttribute> plan;
      plan.push_back(b.getNamedAttr("compute_seconds",
                                    b.getF64FloatAttr(f.compute)));
      for (const auto &entry : f.collectives)
        plan.push_back(b.getNamedAttr((entry.getKey() + "_seconds").str(),
                                      b.getF64FloatAttr(entry.getValue())));
      plan.push_back(
          b.getNamedAttr("memory_bytes", b.getI64IntegerAttr(
                                             static_cast<int64_t>(f.memory))));
      if (!searchName.empty())
        plan.push_back(b.getNamedAttr("search", b.getStringAttr(searchName)));
      return plan;
    };
    SmallVector<NamedAttribute> references;
    if (freeArguments) {
      auto isData = [&](BlockArgument arg) {
        unsigned i = arg.getArgNumber();
        return !func.getArgAttr(i, FlowDialect::getStateAttrName()) &&
               !func.getArgAttr(i, FlowDialect::getLearningRateAttrName());
      };
      Cost best = planner.planCost();
      auto reference = [&](StringRef name,
                           function_ref<std::optional<NdSbp>(BlockArgument)>
                               layout,
                           function_ref<bool(BlockArgument)> mustSplit) {
        planner.pinArguments(layout, mustSplit);
        std::string ignored;
        std::string saved = label;
        bool ok = planner.searchWithin(0, run, ignored);
        // Polished as the auto plan is: moves of ops with their users.
        if (ok && search == "exact")
          numOpsMoved += planner.refine();
        // Where the reference wins, the report names the search that
        // placed it.
        std::string placedBy = label;
        label = saved;
        planner.unpinArguments();
        if (!ok)
          return;
        Figures f = planner.figures();
        references.push_back(b.getNamedAttr(
            name, b.getDictionaryAttr(describe(f, ""))));
        Cost cost = planner.planCost();
        if ((limit <= 0 || f.memory <= limit) && better(cost, best)) {
          best = cost;
          chosen = planner.snapshot();
          figures = f;
          label = (placedBy + " (" + name + " was faster)").str();
        }
        // The reference, its arguments free again, refined: a plan the
        // search's own start may not reach.
        numOpsMoved += planner.refine(/*withUsers=*/false);
        Figures g = planner.figures();
        cost = planner.planCost();
        if ((limit <= 0 || g.memory <= limit) && better(cost, best)) {
          best = cost;
          chosen = planner.snapshot();
          figures = g;
          label = (placedBy + " (refined from " + name + ")").str();
        }
      };
      reference("data_parallel", [&](BlockArgument arg) -> std::optional<NdSbp> {
        auto type = cast<RankedTensorType>(arg.getType());
        if (isData(arg))
          return planner.batchSplit(type);
        return broadcastSbp(mesh.getShape().size());
      }, [](BlockArgument) { return false; });
      reference("tensor_parallel", [&](BlockArgument arg) -> std::optional<NdSbp> {
        if (isData(arg))
          return broadcastSbp(mesh.getShape().size());
        return std::nullopt;
      }, [&](BlockArgument arg) { return !isData(arg); });
      planner.restore(chosen);
    }
    if (search == "exact") {
      // The best plan, refined by moves of ops with their users too.
      Cost before = planner.planCost();
      numOpsMoved += planner.refine();
      Figures g = planner.figures();
      if ((limit <= 0 || g.memory <= limit) &&
          better(planner.planCost(), before)) {
        chosen = planner.snapshot();
        figures = g;
      } else {
        planner.restore(chosen);
      }
    }

    planner.write(freeArguments);
    numOpsPlaced += planner.numOps();

    // The plan's modeled time, for the report: a device's compute, and
    // each kind of collective (the boxing, and the statistics ops reduce
    // themselves), as if they ran one after another; its memory per
    // device; the reference plans.
    SmallVector<NamedAttribute> plan = describe(figures, label);
    plan.push_back(b.getNamedAttr("mesh_spec", b.getStringAttr(spec->name)));
    if (limit > 0)
      plan.push_back(
          b.getNamedAttr("memory_limit_bytes",
                         b.getI64IntegerAttr(static_cast<int64_t>(limit))));
    for (NamedAttribute r : references)
      plan.push_back(r);
    func->setAttr(FlowDialect::getModeledPlanAttrName(),
                  b.getDictionaryAttr(plan));
  }
};
} // namespace
