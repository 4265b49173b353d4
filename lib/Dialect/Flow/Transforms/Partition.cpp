//===- Partition.cpp - Global program to per-device SPMD programs ---------===//
//
// Part of the Flow project.
//
// After flow-propagate-sbp, every op of a mesh function knows the SBP of
// its results and the SBP each operand must have. This pass writes the
// SPMD program the devices run: values take the shape of the device's
// piece (uneven splits give the first devices one more row), and wherever
// an operand's SBP differs from what its consumer needs, boxing ops are
// inserted, one mesh axis at a time:
//
//   S(d) -> B     flow.all_gather        P -> B      flow.all_reduce
//   P -> S(d)     flow.reduce_scatter    S(i)->S(j)  flow.all_to_all
//   B -> S(d)     flow.dynamic_slice at the device's offsets (no traffic);
//                 of a weight, the parameter's piece, read once at load
//   B -> P(sum)   the value on the axis' first device, zeros elsewhere (a
//                 select on the device's coordinate)
//   B -> P(max)   the value itself
//   other pairs   through B
//
// Where a device's position matters (the offsets above, a partition hook's
// local rows), the program reads it from flow.piece_offsets, which the
// runtime fills in for the device running it. So devices differ only in
// the shapes of their pieces: with even splits every device runs one
// program, with uneven ones each shape of piece has its own. Each function
// lists its devices in `flow.ranks`.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/Transforms/Passes.h"
#include "flow/runtime/rules/Mesh.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_PARTITIONPASS
#include "flow/Dialect/Flow/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

namespace {

/// Writes the function one device runs.
class DeviceWriter {
public:
  DeviceWriter(func::FuncOp global, MeshOp mesh, ArrayRef<int64_t> coords)
      : global(global), mesh(mesh), meshShape(mesh.getShape()),
        coords(coords.begin(), coords.end()) {}

  FailureOr<func::FuncOp> write(OpBuilder &moduleBuilder, StringRef name);

private:
  RankedTensorType localType(Value global, ArrayRef<SbpDim> sbp) {
    auto type = cast<RankedTensorType>(global.getType());
    SmallVector<int64_t> shape, offset;
    localPiece(type.getShape(), sbp, meshShape, coords, shape, offset);
    return RankedTensorType::get(shape, type.getElementType());
  }

  /// Boxes `local` (the piece of `global` laid out as `from`) into `to`.
  FailureOr<Value> box(OpBuilder &b, Value global, Value local, NdSbp from,
                       ArrayRef<SbpDim> to, Location loc);
  /// One step on mesh axis `axis`.
  FailureOr<Value> step(OpBuilder &b, Value global, Value local, NdSbp &cur,
                        unsigned axis, SbpDim to, Location loc);

  func::FuncOp global;
  MeshOp mesh;
  ArrayRef<int64_t> meshShape;
  SmallVector<int64_t> coords;
  IRMapping map;
  DenseMap<Value, NdSbp> sbpOf;
};

ReductionKind kindOf(SbpDim d) {
  return d.kind == SbpKind::PartialMax ? ReductionKind::max
                                       : ReductionKind::sum;
}

/// `d` as text (`S(0)`, `B`, `P`, `P(max)`) for diagnostics.
std::string str(SbpDim d) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << d;
  return s;
}

bool splitElsewhere(ArrayRef<SbpDim> sbp, unsigned axis, int64_t dim) {
  for (auto [i, d] : llvm::enumerate(sbp))
    if (i != axis && d.isSplit() && d.dim == dim)
      return true;
  return false;
}

} // namespace

FailureOr<Value> DeviceWriter::step(OpBuilder &b, Value global, Value local,
                                    NdSbp &cur, unsigned axis, SbpDim to,
                                    Location loc) {
  SbpDim from = cur[axis];
  StringRef meshName = mesh.getSymName();
  SmallVector<int64_t> axes = {static_cast<int64_t>(axis)};
  NdSbp next = cur;
  next[axis] = to;
  RankedTensorType type = localType(global, next);
  auto unsupportedNesting = [&]() -> FailureOr<Value> {
    return emitError(loc) << "boxing " << str(from) << " -> " << str(to)
                          << " on mesh axis " << axis
                          << " while another axis splits the same dimension "
                             "is not supported";
  };
  Value out;
  if (from.isSplit() && to.isBroadcast()) {
    if (splitElsewhere(cur, axis, from.dim))
      for (unsigned later = axis + 1; later < cur.size(); ++later)
        if (cur[later].isSplit() && cur[later].dim == from.dim)
          return unsupportedNesting();
    out = AllGatherOp::create(b, loc, type, local, meshName, axes, from.dim);
  } else if (from.isSplit() && to.isSplit()) {
    if (splitElsewhere(cur, axis, from.dim) || splitElsewhere(cur, axis, to.dim))
      return unsupportedNesting();
    out = AllToAllOp::create(b, loc, type, local, meshName, axes, to.dim,
                             from.dim);
  } else if (from.isPartial() && to.isBroadcast()) {
    out = AllReduceOp::create(b, loc, type, kindOf(from), local, meshName,
                              axes);
  } else if (from.isPartial() && to.isSplit()) {
    for (unsigned later = axis + 1; later < cur.size(); ++later)
      if (cur[later].isSplit() && cur[later].dim == to.dim)
        return unsupportedNesting();
    out = ReduceScatterOp::create(b, loc, type, kindOf(from), local, meshName,
                                  axes, to.dim);
  } else if (from.isBroadcast() && to.isSplit()) {
    for (unsigned later = axis + 1; later < cur.size(); ++later)
      if (cur[later].isSplit() && cur[later].dim == to.dim)
        return unsupportedNesting();
    auto globalType = cast<RankedTensorType>(global.getType());
    auto parameter = local.getDefiningOp<ParameterOp>();
    // A weight's piece is read once at load, not sliced every call. The
    // whole weight, or a piece by SBP of it, becomes the piece under the
    // new SBP, which the runtime finds from the device's coordinates:
    // every device with pieces of this shape runs the same op.
    // A block of a weight (a slice folded into it) keeps its offsets: the
    // SBP cuts the block.
    bool whole = parameter && !parameter.getPieceSbp() &&
                 parameter.getType() == globalType;
    bool bySbp = parameter && parameter.getPieceSbp() &&
                 parameter.getPieceSbp()->getDims() == ArrayRef(cur) &&
                 *parameter.getPieceSbpOf() == globalType.getShape();
    if (whole || bySbp) {
      out = ParameterOp::create(b, loc, type, parameter.getNameAttr(),
                                parameter.getPieceOffsetsAttr(),
                                parameter.getPieceOfAttr(),
                                SbpAttr::get(b.getContext(), next),
                                b.getDenseI64ArrayAttr(globalType.getShape()));
    } else {
      // Any other value (a weight's piece under another SBP among them):
      // this device's piece of its piece under `cur`, at offsets the
      // runtime fills in for each device.
      out = DynamicSliceOp::create(
          b, loc, type, local,
          createPieceOffsets(b, loc, globalType.getShape(), next, cur));
    }
  } else if (from.isBroadcast() && to.kind == SbpKind::PartialSum) {
    // The value on the axis' first device, zeros on the others.
    if (meshShape[axis] == 1) {
      out = local;
    } else {
      NdSbp alongAxis = broadcastSbp(meshShape.size());
      alongAxis[axis] = SbpDim::split(0);
      Value coord = createPieceOffsets(b, loc, {meshShape[axis]}, alongAxis);
      auto i64 = RankedTensorType::get({1}, b.getI64Type());
      Value first = CompareOp::create(
          b, loc,
          ComparePredicateAttr::get(b.getContext(), ComparePredicate::eq),
          coord,
          ConstantOp::create(
              b, loc, DenseElementsAttr::get(i64, b.getI64IntegerAttr(0))));
      SmallVector<int64_t> ones(type.getRank(), 1);
      auto maskType = RankedTensorType::get(ones, b.getI1Type());
      if (maskType != first.getType())
        first = ReshapeOp::create(b, loc, maskType, first);
      auto scalar = RankedTensorType::get({}, type.getElementType());
      Value zero = ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(scalar,
                                 b.getZeroAttr(type.getElementType())));
      out = SelectOp::create(b, loc, first, local, zero);
    }
  } else if (from.isBroadcast() && to.kind == SbpKind::PartialMax) {
    out = local; // max over equal copies is the value
  } else {
    return emitError(loc) << "no boxing step from " << str(from) << " to "
                          << str(to);
  }
  cur = next;
  return out;
}

FailureOr<Value> DeviceWriter::box(OpBuilder &b, Value global, Value local,
                                   NdSbp from, ArrayRef<SbpDim> to,
                                   Location loc) {
  NdSbp cur = from;
  // Splits are undone innermost axis first and made outermost first, so
  // that pieces of a dimension split over several axes nest in mesh order.
  // Undoing a split, or making one, undoes the later axes' splits of the
  // same dimension first (they are remade afterwards, as pieces of the new
  // layout).
  SmallVector<bool> undo(cur.size(), false);
  auto undoLater = [&](unsigned axis, int64_t dim) {
    for (unsigned later = axis + 1; later < cur.size(); ++later)
      if (cur[later].isSplit() && cur[later].dim == dim)
        undo[later] = true;
  };
  for (unsigned axis = 0; axis < cur.size(); ++axis) {
    if (cur[axis] != to[axis] && to[axis].isSplit())
      undoLater(axis, to[axis].dim);
    if (!cur[axis].isSplit())
      continue;
    undo[axis] = undo[axis] || cur[axis] != to[axis];
    if (undo[axis])
      undoLater(axis, cur[axis].dim);
  }
  // An outer axis that will make a split of dimension `dim` (after the
  // undoing): an inner axis cannot hold a piece of `dim` before it does.
  auto outerMakes = [&](unsigned axis, int64_t dim) {
    for (unsigned outer = 0; outer < axis; ++outer)
      if (to[outer].isSplit() && to[outer].dim == dim && cur[outer] != to[outer])
        return true;
    return false;
  };
  for (int axis = static_cast<int>(cur.size()) - 1; axis >= 0; --axis) {
    if (!undo[axis])
      continue;
    SbpDim target = to[axis].isSplit() && to[axis] != cur[axis] &&
                            !splitElsewhere(cur, axis, to[axis].dim) &&
                            !splitElsewhere(cur, axis, cur[axis].dim) &&
                            !outerMakes(axis, to[axis].dim)
                        ? to[axis]
                        : SbpDim::broadcast();
    FailureOr<Value> v = step(b, global, local, cur, axis, target, loc);
    if (failed(v))
      return failure();
    local = *v;
  }
  for (unsigned axis = 0; axis < cur.size(); ++axis) {
    if (cur[axis] == to[axis])
      continue;
    std::optional<SmallVector<SbpDim>> route =
        boxingRoute1D(cur[axis], to[axis], 0);
    if (!route)
      return emitError(loc) << "no boxing route from " << str(cur[axis])
                            << " to " << str(to[axis]);
    for (SbpDim s : *route) {
      FailureOr<Value> v = step(b, global, local, cur, axis, s, loc);
      if (failed(v))
        return failure();
      local = *v;
    }
  }
  return local;
}

FailureOr<func::FuncOp> DeviceWriter::write(OpBuilder &moduleBuilder,
                                            StringRef name) {
  StringRef sbpName = FlowDialect::getSbpAttrName();
  unsigned rank = meshShape.size();
  MLIRContext *ctx = global.getContext();

  auto argSbp = [&](unsigned i) {
    auto a = global.getArgAttrOfType<SbpAttr>(i, sbpName);
    return a ? NdSbp(a.getDims()) : broadcastSbp(rank);
  };
  auto resultSbp = [&](unsigned i) {
    auto a = global.getResultAttrOfType<SbpAttr>(i, sbpName);
    return a ? NdSbp(a.getDims()) : broadcastSbp(rank);
  };
  SmallVector<Type> argTypes, resultTypes;
  for (BlockArgument arg : global.getArguments())
    argTypes.push_back(localType(arg, argSbp(arg.getArgNumber())));
  for (unsigned i = 0; i < global.getNumResults(); ++i)
    resultTypes.push_back(
        localType(global.getBody().front().getTerminator()->getOperand(i),
                  resultSbp(i)));

  auto func = func::FuncOp::create(moduleBuilder, global.getLoc(), name,
                                   FunctionType::get(ctx, argTypes, resultTypes));
  // The training state's names go with the pieces: each device keeps its
  // piece of every state and updates it in place (flow-tie-state).
  // So do the index checks (a piece of indices is checked against the
  // same bound).
  for (StringRef attr :
       {FlowDialect::getStateAttrName(), FlowDialect::getStateInitAttrName(),
        FlowDialect::getLearningRateAttrName(),
        FlowDialect::getIndexCheckAttrName()})
    for (unsigned i = 0; i < global.getNumArguments(); ++i)
      if (Attribute a = global.getArgAttr(i, attr))
        func.setArgAttr(i, attr, a);
  for (unsigned i = 0; i < global.getNumResults(); ++i)
    if (Attribute a = global.getResultAttr(i, FlowDialect::getStateAttrName()))
      func.setResultAttr(i, FlowDialect::getStateAttrName(), a);
  Block *body = func.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  for (BlockArgument arg : global.getArguments()) {
    map.map(arg, body->getArgument(arg.getArgNumber()));
    sbpOf[arg] = argSbp(arg.getArgNumber());
  }

  for (Operation &op : global.getBody().front()) {
    Location loc = op.getLoc();
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      NdSbp to(annotate.getSbp().getDims());
      FailureOr<Value> v = box(b, annotate.getInput(),
                               map.lookup(annotate.getInput()),
                               sbpOf[annotate.getInput()], to, loc);
      if (failed(v))
        return failure();
      map.map(annotate.getResult(), *v);
      sbpOf[annotate.getResult()] = to;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> values;
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        FailureOr<Value> boxed =
            box(b, v, map.lookup(v), sbpOf[v], resultSbp(i), loc);
        if (failed(boxed))
          return failure();
        values.push_back(*boxed);
      }
      func::ReturnOp::create(b, loc, values);
      continue;
    }
    auto operandSbp =
        op.getAttrOfType<ArrayAttr>(FlowDialect::getOperandSbpAttrName());
    auto resultSbps = op.getAttrOfType<ArrayAttr>(sbpName);
    if (!operandSbp || !resultSbps)
      return op.emitError("has no SBP: run flow-propagate-sbp before "
                          "flow-partition");
    SmallVector<Value> operands;
    for (auto [v, want] : llvm::zip(op.getOperands(), operandSbp)) {
      FailureOr<Value> boxed = box(b, v, map.lookup(v), sbpOf[v],
                                   cast<SbpAttr>(want).getDims(), loc);
      if (failed(boxed))
        return failure();
      operands.push_back(*boxed);
    }
    SmallVector<Type> types;
    for (auto [r, s] : llvm::zip(op.getResults(), resultSbps))
      types.push_back(localType(r, cast<SbpAttr>(s).getDims()));

    SmallVector<NdSbp> operandLayouts, resultLayouts;
    for (Attribute a : operandSbp)
      operandLayouts.push_back(NdSbp(cast<SbpAttr>(a).getDims()));
    for (Attribute a : resultSbps)
      resultLayouts.push_back(NdSbp(cast<SbpAttr>(a).getDims()));
    DevicePlace place{mesh.getSymName(), meshShape, coords, operandLayouts,
                      resultLayouts};
    auto iface = dyn_cast<SbpOpInterface>(op);
    if (!iface)
      return op.emitError("has no SBP rules: it cannot be partitioned");
    FailureOr<SmallVector<Value>> local =
        iface.partition(b, operands, types, place);
    if (failed(local))
      return failure();
    for (auto [l, t] : llvm::zip_equal(*local, types))
      if (l.getType() != t)
        return op.emitError("partitioned into a piece of type ")
               << l.getType() << " where the layout gives " << t;
    for (auto [r, l, s] : llvm::zip(op.getResults(), *local, resultSbps)) {
      map.map(r, l);
      sbpOf[r] = NdSbp(cast<SbpAttr>(s).getDims());
    }
  }
  return func;
}

namespace {
struct PartitionPass : mlir::flow::impl::PartitionPassBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> globals;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (func->hasAttr(FlowDialect::getMeshAttrName()) && !func.isExternal())
        globals.push_back(func);
    for (func::FuncOp global : globals)
      if (failed(partition(module, global)))
        return signalPassFailure();
  }

  /// Replaces each op of kinds `Ops` that repeats an earlier one (the
  /// same op, operands and attributes) by that one; returns the ops kept,
  /// in order, and counts the merged ones in `merged`.
  template <typename... Ops>
  SmallVector<Operation *> mergeRepeats(func::FuncOp func, unsigned &merged) {
    SmallVector<Operation *> kept;
    for (Operation &op : llvm::make_early_inc_range(func.getOps())) {
      if (!isa<Ops...>(op))
        continue;
      auto same = llvm::find_if(kept, [&](Operation *earlier) {
        return OperationEquivalence::isEquivalentTo(
            &op, earlier, OperationEquivalence::IgnoreLocations);
      });
      if (same == kept.end()) {
        kept.push_back(&op);
        continue;
      }
      op.replaceAllUsesWith(*same);
      op.erase();
      ++merged;
    }
    return kept;
  }

  /// A collective that repeats an earlier one (the same kind, input, mesh
  /// axes and result: a boxing several consumers need) reuses its result.
  /// Every device program is merged alike, so the devices still run the
  /// same collectives in the same order. The device's offsets are constants
  /// of the program: each distinct one is read once, at the top.
  void mergeRepeats(func::FuncOp func) {
    unsigned collectives = 0, offsets = 0;
    mergeRepeats<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(
        func, collectives);
    numMergedCollectives += collectives;
    Operation *top = nullptr;
    for (Operation *op : mergeRepeats<PieceOffsetsOp>(func, offsets)) {
      if (top)
        op->moveAfter(top);
      else
        op->moveBefore(&func.getBody().front().front());
      top = op;
    }
  }

  LogicalResult partition(ModuleOp module, func::FuncOp global) {
    auto ref = global->getAttrOfType<FlatSymbolRefAttr>(
        FlowDialect::getMeshAttrName());
    MeshOp mesh = lookupMesh(global, ref);
    if (!mesh)
      return global.emitError("'flow.mesh' names no mesh");
    ArrayRef<int64_t> shape = mesh.getShape();
    int64_t devices = mesh.getNumDevices();
    OpBuilder builder(global);
    MLIRContext *ctx = &getContext();

    // One function per distinct device program.
    SmallVector<std::pair<func::FuncOp, SmallVector<int64_t>>> written;
    llvm::StringMap<size_t> byText;
    for (int64_t rank = 0; rank < devices; ++rank) {
      SmallVector<int64_t> coords(shape.size());
      ::flow::rules::meshCoordinates(shape, rank, coords);
      DeviceWriter writer(global, mesh, coords);
      std::string name = (global.getSymName() + "_r" + Twine(rank)).str();
      FailureOr<func::FuncOp> func = writer.write(builder, name);
      if (failed(func))
        return failure();
      mergeRepeats(*func);
      // What boxing left unread (a whole weight whose piece is read
      // instead) goes: the device would load it for nothing.
      for (Operation &op : llvm::make_early_inc_range(
               llvm::reverse((*func).getBody().front())))
        if (isOpTriviallyDead(&op))
          op.erase();
      // Compare bodies with the name blanked out.
      (*func).setSymName("__flow_device");
      std::string text;
      llvm::raw_string_ostream os(text);
      (*func).print(os);
      (*func).setSymName(name);
      auto [it, inserted] = byText.try_emplace(text, written.size());
      if (!inserted) {
        written[it->second].second.push_back(rank);
        (*func).erase();
        continue;
      }
      written.push_back({*func, {rank}});
    }
    StringAttr globalName = global.getSymNameAttr();
    // The global signature: what the runtime slices inputs from and
    // assembles outputs into.
    auto placements = [&](TypeRange types, auto sbpAt) {
      SmallVector<Attribute> entries;
      for (auto [i, t] : llvm::enumerate(types))
        entries.push_back(
            ArrayAttr::get(ctx, {TypeAttr::get(t), sbpAt(i)}));
      return ArrayAttr::get(ctx, entries);
    };
    StringRef sbpName = FlowDialect::getSbpAttrName();
    unsigned meshRank = shape.size();
    auto sbpOr = [&](SbpAttr a) {
      return a ? a : SbpAttr::get(ctx, broadcastSbp(meshRank));
    };
    ArrayAttr inputs = placements(global.getArgumentTypes(), [&](size_t i) {
      return sbpOr(global.getArgAttrOfType<SbpAttr>(i, sbpName));
    });
    ArrayAttr outputs = placements(global.getResultTypes(), [&](size_t i) {
      return sbpOr(global.getResultAttrOfType<SbpAttr>(i, sbpName));
    });
    global.erase();
    for (auto &[func, ranks] : written) {
      func->setAttr(FlowDialect::getRanksAttrName(),
                    DenseI64ArrayAttr::get(ctx, ranks));
      func->setAttr(FlowDialect::getMeshAttrName(), ref);
      func->setAttr(FlowDialect::getPartitionOfAttrName(), globalName);
      func->setAttr(FlowDialect::getGlobalInputsAttrName(), inputs);
      func->setAttr(FlowDialect::getGlobalOutputsAttrName(), outputs);
      if (written.size() == 1)
        func.setSymName(globalName);
      ++numDevicePrograms;
    }
    return success();
  }
};
} // namespace
