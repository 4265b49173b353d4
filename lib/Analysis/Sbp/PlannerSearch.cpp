//===- PlannerSearch.cpp - The SBP planner's searches ---------------------===//
//
// Part of the Flow project.
//
// Greedy placement, refinement by moves, the exact search by variable
// elimination (whole or one mesh axis at a time) and the exhaustive one.
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
        problem.addPairwise(
            *source.var, *want.var, [&](unsigned i, unsigned j) {
              return boxing(value.getType(), source.choices[i], to[j]) +
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
