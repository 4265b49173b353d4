//===- FlowSbp.cpp - SBP rules of flow ops, validity and boxing costs -----===//
//
// Part of the Flow project.
//
// One `sbpRules(Op)` per op gives its signatures along one mesh axis (the
// rule table of docs/distributed.md); the interface model attaches them to
// every op of the dialect, so an op without rules does not compile.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/runtime/rules/Pieces.h"

#include <limits>

using namespace mlir;
using namespace mlir::flow;

#include "flow/Dialect/Flow/IR/FlowSbpInterface.cpp.inc"

namespace {

using Rules = SmallVector<SbpSignature>;

SbpDim S(int64_t d) { return SbpDim::split(d); }
const SbpDim B = SbpDim::broadcast();
const SbpDim P = SbpDim::partialSum();
const SbpDim PMax = SbpDim::partialMax();

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The all-B signature of `op`.
SbpSignature allBroadcast(Operation *op) {
  return {SmallVector<SbpDim>(op->getNumOperands(), B),
          SmallVector<SbpDim>(op->getNumResults(), B)};
}

/// Starts a rule list with the all-B signature.
Rules start(Operation *op) { return {allBroadcast(op)}; }

/// Every operand and result takes `d`.
SbpSignature uniform(Operation *op, SbpDim d) {
  return {SmallVector<SbpDim>(op->getNumOperands(), d),
          SmallVector<SbpDim>(op->getNumResults(), d)};
}

/// S(i) -> S(i) on every dimension of a same-shape op, plus `extra` SBPs
/// that pass through unchanged (P for linear ops).
Rules sameShape(Operation *op, ArrayRef<SbpDim> extra = {}) {
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op->getResult(0)).getRank(); i < e; ++i)
    rules.push_back(uniform(op, S(i)));
  for (SbpDim d : extra)
    rules.push_back(uniform(op, d));
  return rules;
}

/// Numpy-broadcast elementwise ops: S(i) of the result reads S(j) of each
/// operand whose dimension j is the real (non-broadcast) counterpart of i,
/// and B of operands that broadcast along i.
Rules broadcasting(Operation *op) {
  Rules rules = start(op);
  RankedTensorType result = typeOf(op->getResult(0));
  int64_t rank = result.getRank();
  for (int64_t i = 0; i < rank; ++i) {
    SbpSignature sig;
    bool anySplit = false;
    for (Value operand : op->getOperands()) {
      RankedTensorType t = typeOf(operand);
      int64_t j = i - (rank - t.getRank());
      if (j < 0 || (t.getDimSize(j) == 1 && result.getDimSize(i) != 1)) {
        sig.operands.push_back(B);
        continue;
      }
      sig.operands.push_back(S(j));
      anySplit = true;
    }
    if (!anySplit)
      continue;
    sig.results.push_back(S(i));
    rules.push_back(sig);
  }
  return rules;
}

} // namespace

//===----------------------------------------------------------------------===//
// Rules, one per op
//===----------------------------------------------------------------------===//

namespace mlir {
namespace flow {

bool isReducible(Type type) {
  Type element = cast<RankedTensorType>(type).getElementType();
  return isa<FloatType>(element) ||
         (isa<IntegerType>(element) && !element.isInteger(1));
}

namespace {

// Structure: placed by propagation itself, or not at all.
Rules sbpRules(MeshOp) { return {}; }
Rules sbpRules(AnnotateOp op) { return {}; }
// Dispatch regions are formed after partitioning, on device programs.
Rules sbpRules(DispatchRegionOp) { return {}; }
Rules sbpRules(ReturnOp) { return {}; }
// Size symbols are compiled for one device.
Rules sbpRules(SymbolsOp) { return {}; }
// Constants are the same on every device; B -> S is a local slice.
Rules sbpRules(ConstantOp op) { return start(op); }
Rules sbpRules(ParameterOp op) { return start(op); }
// Every device draws the whole tensor (its numbers depend on the global
// index), so the numbers do not depend on the layout; a split consumer
// takes its slice locally.
Rules sbpRules(RandomUniformOp op) { return start(op); }

// Unary elementwise: splits pass through; negation and float casts are
// linear, so partial sums do too.
Rules sbpRules(NegOp op) { return sameShape(op, {P}); }
Rules sbpRules(AbsOp op) { return sameShape(op); }
Rules sbpRules(ExpOp op) { return sameShape(op); }
Rules sbpRules(LogOp op) { return sameShape(op); }
Rules sbpRules(SqrtOp op) { return sameShape(op); }
Rules sbpRules(RsqrtOp op) { return sameShape(op); }
Rules sbpRules(TanhOp op) { return sameShape(op); }
Rules sbpRules(SinOp op) { return sameShape(op); }
Rules sbpRules(CosOp op) { return sameShape(op); }
Rules sbpRules(FloorOp op) { return sameShape(op); }
Rules sbpRules(CeilOp op) { return sameShape(op); }
Rules sbpRules(RoundOp op) { return sameShape(op); }
Rules sbpRules(ErfOp op) { return sameShape(op); }
Rules sbpRules(SigmoidOp op) { return sameShape(op); }
Rules sbpRules(ReluOp op) { return sameShape(op); }
Rules sbpRules(SiluOp op) { return sameShape(op); }
Rules sbpRules(GeluOp op) { return sameShape(op); }
Rules sbpRules(CastOp op) {
  // A partial sum passes a cast from a float to f32, which loses nothing;
  // a narrowing cast rounds each piece (the sum of rounded pieces is not
  // the rounded sum): reduce first.
  bool exact = isa<FloatType>(typeOf(op.getInput()).getElementType()) &&
               typeOf(op.getResult()).getElementType().isF32();
  return exact ? sameShape(op, {P}) : sameShape(op);
}

// Binary elementwise.
Rules sbpRules(AddOp op) {
  Rules r = broadcasting(op);
  r.push_back({{P, P}, {P}});
  return r;
}
Rules sbpRules(SubOp op) {
  Rules r = broadcasting(op);
  r.push_back({{P, P}, {P}});
  return r;
}
Rules sbpRules(MulOp op) {
  Rules r = broadcasting(op);
  r.push_back({{P, B}, {P}});
  r.push_back({{B, P}, {P}});
  return r;
}
Rules sbpRules(DivOp op) {
  Rules r = broadcasting(op);
  // (a + b) / c = a / c + b / c for real division only; integer division
  // rounds each piece.
  if (isa<FloatType>(typeOf(op.getResult()).getElementType()))
    r.push_back({{P, B}, {P}});
  return r;
}
Rules sbpRules(MaximumOp op) {
  Rules r = broadcasting(op);
  r.push_back({{PMax, PMax}, {PMax}});
  return r;
}
Rules sbpRules(MinimumOp op) { return broadcasting(op); }
Rules sbpRules(PowOp op) { return broadcasting(op); }
Rules sbpRules(CompareOp op) { return broadcasting(op); }
Rules sbpRules(SelectOp op) { return broadcasting(op); }

// Contractions.
Rules sbpRules(MatmulOp op) {
  Rules rules = start(op);
  RankedTensorType lhs = typeOf(op.getLhs()), rhs = typeOf(op.getRhs()),
                   result = typeOf(op.getResult());
  int64_t lr = lhs.getRank(), rr = rhs.getRank(), rank = result.getRank();
  int64_t lhsM = op.getTransposeLhs() ? lr - 1 : lr - 2;
  int64_t lhsK = op.getTransposeLhs() ? lr - 2 : lr - 1;
  int64_t rhsK = op.getTransposeRhs() ? rr - 1 : rr - 2;
  int64_t rhsN = op.getTransposeRhs() ? rr - 2 : rr - 1;
  rules.push_back({{S(lhsM), B}, {S(rank - 2)}});
  rules.push_back({{B, S(rhsN)}, {S(rank - 1)}});
  rules.push_back({{S(lhsK), S(rhsK)}, {P}});
  rules.push_back({{P, B}, {P}});
  rules.push_back({{B, P}, {P}});
  // Batch dimensions split on every operand that really has them.
  for (int64_t i = 0; i < rank - 2; ++i) {
    SbpSignature sig{{}, {S(i)}};
    for (auto [t, r] : {std::pair(lhs, lr), std::pair(rhs, rr)}) {
      int64_t j = i - (rank - r);
      bool real = j >= 0 && !(t.getDimSize(j) == 1 && result.getDimSize(i) != 1);
      sig.operands.push_back(real ? S(j) : B);
    }
    rules.push_back(sig);
  }
  return rules;
}

/// Attention splits with its batch and head dimensions, its query rows
/// (not causal: a piece's rows would need their global positions) and its
/// value columns; keys stay whole (their softmax spans them). A mask
/// splits where it really has the dimension.
Rules sbpRules(AttentionOp op) {
  Rules rules = start(op);
  int64_t rank = typeOf(op.getResult()).getRank();
  RankedTensorType scores = op.getScoresType();
  auto maskDim = [&](int64_t i) {
    RankedTensorType m = typeOf(op.getMask());
    int64_t j = i - (rank - m.getRank());
    bool real = j >= 0 && !(m.getDimSize(j) == 1 && scores.getDimSize(i) != 1);
    return real ? S(j) : B;
  };
  auto add = [&](SbpDim q, SbpDim k, SbpDim v, int64_t maskAt, SbpDim out) {
    SbpSignature sig{{q, k, v}, {out}};
    if (op.getMask())
      sig.operands.push_back(maskAt < 0 ? B : maskDim(maskAt));
    rules.push_back(sig);
  };
  for (int64_t i = 0; i < rank - 2; ++i)
    add(S(i), S(i), S(i), i, S(i));
  if (!op.getCausal())
    add(S(rank - 2), B, B, rank - 2, S(rank - 2));
  add(B, B, S(rank - 1), -1, S(rank - 1));
  return rules;
}

Rules sbpRules(Conv2dOp op) {
  Rules rules = start(op);
  bool bias = static_cast<bool>(op.getBias());
  auto sig = [&](SbpDim in, SbpDim w, SbpDim b, SbpDim out) {
    SbpSignature s{{in, w}, {out}};
    if (bias)
      s.operands.push_back(b);
    return s;
  };
  // Data parallel over the batch; with one group, output channels over the
  // weight's rows, and input channels give partial sums (the bias counted
  // once: its P is free to make from B). With groups (depthwise included),
  // whole groups split: a device convolves its groups' input channels with
  // their weights into their output channels, where the pieces divide the
  // groups evenly.
  rules.push_back(sig(S(0), B, B, S(0)));
  if (op.getGroups() == 1) {
    rules.push_back(sig(B, S(0), S(0), S(1)));
    rules.push_back(sig(S(1), S(1), P, P));
  } else {
    SbpSignature grouped = sig(S(1), S(0), S(0), S(1));
    grouped.evenSplits = true;
    grouped.blocks = op.getGroups();
    rules.push_back(grouped);
  }
  return rules;
}

Rules sbpRules(Im2ColOp op) {
  Rules rules = start(op);
  rules.push_back({{S(0)}, {S(0)}});
  rules.push_back({{S(1)}, {S(1)}});
  return rules;
}

// Reductions: kept axes pass their splits through (renumbered without
// keepdims); a split reduced axis leaves partial results.
template <typename Op> Rules reductionRules(Op op, SbpDim partial) {
  Rules rules = start(op);
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t rank = typeOf(op.getInput()).getRank();
  int64_t out = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i)) {
      rules.push_back({{S(i)}, {partial}});
      if (op.getKeepdims())
        ++out;
      continue;
    }
    rules.push_back({{S(i)}, {S(out++)}});
  }
  if (partial.isPartial())
    rules.push_back({{partial}, {partial}});
  return rules;
}
Rules sbpRules(ReduceSumOp op) { return reductionRules(op, P); }
// Running sums: splits of the other axes pass; the sum is linear.
Rules sbpRules(CumsumOp op) {
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i)
    if (i != op.getAxis())
      rules.push_back({{S(i)}, {S(i)}});
  rules.push_back({{P}, {P}});
  return rules;
}
Rules sbpRules(SortOp op) {
  // Rows sort alone: splits of the other axes pass to both results.
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i)
    if (i != op.getAxis())
      rules.push_back({{S(i)}, {S(i), S(i)}});
  return rules;
}
// Arg reductions: splits of the other axes pass (renumbered without
// keepdims); the index along a split axis would need the other pieces.
template <typename Op> Rules argReduceRules(Op op) {
  Rules rules = start(op);
  int64_t out = 0;
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i) {
    if (i == op.getAxis()) {
      if (op.getKeepdims())
        ++out;
      continue;
    }
    rules.push_back({{S(i)}, {S(out++)}});
  }
  return rules;
}
Rules sbpRules(ArgmaxOp op) { return argReduceRules(op); }
Rules sbpRules(ArgminOp op) { return argReduceRules(op); }
Rules sbpRules(ReduceMeanOp op) { return reductionRules(op, P); }
Rules sbpRules(ReduceMaxOp op) { return reductionRules(op, PMax); }

// Normalizations. Splits of the other axes pass through. Over a split
// normalized axis each device computes partial statistics of its piece
// (a maximum and a sum for softmax, sums for the norms) and reduces them
// across the splitting mesh axes itself (its partition hook): one small
// all-reduce per statistic, priced by `statisticsBytes`.
double elementBytes(Type type) {
  return static_cast<double>(
      elementStorageBytes(cast<RankedTensorType>(type).getElementType()));
}
/// Marks `sig` as reducing `count` statistics of `input` over dimensions
/// [from, to) across the mesh axis.
void reducesStatistics(SbpSignature &sig, Value input, int64_t from,
                       int64_t to, int count) {
  RankedTensorType t = typeOf(input);
  double rows = static_cast<double>(t.getNumElements());
  for (int64_t d = from; d < to; ++d)
    rows /= static_cast<double>(t.getDimSize(d));
  sig.statisticsCount = count;
  sig.statisticsBytes = rows * elementBytes(t);
}
template <typename Op> Rules softmaxRules(Op op) {
  Rules rules = start(op);
  int64_t axis = op.getAxis();
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i)
    if (i != axis)
      rules.push_back({{S(i)}, {S(i)}});
  if (isReducible(op.getInput().getType())) {
    SbpSignature split{{S(axis)}, {S(axis)}};
    reducesStatistics(split, op.getInput(), axis, axis + 1, 2);
    rules.push_back(split);
  }
  return rules;
}
Rules sbpRules(SoftmaxOp op) { return softmaxRules(op); }
Rules sbpRules(LogSoftmaxOp op) { return softmaxRules(op); }
/// Norms over [axis, rank): the leading dimensions split with the weight
/// and bias whole; a normalized dimension splits with the matching
/// dimension of the weight and bias (`stats` sums reduced across devices).
template <typename Op> Rules normRules(Op op, int stats) {
  Rules rules = start(op);
  int64_t axis = op.getAxis(), rank = typeOf(op.getInput()).getRank();
  for (int64_t i = 0; i < rank; ++i) {
    SbpSignature sig = uniform(op, i < axis ? B : S(i - axis));
    sig.operands[0] = S(i);
    sig.results[0] = S(i);
    if (i >= axis) {
      if (!isReducible(op.getInput().getType()))
        continue;
      reducesStatistics(sig, op.getInput(), axis, rank, stats);
    }
    rules.push_back(sig);
  }
  return rules;
}
Rules sbpRules(LayerNormOp op) { return normRules(op, 2); }
Rules sbpRules(RmsNormOp op) { return normRules(op, 1); }
Rules sbpRules(BatchNormOp op) {
  Rules rules = start(op);
  for (int64_t i : {0, 2, 3})
    rules.push_back({{S(i), B, B, B, B}, {S(i)}});
  rules.push_back({{S(1), S(0), S(0), S(0), S(0)}, {S(1)}});
  return rules;
}
Rules sbpRules(MaxPool2dOp op) {
  Rules rules = start(op);
  rules.push_back({{S(0)}, {S(0)}});
  rules.push_back({{S(1)}, {S(1)}});
  rules.push_back({{PMax}, {PMax}});
  return rules;
}
Rules sbpRules(AvgPool2dOp op) {
  Rules rules = start(op);
  rules.push_back({{S(0)}, {S(0)}});
  rules.push_back({{S(1)}, {S(1)}});
  rules.push_back({{P}, {P}});
  return rules;
}

// Data movement.
Rules sbpRules(ReshapeOp op) {
  Rules rules = start(op);
  rules.push_back({{P}, {P}});
  // Groups of dimensions with equal products, matched from the left; the
  // major dimension of a group keeps its split when its length is
  // unchanged, and when it is not (a merge, [8, 128] -> [1024], or the
  // reverse) where both are cut into equal pieces (the finer divisibility
  // checks are the partitioner's).
  ArrayRef<int64_t> in = typeOf(op.getInput()).getShape();
  ArrayRef<int64_t> out = typeOf(op.getResult()).getShape();
  size_t i = 0, j = 0;
  while (i < in.size() && j < out.size()) {
    size_t gi = i, gj = j;
    int64_t pi = in[i++], pj = out[j++];
    while (pi != pj) {
      if (pi < pj && i < in.size())
        pi *= in[i++];
      else if (pj < pi && j < out.size())
        pj *= out[j++];
      else
        break;
    }
    if (pi != pj)
      break;
    if (in[gi] == out[gj] && in[gi] > 1) {
      rules.push_back({{S(gi)}, {S(gj)}});
    } else if (in[gi] > 1 && out[gj] > 1) {
      SbpSignature merged{{S(gi)}, {S(gj)}};
      merged.evenSplits = true;
      rules.push_back(merged);
    }
  }
  return rules;
}
Rules sbpRules(TransposeOp op) {
  Rules rules = start(op);
  for (auto [i, p] : llvm::enumerate(op.getPermutation()))
    rules.push_back({{S(p)}, {S(i)}});
  rules.push_back({{P}, {P}});
  return rules;
}
Rules sbpRules(BroadcastToOp op) {
  Rules rules = start(op);
  RankedTensorType in = typeOf(op.getInput()), out = typeOf(op.getResult());
  int64_t rank = out.getRank();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t j = i - (rank - in.getRank());
    bool real = j >= 0 && !(in.getDimSize(j) == 1 && out.getDimSize(i) != 1);
    // A broadcast dimension is made locally at any split.
    rules.push_back({{real ? S(j) : B}, {S(i)}});
  }
  return rules;
}
Rules sbpRules(ConcatOp op) {
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op.getResult()).getRank(); i < e; ++i)
    if (i != op.getAxis())
      rules.push_back(uniform(op, S(i)));
  rules.push_back(uniform(op, P));
  return rules;
}
Rules sbpRules(SliceOp op) {
  Rules rules = start(op);
  RankedTensorType in = typeOf(op.getInput());
  for (int64_t i = 0, e = in.getRank(); i < e; ++i)
    if (op.getStarts()[i] == 0 && op.getLimits()[i] == in.getDimSize(i) &&
        op.getStrides()[i] == 1)
      rules.push_back({{S(i)}, {S(i)}});
  rules.push_back({{P}, {P}});
  return rules;
}
Rules sbpRules(ReverseOp op) {
  // A split of a reversed axis would hold its pieces in reverse device
  // order: only the other axes keep their splits. Reversal is linear.
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i)
    if (!llvm::is_contained(op.getAxes(), i))
      rules.push_back({{S(i)}, {S(i)}});
  rules.push_back({{P}, {P}});
  return rules;
}
Rules sbpRules(GatherElementsOp op) {
  // Indices split along the axis read anywhere in a whole input. In another
  // dimension, an index's position there is also the input coordinate it
  // reads, so input and indices split together (when of one size).
  Rules rules = start(op);
  int64_t axis = op.getAxis();
  RankedTensorType input = typeOf(op.getInput()),
                   indices = typeOf(op.getIndices());
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (d == axis)
      rules.push_back({{B, S(d)}, {S(d)}});
    else if (input.getDimSize(d) == indices.getDimSize(d))
      rules.push_back({{S(d), S(d)}, {S(d)}});
  }
  // The input split along the axis (vocabulary-parallel logits): each
  // device takes the elements it holds and zeros elsewhere, a partial sum.
  rules.push_back({{S(axis), B}, {P}});
  return rules;
}
Rules sbpRules(ScatterNdOp op) {
  // The dimensions after the indexed ones are copied slice by slice: input,
  // updates (and the result) split there together, the indices whole.
  Rules rules = start(op);
  RankedTensorType input = typeOf(op.getInput()),
                   indices = typeOf(op.getIndices());
  int64_t q = indices.getShape().back(), lead = indices.getRank() - 1;
  for (int64_t d = q; d < input.getRank(); ++d)
    rules.push_back({{S(d), B, S(lead + d - q)}, {S(d)}});
  return rules;
}
Rules sbpRules(GatherOp op) {
  Rules rules = start(op);
  int64_t axis = op.getAxis();
  int64_t indexRank = typeOf(op.getIndices()).getRank();
  // Indices split: the result splits along the matching gathered dim.
  for (int64_t i = 0; i < indexRank; ++i)
    rules.push_back({{B, S(i)}, {S(axis + i)}});
  // The table split along a dimension it keeps.
  for (int64_t j = 0, e = typeOf(op.getInput()).getRank(); j < e; ++j)
    if (j != axis)
      rules.push_back({{S(j), B}, {S(j < axis ? j : j - 1 + indexRank)}});
  // The table split along the gathered axis (a vocabulary-parallel
  // embedding): each device gathers the rows it holds and zeros elsewhere,
  // a partial sum.
  rules.push_back({{S(axis), B}, {P}});
  return rules;
}
Rules sbpRules(PadOp op) {
  Rules rules = start(op);
  for (int64_t i = 0, e = typeOf(op.getInput()).getRank(); i < e; ++i)
    if (op.getLow()[i] == 0 && op.getHigh()[i] == 0)
      rules.push_back({{S(i)}, {S(i)}});
  if (op.getValue().convertToDouble() == 0.0)
    rules.push_back({{P}, {P}});
  return rules;
}

// Collectives only appear in partitioned programs.
Rules sbpRules(AllReduceOp) { return {}; }
Rules sbpRules(AllGatherOp) { return {}; }
Rules sbpRules(ReduceScatterOp) { return {}; }
Rules sbpRules(AllToAllOp) { return {}; }
// A device's place enters only partitioned programs: their offsets differ
// between devices, so no SBP describes them.
Rules sbpRules(PieceOffsetsOp) { return {}; }
Rules sbpRules(DynamicSliceOp) { return {}; }
Rules sbpRules(BroadcastOp) { return {}; }

//===----------------------------------------------------------------------===//
// Compute cost
//===----------------------------------------------------------------------===//

double elements(Value v) {
  return static_cast<double>(typeOf(v).getNumElements());
}

double computeCost(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    RankedTensorType lhs = typeOf(matmul.getLhs());
    int64_t k = matmul.getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                         : lhs.getDimSize(lhs.getRank() - 1);
    return 2.0 * elements(matmul.getResult()) * static_cast<double>(k);
  }
  if (auto conv = dyn_cast<Conv2dOp>(op)) {
    RankedTensorType w = typeOf(conv.getWeight());
    return 2.0 * elements(conv.getResult()) *
           static_cast<double>(w.getDimSize(1) * w.getDimSize(2) *
                               w.getDimSize(3));
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    RankedTensorType q = typeOf(attention.getQuery());
    RankedTensorType v = typeOf(attention.getValue());
    return 2.0 *
           static_cast<double>(attention.getScoresType().getNumElements()) *
           static_cast<double>(q.getShape().back() + v.getShape().back());
  }
  if (op->getNumResults() == 0)
    return 0.0;
  return elements(op->getResult(0));
}

/// \p rules without those that make or take a partial value of a type that
/// cannot be reduced (i1).
Rules reducibleOnly(Operation *op, Rules rules) {
  auto partialOk = [](ArrayRef<SbpDim> dims, TypeRange types) {
    for (auto [d, t] : llvm::zip(dims, types))
      if (d.isPartial() && !isReducible(t))
        return false;
    return true;
  };
  llvm::erase_if(rules, [&](const SbpSignature &r) {
    return !partialOk(r.operands, op->getOperandTypes()) ||
           !partialOk(r.results, op->getResultTypes());
  });
  return rules;
}

template <typename Op>
struct SbpModel : SbpOpInterface::ExternalModel<SbpModel<Op>, Op> {
  SmallVector<SbpSignature> getSbpRules(Operation *op) const {
    return reducibleOnly(op, sbpRules(cast<Op>(op)));
  }
  double getComputeCost(Operation *op) const { return computeCost(op); }
  FailureOr<SmallVector<Value>> partition(Operation *op, OpBuilder &b,
                                          ValueRange operands,
                                          TypeRange resultTypes,
                                          const DevicePlace &place) const {
    return partitionOnDevice(op, b, operands, resultTypes, place);
  }
};

template <typename... Ops> void attach(MLIRContext *context) {
  (Ops::template attachInterface<SbpModel<Ops>>(*context), ...);
}

} // namespace

void registerSbpInterfaceModels(MLIRContext *context) {
  attach<
#define GET_OP_LIST
#include "flow/Dialect/Flow/IR/FlowOps.cpp.inc"
      >(context);
}

} // namespace flow
} // namespace mlir

//===----------------------------------------------------------------------===//
// Signatures on a mesh, validity, boxing
//===----------------------------------------------------------------------===//

NdSbp mlir::flow::broadcastSbp(unsigned rank) {
  return NdSbp(rank, SbpDim::broadcast());
}

bool mlir::flow::isValidSbp(ArrayRef<SbpDim> sbp, RankedTensorType type,
                            ArrayRef<int64_t> meshShape) {
  SmallVector<int64_t> pieces(type.getRank(), 1);
  for (auto [axis, d] : llvm::enumerate(sbp)) {
    if (!d.isSplit())
      continue;
    if (d.dim < 0 || d.dim >= type.getRank())
      return false;
    pieces[d.dim] *= meshShape[axis];
    if (type.getDimSize(d.dim) < pieces[d.dim])
      return false;
  }
  return true;
}

/// True if every split of `sbp` cuts its dimension of `type` into equal
/// pieces on `meshShape`.
static bool isEvenSbp(ArrayRef<SbpDim> sbp, RankedTensorType type,
                      ArrayRef<int64_t> meshShape) {
  SmallVector<int64_t> pieces(type.getRank(), 1);
  for (auto [axis, d] : llvm::enumerate(sbp))
    if (d.isSplit())
      pieces[d.dim] *= meshShape[axis];
  for (auto [size, n] : llvm::zip(type.getShape(), pieces))
    if (size % n != 0)
      return false;
  return true;
}

static double collectiveCost(SbpDim from, SbpDim to, double bytes,
                             int64_t p, const MeshSpec::Axis &axis);

SmallVector<NdSbpSignature>
mlir::flow::getNdSbpSignatures(Operation *op, ArrayRef<int64_t> meshShape,
                               const MeshSpec &spec) {
  auto iface = dyn_cast<SbpOpInterface>(op);
  if (!iface)
    return {};
  SmallVector<SbpSignature> rules = iface.getSbpRules();
  if (rules.empty())
    return {};
  unsigned rank = meshShape.size();
  SmallVector<NdSbpSignature> out;
  // Odometer over one rule per mesh axis; rule 0 (all B) first.
  SmallVector<size_t> choice(rank, 0);
  while (true) {
    NdSbpSignature sig;
    sig.operands.assign(op->getNumOperands(), NdSbp());
    sig.results.assign(op->getNumResults(), NdSbp());
    for (unsigned axis = 0; axis < rank; ++axis) {
      const SbpSignature &r = rules[choice[axis]];
      for (unsigned i = 0; i < sig.operands.size(); ++i)
        sig.operands[i].push_back(r.operands[i]);
      for (unsigned i = 0; i < sig.results.size(); ++i)
        sig.results[i].push_back(r.results[i]);
    }
    bool even = llvm::any_of(choice, [&](size_t c) {
      return rules[c].evenSplits;
    });
    // Rules that split whole blocks: the pieces must divide the blocks.
    int64_t blockPieces = 1, blocks = 0;
    for (unsigned axis = 0; axis < rank; ++axis)
      if (int64_t b = rules[choice[axis]].blocks; b > 0) {
        blockPieces *= meshShape[axis];
        blocks = b;
      }
    // The op's own all-reduces of statistics, along each axis whose rule
    // has them: every group along the axis reduces its share at once.
    for (unsigned axis = 0; axis < rank; ++axis) {
      const SbpSignature &rule = rules[choice[axis]];
      double bytes = rule.statisticsBytes;
      if (rule.statisticsCount == 0)
        continue;
      for (unsigned other = 0; other < rank; ++other)
        if (other != axis && sig.operands[0][other].isSplit())
          bytes /= static_cast<double>(meshShape[other]);
      sig.collectiveCost +=
          rule.statisticsCount *
          collectiveCost(SbpDim::partialSum(), SbpDim::broadcast(), bytes,
                         meshShape[axis], spec.axis(axis));
    }
    bool valid = blocks == 0 || blocks % blockPieces == 0;
    for (auto [v, sbp] : llvm::zip(op->getOperands(), sig.operands))
      valid &= isValidSbp(sbp, typeOf(v), meshShape) &&
               (!even || isEvenSbp(sbp, typeOf(v), meshShape));
    for (auto [v, sbp] : llvm::zip(op->getResults(), sig.results))
      valid &= isValidSbp(sbp, typeOf(v), meshShape) &&
               (!even || isEvenSbp(sbp, typeOf(v), meshShape));
    if (valid)
      out.push_back(std::move(sig));
    unsigned axis = 0;
    while (axis < rank && ++choice[axis] == rules.size())
      choice[axis++] = 0;
    if (axis == rank)
      break;
  }
  return out;
}

namespace {
/// 1-D boxing traffic for T bytes on p devices, summed over the devices
/// (SBP.md's table).
double directCost(SbpDim from, SbpDim to, double bytes, int64_t p) {
  double inf = std::numeric_limits<double>::infinity();
  if (from == to)
    return 0;
  double pm1 = static_cast<double>(p - 1);
  // B -> S is a local slice and B -> P keeps the value on one device:
  // no traffic, but not free either (as in OneFlow), so that a whole value
  // is not split for nothing and gathered again later.
  if (from.isBroadcast())
    return to.isSplit() || to.isPartial() ? 1 : inf;
  if (from.isSplit()) {
    if (to.isBroadcast())
      return bytes * pm1; // all-gather
    if (to.isSplit())
      return bytes * pm1 / static_cast<double>(p); // all-to-all
    return inf;
  }
  // Partial.
  if (to.isBroadcast())
    return 2 * bytes * pm1; // all-reduce
  if (to.isSplit())
    return bytes * pm1; // reduce-scatter
  return inf; // P(sum) <-> P(max): through B
}
} // namespace

/// The time of one boxing step on a mesh axis of p devices: each device's
/// share of directCost's traffic over the axis' bandwidth, plus the
/// axis' per-call latency for a collective (none for the local steps out
/// of B). The latency makes one all-reduce cheaper than a reduce-scatter
/// and an all-gather of the same bytes, and keeps tiny values from being
/// cut up and gathered again.
static double collectiveCost(SbpDim from, SbpDim to, double bytes,
                             int64_t p, const MeshSpec::Axis &axis) {
  double traffic = directCost(from, to, bytes, p) /
                   (static_cast<double>(p) * axis.bandwidth);
  if (from == to || from.isBroadcast())
    return traffic;
  return traffic + axis.latency;
}

std::optional<SmallVector<SbpDim>>
mlir::flow::boxingRoute1D(SbpDim from, SbpDim to, int64_t rank) {
  if (from == to)
    return SmallVector<SbpDim>();
  if (std::isfinite(directCost(from, to, 1.0, 2)))
    return SmallVector<SbpDim>{to};
  // Every SBP reaches B, and B reaches every SBP.
  if (std::isfinite(directCost(from, SbpDim::broadcast(), 1.0, 2)))
    return SmallVector<SbpDim>{SbpDim::broadcast(), to};
  return std::nullopt;
}

double mlir::flow::boxingCost(ArrayRef<SbpDim> from, ArrayRef<SbpDim> to,
                              RankedTensorType type,
                              ArrayRef<int64_t> meshShape,
                              const MeshSpec &spec) {
  return forEachBoxingStep(from, to, type, meshShape, spec,
                           [](unsigned, SbpDim, SbpDim, double) {});
}

StringRef mlir::flow::boxingStepKind(SbpDim from, SbpDim to) {
  if (from.isBroadcast())
    return "local";
  if (from.isSplit())
    return to.isSplit() ? "all_to_all" : "all_gather";
  return to.isSplit() ? "reduce_scatter" : "all_reduce";
}

double mlir::flow::forEachBoxingStep(
    ArrayRef<SbpDim> from, ArrayRef<SbpDim> to, RankedTensorType type,
    ArrayRef<int64_t> meshShape, const MeshSpec &spec,
    function_ref<void(unsigned, SbpDim, SbpDim, double)> visit) {
  double bytes =
      static_cast<double>(type.getNumElements()) *
      static_cast<double>(elementStorageBytes(type.getElementType()));
  NdSbp current(from.begin(), from.end());
  double total = 0;
  for (unsigned axis = 0; axis < meshShape.size(); ++axis) {
    if (current[axis] == to[axis])
      continue;
    std::optional<SmallVector<SbpDim>> route =
        boxingRoute1D(current[axis], to[axis], type.getRank());
    if (!route)
      return std::numeric_limits<double>::infinity();
    for (SbpDim step : *route) {
      // The groups along this axis each move their share, at once: a split
      // on another axis divides what a group holds.
      double share = bytes;
      for (unsigned other = 0; other < meshShape.size(); ++other)
        if (other != axis && current[other].isSplit())
          share /= static_cast<double>(meshShape[other]);
      double seconds = collectiveCost(current[axis], step, share,
                                      meshShape[axis], spec.axis(axis));
      visit(axis, current[axis], step, seconds);
      total += seconds;
      current[axis] = step;
    }
  }
  return total;
}

void mlir::flow::localPiece(ArrayRef<int64_t> globalShape, ArrayRef<SbpDim> sbp,
                            ArrayRef<int64_t> meshShape,
                            ArrayRef<int64_t> coords,
                            SmallVectorImpl<int64_t> &shape,
                            SmallVectorImpl<int64_t> &offset) {
  shape.assign(globalShape.begin(), globalShape.end());
  offset.assign(globalShape.size(), 0);
  for (auto [axis, d] : llvm::enumerate(sbp)) {
    if (!d.isSplit())
      continue;
    int64_t n = shape[d.dim], p = meshShape[axis], r = coords[axis];
    offset[d.dim] += ::flow::rules::pieceOffset(n, p, r);
    shape[d.dim] = ::flow::rules::pieceSize(n, p, r);
  }
}
