//===- MinSum.cpp - Exact min-sum over a graph of choices -----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Support/MinSum.h"

#include "llvm/ADT/STLExtras.h"

#include <cassert>
#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::flow;

unsigned MinSumProblem::addVariable(unsigned domain) {
  assert(domain > 0 && "a variable needs a value");
  domains.push_back(domain);
  return domains.size() - 1;
}

void MinSumProblem::addUnary(unsigned var,
                             llvm::function_ref<double(unsigned)> cost) {
  Factor f{{var}, {}};
  if (!scopesOnly)
    for (unsigned i = 0; i < domains[var]; ++i)
      f.table.push_back(cost(i));
  factors.push_back(std::move(f));
}

void MinSumProblem::addPairwise(
    unsigned a, unsigned b,
    llvm::function_ref<double(unsigned, unsigned)> cost) {
  assert(a != b && "a pair of distinct variables");
  // Stored with the lower-numbered variable first.
  Factor f{{std::min(a, b), std::max(a, b)}, {}};
  if (!scopesOnly) {
    f.table.resize(static_cast<size_t>(domains[a]) * domains[b]);
    for (unsigned i = 0; i < domains[a]; ++i)
      for (unsigned j = 0; j < domains[b]; ++j)
        f.table[a < b ? i * domains[b] + j : j * domains[a] + i] = cost(i, j);
  }
  factors.push_back(std::move(f));
}

void MinSumProblem::addFactor(
    llvm::ArrayRef<unsigned> vars,
    llvm::function_ref<double(llvm::ArrayRef<unsigned>)> cost) {
  Factor f;
  f.scope.assign(vars.begin(), vars.end());
  llvm::sort(f.scope);
  assert(std::adjacent_find(f.scope.begin(), f.scope.end()) ==
             f.scope.end() &&
         "distinct variables");
  // Where each of `vars` sits in the sorted scope.
  llvm::SmallVector<unsigned, 4> slot;
  for (unsigned v : vars)
    slot.push_back(llvm::find(f.scope, v) - f.scope.begin());
  size_t entries = 1;
  for (unsigned v : f.scope)
    entries *= domains[v];
  if (scopesOnly) {
    factors.push_back(std::move(f));
    return;
  }
  f.table.resize(entries);
  llvm::SmallVector<unsigned, 4> value(f.scope.size(), 0), given(vars.size());
  for (size_t entry = 0; entry < entries; ++entry) {
    for (auto [i, s] : llvm::enumerate(slot))
      given[i] = value[s];
    f.table[entry] = cost(given);
    for (size_t j = f.scope.size(); j-- > 0;) {
      if (++value[j] < domains[f.scope[j]])
        break;
      value[j] = 0;
    }
  }
  factors.push_back(std::move(f));
}

namespace {
/// The strides of a factor's variables in its table.
llvm::SmallVector<uint64_t, 4> strides(llvm::ArrayRef<unsigned> scope,
                                       llvm::ArrayRef<unsigned> domains) {
  llvm::SmallVector<uint64_t, 4> result(scope.size());
  uint64_t stride = 1;
  for (size_t i = scope.size(); i-- > 0;) {
    result[i] = stride;
    stride *= domains[scope[i]];
  }
  return result;
}
} // namespace

std::optional<llvm::SmallVector<unsigned>>
MinSumProblem::solve(double &cost, std::string &why, uint64_t maxEntries,
                     uint64_t maxWork) const {
  assert(!scopesOnly && "a problem of scopes alone has no costs");
  // First the elimination on scopes alone (cheap), to give up before any
  // table is built; then with the tables, in the same order.
  if (!eliminate(/*numeric=*/false, why, maxEntries, maxWork))
    return std::nullopt;
  return eliminate(/*numeric=*/true, why, maxEntries, maxWork, &cost);
}

std::optional<llvm::SmallVector<unsigned>>
MinSumProblem::eliminate(bool numeric, std::string &why, uint64_t maxEntries,
                         uint64_t maxWork, double *costOut) const {
  unsigned n = domains.size();
  std::vector<Factor> fs = factors;
  std::vector<bool> alive(fs.size(), true);
  std::vector<llvm::SmallVector<unsigned, 4>> ofVar(n);
  for (auto [id, f] : llvm::enumerate(fs))
    for (unsigned v : f.scope)
      ofVar[v].push_back(id);
  std::vector<bool> eliminated(n, false);

  // The variables a variable shares live factors with.
  auto neighbours = [&](unsigned x) {
    llvm::SmallVector<unsigned, 8> scope;
    for (unsigned id : ofVar[x])
      if (alive[id])
        for (unsigned v : fs[id].scope)
          if (v != x)
            scope.push_back(v);
    llvm::sort(scope);
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    return scope;
  };
  // Eliminating x replaces the tables it is in by one over its
  // neighbours: the variable whose elimination grows the tables least
  // goes first (against the smallest new table first, 4-6 times less
  // work on a transformer's training step).
  auto score = [&](unsigned x) {
    double size = 1;
    for (unsigned v : neighbours(x))
      size *= domains[v];
    for (unsigned id : ofVar[x])
      if (alive[id]) {
        double entries = 1;
        for (unsigned v : fs[id].scope)
          entries *= domains[v];
        size -= entries;
      }
    return size;
  };
  std::vector<double> scores(n);
  std::set<std::pair<double, unsigned>> queue;
  for (unsigned x = 0; x < n; ++x) {
    scores[x] = score(x);
    queue.insert({scores[x], x});
  }

  struct Step {
    unsigned var;
    llvm::SmallVector<unsigned, 4> factors;
  };
  std::vector<Step> steps;
  steps.reserve(n);
  uint64_t work = 0;
  largestTable = 0;
  while (!queue.empty()) {
    unsigned x = queue.begin()->second;
    queue.erase(queue.begin());
    Step step{x, {}};
    for (unsigned id : ofVar[x])
      if (alive[id])
        step.factors.push_back(id);
    llvm::SmallVector<unsigned, 8> scope = neighbours(x);
    double entries = 1;
    for (unsigned v : scope)
      entries *= domains[v];
    double stepWork = entries * domains[x] * std::max<size_t>(1, step.factors.size());
    if (entries > static_cast<double>(maxEntries)) {
      why = "a table of " + std::to_string(static_cast<uint64_t>(entries)) +
            " entries over " + std::to_string(scope.size()) +
            " choices, more than " + std::to_string(maxEntries);
      return std::nullopt;
    }
    if (numeric && static_cast<double>(work) + stepWork >
                       static_cast<double>(maxWork)) {
      why = "more than " + std::to_string(maxWork) + " steps";
      return std::nullopt;
    }
    work += static_cast<uint64_t>(stepWork);
    largestTable = std::max<uint64_t>(largestTable, entries);

    // Where each scope variable and x sit in each factor's table.
    size_t k = step.factors.size();
    std::vector<llvm::SmallVector<uint64_t, 8>> scopeStride(k);
    std::vector<uint64_t> xStride(k, 0);
    for (auto [i, id] : llvm::enumerate(step.factors)) {
      const Factor &f = fs[id];
      auto s = strides(f.scope, domains);
      scopeStride[i].assign(scope.size(), 0);
      for (auto [j, v] : llvm::enumerate(f.scope)) {
        if (v == x) {
          xStride[i] = s[j];
          continue;
        }
        scopeStride[i][llvm::find(scope, v) - scope.begin()] = s[j];
      }
    }
    Factor result{llvm::SmallVector<unsigned, 4>(scope.begin(), scope.end()),
                  std::vector<double>(numeric ? static_cast<size_t>(entries)
                                              : 0)};
    llvm::SmallVector<unsigned, 8> value(scope.size(), 0);
    std::vector<uint64_t> base(k, 0);
    for (size_t entry = 0; numeric && entry < result.table.size(); ++entry) {
      double best = std::numeric_limits<double>::infinity();
      for (unsigned xv = 0; xv < domains[x]; ++xv) {
        double sum = 0;
        for (size_t i = 0; i < k; ++i)
          sum += fs[step.factors[i]].table[base[i] + xv * xStride[i]];
        best = std::min(best, sum);
      }
      result.table[entry] = best;
      // The next assignment of the scope, last variable fastest.
      for (size_t j = scope.size(); j-- > 0;) {
        unsigned d = domains[scope[j]];
        for (size_t i = 0; i < k; ++i)
          base[i] += scopeStride[i][j];
        if (++value[j] < d)
          break;
        for (size_t i = 0; i < k; ++i)
          base[i] -= scopeStride[i][j] * d;
        value[j] = 0;
      }
    }
    for (unsigned id : step.factors)
      alive[id] = false;
    eliminated[x] = true;
    unsigned id = fs.size();
    fs.push_back(std::move(result));
    alive.push_back(true);
    for (unsigned v : scope)
      ofVar[v].push_back(id);
    steps.push_back(std::move(step));
    // The neighbours' tables changed: so did their scores.
    for (unsigned v : scope) {
      queue.erase({scores[v], v});
      scores[v] = score(v);
      queue.insert({scores[v], v});
    }
  }

  if (!numeric) {
    if (work > maxWork) {
      why = "the elimination needs " + std::to_string(work) +
            " steps, more than " + std::to_string(maxWork) +
            " (largest table: " + std::to_string(largestTable) + " entries)";
      return std::nullopt;
    }
    return llvm::SmallVector<unsigned>();
  }
  double cost = 0;
  for (auto [id, f] : llvm::enumerate(fs))
    if (alive[id] && f.scope.empty())
      cost += f.table[0];
  *costOut = cost;

  // Back-substitution: each variable takes its best value given the
  // variables eliminated after it, whose values are known by then.
  llvm::SmallVector<unsigned> values(n, 0);
  for (const Step &step : llvm::reverse(steps)) {
    double best = std::numeric_limits<double>::infinity();
    unsigned bestValue = 0;
    for (unsigned xv = 0; xv < domains[step.var]; ++xv) {
      double sum = 0;
      for (unsigned id : step.factors) {
        const Factor &f = fs[id];
        auto s = strides(f.scope, domains);
        uint64_t index = 0;
        for (auto [j, v] : llvm::enumerate(f.scope))
          index += s[j] * (v == step.var ? xv : values[v]);
        sum += f.table[index];
      }
      if (sum < best) {
        best = sum;
        bestValue = xv;
      }
    }
    values[step.var] = bestValue;
  }
  return values;
}
