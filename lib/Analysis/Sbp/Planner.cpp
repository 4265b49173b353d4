//===- Planner.cpp - The SBP planner: its plan and measure ----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Analysis/Sbp/Planner.h"
#include "flow/Support/MinSum.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flow;
using namespace mlir::flow::sbp;

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
    if (auto name =
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), stateName))
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
          remark << " (" << ndSbpText(r.operands) << " -> "
                 << ndSbpText(r.results) << (r.evenSplits ? " even" : "");
          if (r.blocks > 0)
            remark << " in " << r.blocks << " blocks";
          remark << ")";
        }
      }
    }
    Placed &placed = placedOps[&op];
    placed.candidates = getNdSbpSignatures(&op, meshShape, spec);
    if (placed.candidates.empty())
      return op.emitError(
          "has no SBP signature: it cannot be placed on a mesh");
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
  for (auto [result, s] :
       llvm::zip(op->getResults(), placed.signature().results)) {
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

double
Planner::boxValue(Value value,
                  function_ref<void(unsigned, SbpDim, SbpDim, double)> visit) {
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
  return elements *
         static_cast<double>(elementStorageBytes(type.getElementType()));
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
