//===- MinSum.h - Exact min-sum over a graph of choices ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The SBP planner's exact search: choose one value per variable (an op's
// signature, an argument's layout) to minimize a sum of costs over single
// variables and pairs of them. Solved by variable elimination (bucket
// elimination): variables are summed out one at a time, the one growing
// the tables least first, each leaving a table over its neighbours; a chain of transformer layers
// eliminates in time linear in its length. Exact whenever it finishes;
// it gives up, rather than run long, when a table would grow past a
// budget (a graph whose elimination keeps many variables together).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_SUPPORT_MINSUM_H
#define FLOW_SUPPORT_MINSUM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace flow {

class MinSumProblem {
public:
  /// With `scopesOnly`, the problem keeps which variables each cost term
  /// joins but calls no cost function: enough for `fits`, to size an
  /// elimination before paying for its tables.
  explicit MinSumProblem(bool scopesOnly = false) : scopesOnly(scopesOnly) {}

  /// A new variable taking `domain` (> 0) values; returns its number.
  unsigned addVariable(unsigned domain);
  /// Adds `cost(i)` when `var` takes value i.
  void addUnary(unsigned var, llvm::function_ref<double(unsigned)> cost);
  /// Adds `cost(i, j)` when `a` takes i and `b` takes j (a != b).
  void addPairwise(unsigned a, unsigned b,
                   llvm::function_ref<double(unsigned, unsigned)> cost);

  /// Adds `cost(values)` for every assignment of the distinct variables
  /// `vars` (values given in the order of `vars`).
  void addFactor(llvm::ArrayRef<unsigned> vars,
                 llvm::function_ref<double(llvm::ArrayRef<unsigned>)> cost);

  unsigned numVariables() const { return domains.size(); }
  unsigned domain(unsigned var) const { return domains[var]; }

  /// Whether the elimination stays within the budgets of `solve` (false
  /// and why otherwise); works on scopes alone.
  bool fits(std::string &why, uint64_t maxEntries, uint64_t maxWork) const {
    return eliminate(/*numeric=*/false, why, maxEntries, maxWork).has_value();
  }

  /// The values minimizing the sum, and the sum; std::nullopt (and why in
  /// `why`) when an intermediate table would hold more than `maxEntries`
  /// entries or the elimination would take more than `maxWork` steps.
  std::optional<llvm::SmallVector<unsigned>> solve(double &cost,
                                                   std::string &why,
                                                   uint64_t maxEntries,
                                                   uint64_t maxWork) const;

  /// Statistics of the last successful solve: the largest table built.
  mutable uint64_t largestTable = 0;

private:
  /// Eliminates every variable; with `numeric` false, scopes only (the
  /// order and the work, to give up early).
  std::optional<llvm::SmallVector<unsigned>>
  eliminate(bool numeric, std::string &why, uint64_t maxEntries,
            uint64_t maxWork, double *cost = nullptr) const;

  struct Factor {
    llvm::SmallVector<unsigned, 4> scope; // sorted
    std::vector<double> table;            // row-major, last variable fastest
  };
  bool scopesOnly;
  std::vector<unsigned> domains;
  std::vector<Factor> factors;
};

} // namespace flow
} // namespace mlir

#endif // FLOW_SUPPORT_MINSUM_H
