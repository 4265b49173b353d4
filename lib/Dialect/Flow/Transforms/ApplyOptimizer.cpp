//===- ApplyOptimizer.cpp - A training step's parameter update ------------===//
//
// Part of the Flow project.
//
// Replaces the gradients flow-autodiff returned by the parameters' next
// values under the function's optimizer (SGD with momentum, AdamW, global
// gradient clipping), written in flow ops, and adds the optimizer's state
// (moments, the step count) as state arguments and results.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/runtime/TrainingState.h"

#include <string>

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// The `flow.optimizer` dictionary, read and checked.
struct Optimizer {
  bool adamw = false;
  double momentum = 0, weightDecay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double maxGradNorm = 0;
  /// Keep the state as it was when the loss is not finite.
  bool skipNonFinite = false;
  /// ZeRO: split the optimizer's moments S(0) over the mesh's first axis.
  bool shardState = false;

  static FailureOr<Optimizer> read(func::FuncOp func, DictionaryAttr dict) {
    Optimizer o;
    auto fail = [&]() {
      return func.emitError("flow-apply-optimizer: '")
             << FlowDialect::getOptimizerAttrName() << "' of @"
             << func.getSymName() << ": ";
    };
    auto kind = dict.getAs<StringAttr>("kind");
    if (!kind || (kind.getValue() != "sgd" && kind.getValue() != "adamw"))
      return fail() << "'kind' must be \"sgd\" or \"adamw\"";
    o.adamw = kind.getValue() == "adamw";
    if (o.adamw)
      o.weightDecay = 0.01; // torch.optim.AdamW's default
    SmallVector<std::pair<StringRef, double *>> fields = {
        {"weight_decay", &o.weightDecay}, {"max_grad_norm", &o.maxGradNorm}};
    if (o.adamw)
      fields.append({{"beta1", &o.beta1}, {"beta2", &o.beta2}, {"eps", &o.eps}});
    else
      fields.push_back({"momentum", &o.momentum});
    for (NamedAttribute entry : dict) {
      if (entry.getName() == "kind")
        continue;
      if (entry.getName() == "skip_nonfinite" ||
          entry.getName() == "shard_state") {
        auto flag = dyn_cast<BoolAttr>(entry.getValue());
        if (!flag)
          return fail() << "'" << entry.getName().getValue()
                        << "' must be true or false";
        (entry.getName() == "shard_state" ? o.shardState : o.skipNonFinite) =
            flag.getValue();
        continue;
      }
      auto *field = llvm::find_if(
          fields, [&](auto &f) { return f.first == entry.getName(); });
      if (field == fields.end()) {
        std::string names;
        for (auto &f : fields)
          names += (names.empty() ? "" : ", ") + f.first.str();
        names += ", skip_nonfinite, shard_state";
        return fail() << "unknown entry '" << entry.getName().getValue()
                      << "' (" << kind.getValue() << " takes " << names << ")";
      }
      if (auto f = dyn_cast<FloatAttr>(entry.getValue()))
        *field->second = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        *field->second = static_cast<double>(i.getInt());
      else
        return fail() << "'" << entry.getName().getValue()
                      << "' must be a number";
    }
    auto in = [](double v, double lo, double hi) { return v >= lo && v < hi; };
    if (!in(o.momentum, 0, 1) || !in(o.beta1, 0, 1) || !in(o.beta2, 0, 1))
      return fail() << "momentum and betas must lie in [0, 1)";
    if (!(o.eps > 0) || !(o.weightDecay >= 0) || !(o.maxGradNorm >= 0))
      return fail() << "eps must be positive, weight_decay and max_grad_norm "
                       "not negative";
    return o;
  }
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Builds one function's update.
class StepBuilder {
public:
  StepBuilder(func::FuncOp func, func::ReturnOp ret, const Optimizer &opt,
              bool freeLayouts)
      : func(func), b(ret), loc(func.getLoc()), opt(opt),
        freeLayouts(freeLayouts) {}

  LogicalResult run();

private:
  func::FuncOp func;
  OpBuilder b;
  Location loc;
  const Optimizer &opt;
  /// Whether the SBP planner chooses the layouts of parameters without one.
  bool freeLayouts;
  /// Results to append: (value, state name), and each one's argument.
  SmallVector<std::pair<Value, std::string>> newResults;
  llvm::StringMap<Value> oldState;

  Value scalar(double v, Type element) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, element),
                               b.getFloatAttr(element, v)));
  }
  Value asType(Value v, Type element) {
    RankedTensorType t = typeOf(v);
    if (t.getElementType() == element)
      return v;
    return CastOp::create(b, loc, RankedTensorType::get(t.getShape(), element),
                          v);
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value mul(Value x, double c) {
    return mul(x, scalar(c, typeOf(x).getElementType()));
  }

  /// The nd-SBP of the moments of parameter `param` on a mesh (null
  /// without one): its parameter's, so each device updates the piece of
  /// the parameter it keeps. With shard_state (ZeRO), also split over the
  /// mesh's first axis where the parameter is broadcast there: along the
  /// first dimension no other axis splits and that has at least as many
  /// elements as the axis has devices (none: the parameter's layout).
  SbpAttr momentSbp(BlockArgument param) {
    auto meshRef = func->getAttrOfType<FlatSymbolRefAttr>(
        FlowDialect::getMeshAttrName());
    MeshOp mesh = meshRef ? lookupMesh(func, meshRef) : MeshOp();
    if (!mesh)
      return nullptr;
    ArrayRef<int64_t> shape = mesh.getShape();
    SmallVector<SbpDim> dims(shape.size(), SbpDim::broadcast());
    if (auto own = func.getArgAttrOfType<SbpAttr>(
            param.getArgNumber(), FlowDialect::getSbpAttrName()))
      dims.assign(own.getDims().begin(), own.getDims().end());
    else if (freeLayouts && !opt.shardState)
      return nullptr; // the planner's to choose
    auto tensor = cast<RankedTensorType>(param.getType());
    if (opt.shardState && dims[0].isBroadcast())
      for (int64_t d = 0; d < tensor.getRank(); ++d) {
        bool elsewhere = llvm::any_of(dims, [&](SbpDim s) {
          return s.isSplit() && s.dim == d;
        });
        if (!elsewhere && tensor.getDimSize(d) >= shape[0]) {
          dims[0] = SbpDim::split(d);
          break;
        }
      }
    return SbpAttr::get(func.getContext(), dims);
  }

  /// A new state argument named `name`, zeros at the start (its next value
  /// goes into `newResults` under the same name), laid out as `sbp` on a
  /// mesh.
  BlockArgument stateArgument(StringRef name, Type type,
                              SbpAttr sbp = nullptr) {
    unsigned index = func.getNumArguments();
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(FlowDialect::getStateAttrName(), b.getStringAttr(name)),
        b.getNamedAttr(FlowDialect::getStateInitAttrName(),
                       b.getStringAttr("zeros"))};
    if (sbp) {
      attrs.push_back(b.getNamedAttr(FlowDialect::getSbpAttrName(), sbp));
      stateSbp[name] = sbp;
    }
    (void)func.insertArgument(index, type, b.getDictionaryAttr(attrs), loc);
    oldState[name] = func.getArgument(index);
    return func.getArgument(index);
  }
  /// The layout of each new state on a mesh.
  llvm::StringMap<SbpAttr> stateSbp;
};

LogicalResult StepBuilder::run() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // (result position, parameter argument) of each gradient.
  SmallVector<std::pair<unsigned, unsigned>> grads;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto of = func.getResultAttrOfType<IntegerAttr>(
            i, FlowDialect::getGradientOfAttrName()))
      grads.push_back({i, static_cast<unsigned>(of.getInt())});
  if (grads.empty())
    return func.emitError("flow-apply-optimizer: @")
           << func.getSymName()
           << " has an optimizer but no gradients: mark its parameters "
              "flow.requires_grad (flow-autodiff runs first)";

  // State the function updates itself (a random generator's offset): the
  // (result, argument) of each.
  SmallVector<std::pair<unsigned, unsigned>> ownState;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(
        i, FlowDialect::getStateAttrName());
    if (!name)
      continue;
    for (unsigned a = 0; a < func.getNumArguments(); ++a)
      if (func.getArgAttrOfType<StringAttr>(
              a, FlowDialect::getStateAttrName()) == name)
        ownState.push_back({i, a});
  }

  unsigned lrIndex = func.getNumArguments();
  Type f32 = b.getF32Type();
  if (failed(func.insertArgument(
          lrIndex, RankedTensorType::get({}, f32),
          b.getDictionaryAttr(b.getNamedAttr(
              FlowDialect::getLearningRateAttrName(), b.getUnitAttr())),
          loc)))
    return failure();
  Value lr = func.getArgument(lrIndex);

  // On a mesh each gradient is first laid out as its parameter's update
  // runs: as the moments (the parameter's layout, rows split with
  // shard_state). A partial gradient is then reduced once, all-reduced for
  // a replicated update or reduce-scattered for a sharded one, and clipping
  // and every update op read the reduced value in the layout the state is
  // kept in.
  auto meshRef = func->getAttrOfType<FlatSymbolRefAttr>(
      FlowDialect::getMeshAttrName());
  SmallVector<Value> gradients;
  for (auto [result, arg] : grads) {
    Value g = ret.getOperand(result);
    if (SbpAttr layout = momentSbp(func.getArgument(arg)))
      g = AnnotateOp::create(b, loc, g.getType(), g, meshRef, layout);
    gradients.push_back(g);
  }

  // Global-norm clipping: every gradient times min(1, max / (norm + 1e-6)).
  if (opt.maxGradNorm > 0) {
    Value sumSq;
    for (Value g : gradients) {
      Value g32 = asType(g, f32);
      SmallVector<int64_t> all = llvm::to_vector(
          llvm::seq<int64_t>(0, typeOf(g).getRank()));
      Value sq = mul(g32, g32);
      Value s = all.empty() ? sq
                            : ReduceSumOp::create(b, loc, sq, all, false)
                                  .getResult();
      sumSq = sumSq ? add(sumSq, s) : s;
    }
    Value norm = SqrtOp::create(b, loc, sumSq);
    Value coef = div(scalar(opt.maxGradNorm, f32), add(norm, scalar(1e-6, f32)));
    coef = MinimumOp::create(b, loc, coef, scalar(1.0, f32));
    for (Value &g : gradients)
      g = mul(g, asType(coef, typeOf(g).getElementType()));
  }

  // AdamW's step count and bias corrections, shared by every parameter.
  Value t;
  if (opt.adamw) {
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    std::string stepName(::flow::runtime::kOptimizerStepState);
    BlockArgument step = stateArgument(stepName, i64);
    Value one = ConstantOp::create(
        b, loc, DenseElementsAttr::get(i64, b.getI64IntegerAttr(1)));
    Value next = AddOp::create(b, loc, step, one);
    newResults.push_back({next, stepName});
    t = asType(next, f32);
  }

  SmallVector<Value> operands(ret.getOperands());
  for (auto [i, entry] : llvm::enumerate(grads)) {
    auto [result, argIndex] = entry;
    BlockArgument p = func.getArgument(argIndex);
    Type element = typeOf(p).getElementType();
    std::string name;
    if (auto state = func.getArgAttrOfType<StringAttr>(
            argIndex, FlowDialect::getStateAttrName()))
      name = state.getValue().str();
    else {
      name = "arg" + std::to_string(argIndex);
      func.setArgAttr(argIndex, FlowDialect::getStateAttrName(),
                      b.getStringAttr(name));
    }
    Value g = gradients[i];
    Value lrT = asType(lr, element);
    Value next;
    if (!opt.adamw) {
      // torch.optim.SGD: g += wd p; buf = momentum buf + g; p -= lr buf.
      if (opt.weightDecay != 0)
        g = add(g, mul(p, opt.weightDecay));
      if (opt.momentum != 0) {
        std::string bufName =
            name + std::string(::flow::runtime::kMomentumSuffix);
        BlockArgument buf = stateArgument(bufName, p.getType(), momentSbp(p));
        g = add(mul(buf, opt.momentum), g);
        newResults.push_back({g, bufName});
      }
      next = sub(p, mul(lrT, g));
    } else {
      // torch.optim.AdamW: p *= 1 - lr wd; m = lerp(m, g, 1 - b1);
      // v = b2 v + (1 - b2) g^2; p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
      std::string mName =
          name + std::string(::flow::runtime::kFirstMomentSuffix);
      std::string vName =
          name + std::string(::flow::runtime::kSecondMomentSuffix);
      SbpAttr layout = momentSbp(p);
      BlockArgument m = stateArgument(mName, p.getType(), layout);
      BlockArgument v = stateArgument(vName, p.getType(), layout);
      Value m2 = add(m, mul(sub(g, m), 1 - opt.beta1));
      Value v2 = add(mul(v, opt.beta2), mul(mul(g, g), 1 - opt.beta2));
      newResults.push_back({m2, mName});
      newResults.push_back({v2, vName});
      Value bc1 = sub(scalar(1, f32),
                      PowOp::create(b, loc, scalar(opt.beta1, f32), t));
      Value bc2 = sub(scalar(1, f32),
                      PowOp::create(b, loc, scalar(opt.beta2, f32), t));
      Value stepSize = asType(div(lr, bc1), element);
      Value bc2Sqrt = asType(SqrtOp::create(b, loc, bc2), element);
      Value denom = add(div(SqrtOp::create(b, loc, v2), bc2Sqrt),
                        scalar(opt.eps, element));
      Value decayed = p;
      if (opt.weightDecay != 0)
        decayed = mul(p, sub(scalar(1, element),
                             mul(lrT, opt.weightDecay)));
      next = sub(decayed, mul(stepSize, div(m2, denom)));
    }
    operands[result] = next;
    func.setResultAttrs(
        result, b.getDictionaryAttr(b.getNamedAttr(
                    FlowDialect::getStateAttrName(), b.getStringAttr(name))));
  }
  // A step whose loss is NaN or infinite leaves every state as it was (the
  // caller is told by the loss it gets back).
  if (opt.skipNonFinite) {
    Value loss = ret.getOperand(0);
    Value zero = scalar(0, typeOf(loss).getElementType());
    Value finite = CompareOp::create(b, loc, ComparePredicate::eq,
                                     sub(loss, loss), zero);
    auto keep = [&](Value next, Value old) -> Value {
      return SelectOp::create(b, loc, finite, next, old);
    };
    for (auto [result, argIndex] : llvm::concat<std::pair<unsigned, unsigned>>(
             grads, ownState))
      operands[result] = keep(operands[result], func.getArgument(argIndex));
    for (auto &[value, name] : newResults)
      value = keep(value, oldState.lookup(name));
  }
  for (auto &[value, name] : newResults) {
    unsigned index = operands.size();
    operands.push_back(value);
    SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
        FlowDialect::getStateAttrName(), b.getStringAttr(name))};
    // A moment keeps its layout from step to step.
    if (SbpAttr sbp = stateSbp.lookup(name))
      attrs.push_back(b.getNamedAttr(FlowDialect::getSbpAttrName(), sbp));
    if (failed(func.insertResult(index, value.getType(),
                                 b.getDictionaryAttr(attrs))))
      return failure();
  }
  ret->setOperands(operands);
  return success();
}

struct ApplyOptimizerPass
    : mlir::flow::impl::ApplyOptimizerPassBase<ApplyOptimizerPass> {
  using ApplyOptimizerPassBase::ApplyOptimizerPassBase;
  void runOnOperation() override {
    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      auto dict = func->getAttrOfType<DictionaryAttr>(
          FlowDialect::getOptimizerAttrName());
      if (!dict || func.isExternal())
        continue;
      FailureOr<Optimizer> opt = Optimizer::read(func, dict);
      if (failed(opt))
        return signalPassFailure();
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      if (failed(StepBuilder(func, ret, *opt, freeLayouts).run()))
        return signalPassFailure();
      func->removeAttr(FlowDialect::getOptimizerAttrName());
    }
  }
};

} // namespace
