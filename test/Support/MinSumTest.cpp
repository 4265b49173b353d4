//===- MinSumTest.cpp - The exact min-sum solver against enumeration ------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Support/MinSum.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

using namespace mlir::flow;

namespace {
/// A problem kept twice: in the solver, and as terms to enumerate.
struct Reference {
  std::vector<unsigned> domains;
  std::vector<std::pair<std::vector<unsigned>,
                        std::function<double(const std::vector<unsigned> &)>>>
      terms;

  double cost(const std::vector<unsigned> &values) const {
    double sum = 0;
    for (const auto &[vars, f] : terms) {
      std::vector<unsigned> given;
      for (unsigned v : vars)
        given.push_back(values[v]);
      sum += f(given);
    }
    return sum;
  }

  double minimum() const {
    std::vector<unsigned> values(domains.size(), 0);
    double best = std::numeric_limits<double>::infinity();
    while (true) {
      best = std::min(best, cost(values));
      size_t i = 0;
      for (; i < values.size(); ++i) {
        if (++values[i] < domains[i])
          break;
        values[i] = 0;
      }
      if (i == values.size())
        return best;
    }
  }
};

/// A random problem of unary terms, pairs (either order of the pair) and
/// factors of three, built into `problem` and `ref` alike.
void randomProblem(std::mt19937 &rng, unsigned n, MinSumProblem &problem,
                   Reference &ref) {
  std::uniform_int_distribution<unsigned> domain(1, 4);
  std::uniform_real_distribution<double> value(0.0, 10.0);
  for (unsigned i = 0; i < n; ++i) {
    ref.domains.push_back(domain(rng));
    problem.addVariable(ref.domains.back());
  }
  // Random tables, looked up by the values in the order of `vars`.
  auto table = [&](std::vector<unsigned> vars) {
    size_t size = 1;
    for (unsigned v : vars)
      size *= ref.domains[v];
    std::vector<double> t(size);
    for (double &x : t)
      x = value(rng);
    auto f = [vars, t, domains = ref.domains](const std::vector<unsigned> &g) {
      size_t index = 0;
      for (size_t k = 0; k < vars.size(); ++k)
        index = index * domains[vars[k]] + g[k];
      return t[index];
    };
    ref.terms.push_back({vars, f});
    return f;
  };
  std::uniform_int_distribution<unsigned> var(0, n - 1);
  for (unsigned i = 0; i < n; ++i) {
    auto f = table({i});
    problem.addUnary(i, [&](unsigned a) { return f({a}); });
  }
  for (unsigned k = 0; k < n; ++k) {
    unsigned a = var(rng), b = var(rng);
    if (a == b)
      continue;
    auto f = table({a, b});
    problem.addPairwise(a, b, [&](unsigned x, unsigned y) { return f({x, y}); });
  }
  for (unsigned k = 0; k < n / 2; ++k) {
    unsigned a = var(rng), b = var(rng), c = var(rng);
    if (a == b || b == c || a == c)
      continue;
    auto f = table({a, b, c});
    problem.addFactor({a, b, c}, [&](llvm::ArrayRef<unsigned> g) {
      return f({g[0], g[1], g[2]});
    });
  }
}
} // namespace

// The solver's sum is the enumerated minimum, and its values reach it.
TEST(MinSumTest, EqualsEnumeration) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    MinSumProblem problem;
    Reference ref;
    randomProblem(rng, 2 + trial % 7, problem, ref);
    double cost = 0;
    std::string why;
    auto values = problem.solve(cost, why, 1 << 20, 1 << 30);
    ASSERT_TRUE(values.has_value()) << why;
    std::vector<unsigned> chosen(values->begin(), values->end());
    double best = ref.minimum();
    EXPECT_NEAR(cost, best, 1e-9 * std::max(1.0, best)) << "trial " << trial;
    EXPECT_NEAR(ref.cost(chosen), best, 1e-9 * std::max(1.0, best))
        << "trial " << trial;
  }
}

// A problem of scopes alone sizes the elimination as the full problem
// does, without calling any cost function; over budget, both give up.
TEST(MinSumTest, ScopesOnlySizesWithoutCosts) {
  auto build = [](MinSumProblem &problem, bool &called) {
    // A clique of 6 variables of 10 values: eliminating any leaves a
    // table over the other 5 (100,000 entries).
    for (int i = 0; i < 6; ++i)
      problem.addVariable(10);
    for (unsigned a = 0; a < 6; ++a)
      for (unsigned b = a + 1; b < 6; ++b)
        problem.addPairwise(a, b, [&](unsigned x, unsigned y) {
          called = true;
          return double(x == y);
        });
  };
  bool called = false;
  MinSumProblem scopes(/*scopesOnly=*/true);
  build(scopes, called);
  EXPECT_FALSE(called);
  std::string why;
  EXPECT_FALSE(scopes.fits(why, 10000, 1 << 30));
  EXPECT_NE(why.find("100000 entries"), std::string::npos) << why;
  EXPECT_TRUE(scopes.fits(why, 100000, 1 << 30));

  MinSumProblem problem;
  build(problem, called);
  EXPECT_TRUE(called);
  double cost = -1;
  EXPECT_FALSE(problem.solve(cost, why, 10000, 1 << 30).has_value());
  auto values = problem.solve(cost, why, 100000, 1 << 30);
  ASSERT_TRUE(values.has_value()) << why;
  EXPECT_EQ(cost, 0.0); // six different values: no pair equal
}
