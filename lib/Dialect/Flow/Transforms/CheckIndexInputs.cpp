//===- CheckIndexInputs.cpp - Mark arguments read as indices --------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A gather clamps an out-of-range index (so no read leaves its input); an
// argument that reaches a gather's indices unchanged is marked with the
// range its values must lie in, and the runtime checks every call's value
// against it (runtime: IndexCheck, checkIndices).
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/Support/Location.h"
#include "mlir/IR/Matchers.h"

#include <optional>

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_CHECKINDEXINPUTSPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
/// The integer every element of \p v holds, when it is a splat constant.
std::optional<int64_t> splatInteger(Value v) {
  DenseIntElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APInt>().getSExtValue();
}

/// Where a gather's indices come from: an argument of the function, the
/// value a loss masks out of it (select(x != c, x, k) allows c), and
/// whether negative values count from the end (select(x < 0, x + n, x)).
struct Source {
  BlockArgument argument;
  std::optional<int64_t> ignore;
  bool wraps = false;
};

/// The argument whose values \p v holds unchanged (see the pass's
/// description), with the indices' \p bound; nullopt when \p v is computed.
std::optional<Source> sourceOf(Value v, int64_t bound) {
  Source source;
  // A chain of views is short; a bound on it keeps a malformed cycle out.
  for (int hops = 0; hops < 64; ++hops) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return std::nullopt;
      source.argument = arg;
      return source;
    }
    Operation *op = v.getDefiningOp();
    if (isa<ReshapeOp, BroadcastToOp, TransposeOp>(op)) {
      v = op->getOperand(0);
      continue;
    }
    if (auto cast = dyn_cast<CastOp>(op)) {
      // Only a widening cast between integers keeps every value (a
      // narrowing one would wrap an id of 2^32 + 5 to 5).
      auto from =
          dyn_cast<IntegerType>(cast.getInput().getType().getElementType());
      auto to = dyn_cast<IntegerType>(cast.getType().getElementType());
      if (!from || !to || from.getWidth() < 2 ||
          from.getWidth() > to.getWidth())
        return std::nullopt;
      v = cast.getInput();
      continue;
    }
    if (auto select = dyn_cast<SelectOp>(op)) {
      auto compare = select.getCondition().getDefiningOp<CompareOp>();
      if (!compare)
        return std::nullopt;
      // select(x < 0, x + bound, x): x in [-bound, bound) reads in range.
      if (compare.getPredicate() == ComparePredicate::lt) {
        Value x = select.getOnFalse();
        auto add = select.getOnTrue().getDefiningOp<AddOp>();
        std::optional<int64_t> zero = splatInteger(compare.getRhs());
        if (source.wraps || compare.getLhs() != x || !zero || *zero != 0 ||
            !add)
          return std::nullopt;
        Value size = add.getLhs() == x   ? add.getRhs()
                     : add.getRhs() == x ? add.getLhs()
                                         : Value();
        std::optional<int64_t> n = size ? splatInteger(size) : std::nullopt;
        if (!n || *n != bound)
          return std::nullopt;
        source.wraps = true;
        v = x;
        continue;
      }
      if (compare.getPredicate() != ComparePredicate::ne || source.ignore)
        return std::nullopt;
      Value x = select.getOnTrue();
      Value other = compare.getLhs() == x   ? compare.getRhs()
                    : compare.getRhs() == x ? compare.getLhs()
                                            : Value();
      std::optional<int64_t> ignored =
          other ? splatInteger(other) : std::nullopt;
      std::optional<int64_t> replacement = splatInteger(select.getOnFalse());
      // The masked value's stand-in must itself be a valid index.
      if (!ignored || !replacement || *replacement < 0 || *replacement >= bound)
        return std::nullopt;
      source.ignore = ignored;
      v = x;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

struct CheckIndexInputsPass
    : flow::impl::CheckIndexInputsPassBase<CheckIndexInputsPass> {
  using CheckIndexInputsPassBase::CheckIndexInputsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    struct Check {
      int64_t bound;
      int64_t lower;
      std::optional<int64_t> ignore;
      std::string what;
    };
    llvm::DenseMap<unsigned, Check> checks;
    auto visit = [&](Operation *op, Value input, Value indices, int64_t axis) {
      auto type = dyn_cast<RankedTensorType>(input.getType());
      if (!type || axis < 0 || axis >= type.getRank() ||
          type.isDynamicDim(axis))
        return;
      int64_t bound = type.getDimSize(axis);
      std::optional<Source> source = sourceOf(indices, bound);
      if (!source)
        return;
      Check check{
          bound, source->wraps ? -bound : 0, source->ignore,
          (op->getName().getStringRef() + " at " + locationText(op->getLoc()))
              .str()};
      auto [it, inserted] =
          checks.try_emplace(source->argument.getArgNumber(), check);
      if (inserted)
        return;
      // Read by several gathers: the strictest range; a value one of them
      // ignores is allowed only if all do.
      Check &seen = it->second;
      if (check.bound < seen.bound) {
        seen.bound = check.bound;
        seen.what = check.what;
      }
      seen.lower = std::max(std::max(seen.lower, check.lower), -seen.bound);
      if (seen.ignore != check.ignore)
        seen.ignore = std::nullopt;
    };
    func.walk([&](Operation *op) {
      if (auto gather = dyn_cast<GatherOp>(op))
        visit(op, gather.getInput(), gather.getIndices(), gather.getAxis());
      else if (auto gather = dyn_cast<GatherElementsOp>(op))
        visit(op, gather.getInput(), gather.getIndices(), gather.getAxis());
    });
    Builder b(&getContext());
    for (auto &[index, check] : checks) {
      SmallVector<NamedAttribute> entries = {
          b.getNamedAttr("bound", b.getI64IntegerAttr(check.bound)),
          b.getNamedAttr("what", b.getStringAttr(check.what))};
      if (check.lower != 0)
        entries.push_back(
            b.getNamedAttr("lower", b.getI64IntegerAttr(check.lower)));
      if (check.ignore)
        entries.push_back(
            b.getNamedAttr("ignore", b.getI64IntegerAttr(*check.ignore)));
      func.setArgAttr(index, FlowDialect::getIndexCheckAttrName(),
                      b.getDictionaryAttr(entries));
      ++numChecked;
    }
  }
};
} // namespace
