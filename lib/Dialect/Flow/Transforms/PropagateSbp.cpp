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

#include "flow/Analysis/Sbp/Planner.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
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
using namespace mlir::flow::sbp;

namespace {
struct PropagateSbpPass : flow::impl::PropagateSbpPassBase<PropagateSbpPass> {
  using PropagateSbpPassBase::PropagateSbpPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto meshRef =
        func->getAttrOfType<FlatSymbolRefAttr>(FlowDialect::getMeshAttrName());
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
      plan.push_back(
          b.getNamedAttr("compute_seconds", b.getF64FloatAttr(f.compute)));
      for (const auto &entry : f.collectives)
        plan.push_back(b.getNamedAttr((entry.getKey() + "_seconds").str(),
                                      b.getF64FloatAttr(entry.getValue())));
      plan.push_back(b.getNamedAttr(
          "memory_bytes", b.getI64IntegerAttr(static_cast<int64_t>(f.memory))));
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
      auto reference =
          [&](StringRef name,
              function_ref<std::optional<NdSbp>(BlockArgument)> layout,
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
            references.push_back(
                b.getNamedAttr(name, b.getDictionaryAttr(describe(f, ""))));
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
      reference(
          "data_parallel",
          [&](BlockArgument arg) -> std::optional<NdSbp> {
            auto type = cast<RankedTensorType>(arg.getType());
            if (isData(arg))
              return planner.batchSplit(type);
            return broadcastSbp(mesh.getShape().size());
          },
          [](BlockArgument) { return false; });
      reference(
          "tensor_parallel",
          [&](BlockArgument arg) -> std::optional<NdSbp> {
            if (isData(arg))
              return broadcastSbp(mesh.getShape().size());
            return std::nullopt;
          },
          [&](BlockArgument arg) { return !isData(arg); });
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
