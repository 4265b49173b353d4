//===- FormDispatchRegions.cpp - Group compute ops into kernels -----------===//
//
// Part of the Flow project.
//
// Forms `flow.dispatch_region`s: each compute op starts a group or joins the
// group of a producer it reads, by the rules in the pass description
// (Passes.td). Every decision not to fuse is recorded on the consumer as
// `flow.fusion_refused`, so the compile report and lit tests can show it.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Fusion/Passes.h"
#include "flow/Support/Location.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_FORMDISPATCHREGIONSPASS
#include "flow/Fusion/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {
/// What an op is to fusion.
enum class Kind {
  Elementwise, // one result element from the same-position operand elements
  Reshape,     // a view of its operand
  Transpose,   // a permutation of its operand's dimensions
  Reduction,   // combines elements along axes (reductions, softmax, norms)
  Contraction, // matmul, convolution
  Other,       // gather, concat, slice, reverse, pad, pooling, im2col
};
} // namespace

static Kind kindOf(Operation *op) {
  if (isElementwise(op))
    return Kind::Elementwise;
  if (isa<ReshapeOp>(op))
    return Kind::Reshape;
  if (isa<TransposeOp>(op))
    return Kind::Transpose;
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp, LogSoftmaxOp,
          LayerNormOp, RmsNormOp>(op))
    return Kind::Reduction;
  if (isa<MatmulOp, Conv2dOp>(op))
    return Kind::Contraction;
  return Kind::Other;
}

/// `v`'s tensor type, symbolic dimensions at their upper bounds: rows and
/// sizes are judged on the largest shape a call may have (null when a
/// symbol has no bounds).
static RankedTensorType tensorOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !isSymbolic(type))
    return type;
  Operation *at =
      v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp();
  FailureOr<RankedTensorType> bounded =
      upperBoundType(type, getSizeSymbols(at));
  return succeeded(bounded) ? *bounded : RankedTensorType();
}

/// The row dimension of a value: its first dimension longer than 1 (the
/// dimensions of 1 before it, as in a batch of one, carry no work); nullopt
/// when it has none.
static std::optional<int64_t> rowDim(Value v) {
  RankedTensorType type = tensorOf(v);
  if (!type)
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) > 1)
      return d;
  return std::nullopt;
}

/// How many rows of `op`'s result can be computed independently of each
/// other; 1 when they cannot (the op combines elements across its rows).
static int64_t opRows(Operation *op) {
  std::optional<int64_t> dim = rowDim(op->getResult(0));
  // A scatter writes the rows its indices name, in their order: its kernel
  // runs as one, and element-wise consumers of its rows (an optimizer's
  // update of an embedding's gradient) run in a kernel of their own that
  // splits over the workgroups.
  if (!dim || isa<ScatterNdOp>(op))
    return 1;
  int64_t d = *dim;
  bool separable =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto r) {
            // The input dimension the rows come from: reduced axes before
            // it would be combined across rows.
            SmallVector<int64_t> axes = llvm::to_vector(r.getAxes());
            llvm::sort(axes);
            int64_t inputDim = d;
            if (!r.getKeepdims())
              for (int64_t axis : axes)
                if (axis <= inputDim)
                  ++inputDim;
            return llvm::all_of(axes, [&](int64_t a) { return a > inputDim; });
          })
          .Case<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(
              [&](auto r) { return r.getAxis() > d; })
          .Default(true);
  return separable ? tensorOf(op->getResult(0)).getDimSize(d) : 1;
}

/// True if row r of `op`'s result reads only row r of its operand `v`, for
/// a region split into `rows` rows (both have them). `why` says otherwise.
static bool readsOwnRow(Operation *op, Value v, int64_t rows,
                        std::string &why) {
  Value result = op->getResult(0);
  std::optional<int64_t> vd = rowDim(v), rd = rowDim(result);
  RankedTensorType vt = tensorOf(v), rt = tensorOf(result);
  if (!vd || !rd || vt.getDimSize(*vd) != rows || rt.getDimSize(*rd) != rows) {
    why = "it splits into different rows than the kernel (" +
          std::to_string(rows) + " rows)";
    return false;
  }
  bool ok = llvm::TypeSwitch<Operation *, bool>(op)
                .Case<ReshapeOp>([&](auto) {
                  // Leading dimensions are 1 up to the rows of both, and the
                  // sizes match: row r is the same run of elements.
                  return true;
                })
                .Case<TransposeOp>([&](TransposeOp t) {
                  return t.getPermutation()[*rd] == *vd;
                })
                .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp,
                      LogSoftmaxOp, LayerNormOp, RmsNormOp>([&](Operation *) {
                  // opRows already refused reductions across the rows; the
                  // reduced input is operand 0, the rest are per-feature.
                  return v == op->getOperand(0);
                })
                .Case<BatchNormOp>([&](BatchNormOp b) {
                  return v == b.getInput() && *vd == *rd;
                })
                .Default([&](Operation *) {
                  // Element-wise with numpy broadcasting, aligned from the
                  // right: the operand's row dimension must land on the
                  // result's.
                  return *vd + (rt.getRank() - vt.getRank()) == *rd;
                });
  if (!ok)
    why = "it reads other rows of a value computed in the kernel (the "
          "kernel's work splits into " +
          std::to_string(rows) + " independent rows)";
  return ok;
}

/// Static shape of `v`'s tensor type, empty (and false) when not static.
static bool staticShape(Value v, SmallVector<int64_t> &shape) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return false;
  shape.assign(type.getShape().begin(), type.getShape().end());
  return true;
}

/// Size of `shape`'s row dimension (its first dimension longer than 1);
/// 1 when it has none.
static int64_t rowSize(ArrayRef<int64_t> shape) {
  for (int64_t d : shape)
    if (d > 1)
      return d;
  return 1;
}

/// For `reshape(e)` that splits `e`'s leading dimensions into others (as
/// [B*S, F] -> [B, S, F] or [B, S, H, D]), the shape that splits them the
/// same way and keeps `e`'s trailing dimensions: `y`'s first `j` dimensions
/// then `e`'s from `i` on. Empty when no leading dimensions of `e` multiply
/// to leading dimensions of `y` (then `i` is 0).
static SmallVector<int64_t> leadingSplit(ArrayRef<int64_t> e,
                                         ArrayRef<int64_t> y, size_t &i) {
  int64_t pe = 1;
  for (i = 1; i < e.size(); ++i) {
    pe *= e[i - 1];
    int64_t py = 1;
    size_t j = 0;
    while (j < y.size() && py < pe)
      py *= y[j++];
    if (py == pe && j < y.size()) {
      SmallVector<int64_t> mid(y.begin(), y.begin() + j);
      mid.append(e.begin() + i, e.end());
      return mid;
    }
  }
  i = 0;
  return {};
}

/// Moves the row split of a reshape above the element-wise op it reads:
/// `reshape(e(x, bias))`, where `x` comes from the host (a library GEMM's
/// [B*S, F] result) and the reshape splits its rows ([B, S, ...]), becomes
/// `e(reshape(x), bias)` (then a reshape of the trailing dimensions, if
/// the original split them too). The reshape of `x` is a host view; `e`
/// then has the rows of its consumers and fuses with them (a bias add with
/// the activation after it, or with the split into attention heads),
/// instead of ending a kernel of its own before a view. Operands that
/// broadcast (a bias over the trailing dimensions, a scalar) stay as they
/// are. Returns how many reshapes moved.
static unsigned hoistRowSplits(Block &block,
                               function_ref<bool(Operation *)> onHost) {
  SmallVector<ReshapeOp> reshapes;
  for (Operation &op : block)
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      reshapes.push_back(reshape);
  unsigned moved = 0;
  for (ReshapeOp reshape : reshapes) {
    Operation *e = reshape.getInput().getDefiningOp();
    if (!e || !isElementwise(e) || isa<BatchNormOp, BroadcastToOp, RandomUniformOp>(e) ||
        e->getNumResults() != 1 || !e->hasOneUse() ||
        e->getBlock() != &block)
      continue;
    SmallVector<int64_t> eShape, yShape;
    if (!staticShape(e->getResult(0), eShape) ||
        !staticShape(reshape.getResult(), yShape) ||
        rowSize(eShape) == rowSize(yShape))
      continue;
    size_t i = 0;
    SmallVector<int64_t> mid = leadingSplit(eShape, yShape, i);
    if (mid.empty() || rowSize(mid) != rowSize(yShape))
      continue;
    bool ok = true;
    for (Value operand : e->getOperands()) {
      SmallVector<int64_t> shape;
      if (!staticShape(operand, shape)) {
        ok = false;
        break;
      }
      if (ArrayRef<int64_t>(shape) == ArrayRef<int64_t>(eShape)) {
        // Reshaped: only views of what the host computed.
        Operation *def = operand.getDefiningOp();
        ok = !def || onHost(def) || isa<ReshapeOp>(def);
      } else {
        // Broadcast from the right over e's trailing dimensions only.
        size_t leadingOnes = 0;
        while (leadingOnes < shape.size() && shape[leadingOnes] == 1)
          ++leadingOnes;
        ok = shape.size() - leadingOnes <= eShape.size() - i &&
             shape.size() <= mid.size();
      }
      if (!ok)
        break;
    }
    if (!ok)
      continue;
    OpBuilder b(e);
    IRMapping mapping;
    for (Value operand : e->getOperands()) {
      RankedTensorType type = tensorOf(operand);
      if (type.getShape() == ArrayRef<int64_t>(eShape))
        mapping.map(operand,
                    ReshapeOp::create(
                        b, reshape.getLoc(),
                        RankedTensorType::get(mid, type.getElementType()),
                        operand));
    }
    Operation *hoisted = b.clone(*e, mapping);
    hoisted->getResult(0).setType(RankedTensorType::get(
        mid, tensorOf(e->getResult(0)).getElementType()));
    if (ArrayRef<int64_t>(mid) == ArrayRef<int64_t>(yShape)) {
      reshape.getResult().replaceAllUsesWith(hoisted->getResult(0));
      reshape.erase();
    } else {
      reshape.getInputMutable().assign(hoisted->getResult(0));
    }
    e->erase();
    ++moved;
  }
  return moved;
}

namespace {
struct Group {
  SmallVector<Operation *> ops; // program order
  int64_t rows = 1;
  bool hasReduction = false;
  bool hasContraction = false;
};

struct FormDispatchRegionsPass
    : mlir::flow::impl::FormDispatchRegionsPassBase<FormDispatchRegionsPass> {
  using FormDispatchRegionsPassBase::FormDispatchRegionsPassBase;

  /// The host runs these itself; everything else of the flow dialect is a
  /// kernel's work.
  bool staysOnHost(Operation *op) const {
    if (isa<ConstantOp, ParameterOp, PieceOffsetsOp, AnnotateOp, MeshOp,
            AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp,
            DispatchRegionOp, ReturnOp>(op) ||
        isParameterConcat(op))
      return true;
    // A target without an attention library expanded it before
    // (flow-decompose-attention).
    if (isa<AttentionOp>(op))
      return true;
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      // Every library runs f32 GEMMs and bf16 ones into f32, summed in f32;
      // a narrow one f16 and bf16 ones into their own type (or f32) too.
      Type in = cast<RankedTensorType>(matmul.getLhs().getType())
                    .getElementType();
      Type rhs = cast<RankedTensorType>(matmul.getRhs().getType())
                     .getElementType();
      Type out = cast<RankedTensorType>(matmul.getType()).getElementType();
      if (!libraryMatmul || rhs != in)
        return false;
      if (out.isF32() && (in.isF32() || in.isBF16()))
        return true;
      return narrowLibraryMatmul && (in.isF16() || in.isBF16()) &&
             (out.isF32() || out == in);
    }
    if (auto conv = dyn_cast<Conv2dOp>(op)) {
      Type elt = cast<RankedTensorType>(conv.getType()).getElementType();
      return libraryConv && (elt.isF32() || (narrowLibraryConv &&
                                             (elt.isF16() || elt.isBF16())));
    }
    return false;
  }

  /// Why a host op's consumers start a kernel of their own.
  static std::string hostReason(Operation *producer) {
    if (isa<MatmulOp>(producer))
      return "its producer flow.matmul runs on the host as a library GEMM";
    if (isa<Conv2dOp>(producer))
      return "its producer flow.conv2d runs on the host as a library "
             "convolution";
    if (isa<AttentionOp>(producer))
      return "its producer flow.attention runs on the host as one attention "
             "command";
    return ("its producer " + producer->getName().getStringRef() +
            " runs on the host (a kernel never spans a host op)")
        .str();
  }

  /// Why `op` may not join `group`; empty if it may. `groupOf` maps every
  /// grouped op to its group.
  std::string refusal(Operation *op, Group &group,
                      const DenseMap<Operation *, Group *> &groupOf) const {
    Kind kind = kindOf(op);
    if (kind == Kind::Contraction || kind == Kind::Other)
      return (op->getName().getStringRef() +
              " starts a kernel: only element-wise ops, views and reductions "
              "join a producer's")
          .str();
    if (kind == Kind::Reduction && group.hasContraction)
      return "a reduction does not join a matmul or convolution kernel";
    int64_t rows = opRows(op);
    if (rows != group.rows)
      return rows == 1 || group.rows == 1
                 ? "it would make a kernel of " +
                       std::to_string(std::max(rows, group.rows)) +
                       " independent rows run as one"
                 : "its rows (" + std::to_string(rows) +
                       ") differ from the kernel's (" +
                       std::to_string(group.rows) + ")";
    if (rows > 1) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || groupOf.lookup(def) != &group)
          continue;
        std::string why;
        if (!readsOwnRow(op, operand, rows, why))
          return why;
      }
    }
    // The region goes where `op` is: no op outside it may use one of its
    // values before that.
    for (Operation *member : group.ops)
      for (Operation *user : member->getUsers()) {
        if (user == op || groupOf.lookup(user) == &group)
          continue;
        if (user->getBlock() != op->getBlock() || user->isBeforeInBlock(op))
          return (user->getName().getStringRef() + " at " +
                  locationText(user->getLoc()) + ", between them, uses " +
                  member->getName().getStringRef() + "'s result")
              .str();
      }
    return "";
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func.isPrivate() || func->hasAttr("flow.kernel"))
      return;
    Block &block = func.getBody().front();
    MLIRContext *ctx = &getContext();

    // A result with no elements needs no computation.
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (!isa<FlowDialect>(op.getDialect()) || staysOnHost(&op) ||
          op.getNumResults() == 0)
        continue;
      // (Of a static type: a symbolic one varies from call to call.)
      if (!llvm::all_of(op.getResults(), [](Value v) {
            auto t = dyn_cast<RankedTensorType>(v.getType());
            return t && t.hasStaticShape() && t.getNumElements() == 0;
          }))
        continue;
      OpBuilder b(&op);
      for (Value result : op.getResults())
        result.replaceAllUsesWith(ConstantOp::create(
            b, op.getLoc(),
            DenseElementsAttr::get(cast<RankedTensorType>(result.getType()),
                                   ArrayRef<Attribute>{})));
      op.erase();
    }

    if (fusion)
      numRowSplitsMoved +=
          hoistRowSplits(block, [&](Operation *op) { return staysOnHost(op); });

    std::vector<std::unique_ptr<Group>> groups;
    DenseMap<Operation *, Group *> groupOf;
    auto refuse = [&](Operation *op, StringRef why) {
      op->setAttr(FlowDialect::getFusionRefusedAttrName(),
                  StringAttr::get(ctx, why));
      ++numRefused;
    };
    for (Operation &opRef : block) {
      Operation *op = &opRef;
      if (!isa<FlowDialect>(op->getDialect()) || staysOnHost(op))
        continue;
      Kind kind = kindOf(op);
      // Candidate groups: those of the producers, latest first.
      SmallVector<Group *> candidates;
      Operation *hostProducer = nullptr;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def)
          continue;
        if (Group *g = groupOf.lookup(def)) {
          if (!llvm::is_contained(candidates, g))
            candidates.push_back(g);
        } else if (!isa<ConstantOp, ParameterOp, PieceOffsetsOp>(def) &&
                   !isParameterConcat(def) && !hostProducer &&
                   (kind != Kind::Reshape || !isa<ReshapeOp>(def))) {
          // Through host views to the op that computed the value.
          while (auto view = dyn_cast<ReshapeOp>(def)) {
            Operation *in = view.getInput().getDefiningOp();
            if (!in || !staysOnHost(in))
              break;
            def = in;
          }
          hostProducer = def;
        }
      }
      llvm::sort(candidates, [](Group *a, Group *b) {
        return b->ops.back()->isBeforeInBlock(a->ops.back());
      });
      Group *joined = nullptr;
      std::string firstWhy;
      if (fusion) {
        for (Group *g : candidates) {
          std::string why = refusal(op, *g, groupOf);
          if (why.empty()) {
            joined = g;
            break;
          }
          if (firstWhy.empty())
            firstWhy = why;
        }
      }
      if (!joined) {
        // A reshape of a value not computed in a kernel is a host view.
        if (kind == Kind::Reshape)
          continue;
        if (fusion && !firstWhy.empty())
          refuse(op, firstWhy);
        else if (fusion && hostProducer && kind != Kind::Contraction &&
                 kind != Kind::Other)
          refuse(op, hostReason(hostProducer));
        groups.push_back(std::make_unique<Group>());
        joined = groups.back().get();
        joined->rows = opRows(op);
      } else {
        ++numFused;
      }
      joined->ops.push_back(op);
      joined->hasReduction |= kind == Kind::Reduction;
      joined->hasContraction |= kind == Kind::Contraction;
      groupOf[op] = joined;
    }

    // A reshape is worth a kernel's work only when the kernel reads its
    // result; others go back to the host as views.
    SmallVector<Operation *> ejected;
    for (auto &group : groups) {
      bool changed = true;
      while (changed) {
        changed = false;
        for (Operation *op : llvm::reverse(group->ops)) {
          if (!isa<ReshapeOp>(op))
            continue;
          if (llvm::any_of(op->getUsers(), [&](Operation *u) {
                return groupOf.lookup(u) == group.get();
              }))
            continue;
          llvm::erase(group->ops, op);
          groupOf.erase(op);
          ejected.push_back(op);
          --numFused;
          changed = true;
          break;
        }
      }
    }

    for (auto &group : groups)
      materialize(*group, groupOf);
    // An ejected reshape reads a region's result: the region now sits where
    // its last op was, so the view follows it.
    for (Operation *op : ejected)
      if (Operation *def = op->getOperand(0).getDefiningOp())
        if (def->getBlock() == op->getBlock() && op->isBeforeInBlock(def))
          op->moveAfter(def);
  }

  /// Replaces the group's ops with one dispatch region where its last op is.
  void materialize(Group &group,
                   const DenseMap<Operation *, Group *> &groupOf) {
    Operation *last = group.ops.back();
    SmallVector<Value> results;
    for (Operation *op : group.ops)
      for (Value v : op->getResults())
        if (llvm::any_of(v.getUsers(), [&](Operation *u) {
              return groupOf.lookup(u) != &group;
            }))
          results.push_back(v);
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    auto region = DispatchRegionOp::create(b, last->getLoc(),
                                           ValueRange(results).getTypes(),
                                           b.getI64IntegerAttr(group.rows));
    Block *body = b.createBlock(&region.getBody());
    for (Operation *op : group.ops)
      op->moveBefore(body, body->end());
    b.setInsertionPointToEnd(body);
    ReturnOp::create(b, last->getLoc(), results);
    for (auto [v, r] : llvm::zip(results, region.getResults()))
      v.replaceUsesWithIf(r, [&](OpOperand &use) {
        return !region->isProperAncestor(use.getOwner());
      });
    ++numRegions;
  }
};
} // namespace
