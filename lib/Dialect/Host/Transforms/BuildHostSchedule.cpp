//===- BuildHostSchedule.cpp - Host functions to schedules on buffers -----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Dialect/Host/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace flow {
#define GEN_PASS_DEF_BUILDHOSTSCHEDULEPASS
#include "flow/Dialect/Host/Transforms/Passes.h.inc"
} // namespace flow
} // namespace mlir

using namespace mlir;
using namespace mlir::flow;

/// The host buffer of a tensor.
static MemRefType bufferType(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Ops of the flow phase that run on the host as commands.
static bool isCommand(Operation *op) {
  return isa<func::CallOp, MatmulOp, Conv2dOp, AttentionOp, AllReduceOp,
             AllGatherOp, ReduceScatterOp, AllToAllOp>(op);
}

namespace {
/// Rewrites one function; `func` keeps its name, attributes and location.
class ScheduleBuilder {
public:
  ScheduleBuilder(func::FuncOp func, bool bf16Convs, bool allowTf32)
      : func(func), bf16Convs(bf16Convs), allowTf32(allowTf32) {}

  LogicalResult build();

private:
  /// The buffer a command writes `result` into.
  Value destination(OpBuilder &b, Value result);
  LogicalResult command(OpBuilder &b, Operation &op);

  func::FuncOp func;
  /// Mark library convolutions `bf16`.
  bool bf16Convs;
  /// Mark f32 library GEMMs `allow_tf32`.
  bool allowTf32;
  IRMapping map;
  /// Results written straight into an output buffer: the output's index.
  llvm::DenseMap<Value, unsigned> outputOf;
  SmallVector<Value> outputs;
};
} // namespace

Value ScheduleBuilder::destination(OpBuilder &b, Value result) {
  MemRefType type = bufferType(result.getType());
  auto it = outputOf.find(result);
  if (it == outputOf.end())
    return HostAllocOp::create(b, result.getLoc(), type);
  Value out = outputs[it->second];
  if (out.getType() == type)
    return out;
  return HostViewOp::create(b, result.getLoc(), type, out);
}

LogicalResult ScheduleBuilder::command(OpBuilder &b, Operation &op) {
  Location loc = op.getLoc();
  auto in = [&](Value v) { return map.lookup(v); };
  SmallVector<Value> dests;
  for (Value r : op.getResults())
    dests.push_back(destination(b, r));
  if (auto call = dyn_cast<func::CallOp>(op)) {
    SmallVector<Value> inputs = llvm::map_to_vector(call.getOperands(), in);
    auto dispatch =
        HostDispatchOp::create(b, loc, call.getCalleeAttr(), inputs, dests,
                               call->getAttrOfType<DenseI64ArrayAttr>(
                                   FlowDialect::getInPlaceOperandsAttrName()));
    if (Attribute rows = call->getAttr(FlowDialect::getRowsAttrName()))
      dispatch->setAttr(FlowDialect::getRowsAttrName(), rows);
  } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
    Type operandType = matmul.getLhs().getType().getElementType();
    Type resultType = matmul.getType().getElementType();
    if (matmul.getRhs().getType().getElementType() != operandType ||
        !(operandType.isF32() || operandType.isBF16() ||
          operandType.isF16()) ||
        !(resultType.isF32() || resultType == operandType))
      return op.emitError("the host's library GEMM runs f32, bf16 or f16 "
                          "operands of one type into f32 or their own type; "
                          "this ")
             << matmul.getType() << " matmul belongs in a kernel";
    auto gemm = HostGemmOp::create(
        b, loc, in(matmul.getLhs()), in(matmul.getRhs()), dests[0],
        matmul.getTransposeLhs(), matmul.getTransposeRhs(), /*bias=*/Value(),
        GemmActivation::none,
        /*allow_tf32=*/allowTf32 && operandType.isF32());
    if (Attribute rows = matmul->getAttr(FlowDialect::getRowsAttrName()))
      gemm->setAttr(FlowDialect::getRowsAttrName(), rows);
  } else if (auto conv = dyn_cast<Conv2dOp>(op)) {
    Type elt = conv.getType().getElementType();
    if (!elt.isF32() && !elt.isF16() && !elt.isBF16())
      return op.emitError("the host's library convolution runs f32, f16 "
                          "and bf16; this ")
             << conv.getType() << " convolution belongs in a kernel";
    Value bias = conv.getBias() ? in(conv.getBias()) : Value();
    auto hostConv = HostConvOp::create(
        b, loc, in(conv.getInput()), in(conv.getWeight()), bias,
        /*residual=*/Value(), dests[0], conv.getStridesAttr(),
        conv.getPaddingAttr(), conv.getDilationsAttr(), conv.getGroupsAttr(),
        /*relu=*/UnitAttr(),
        /*blocked_input=*/UnitAttr(),
        /*blocked_residual=*/UnitAttr(),
        /*blocked_output=*/UnitAttr(),
        bf16Convs && elt.isF32() ? b.getUnitAttr() : UnitAttr());
    if (Attribute rows = conv->getAttr(FlowDialect::getRowsAttrName()))
      hostConv->setAttr(FlowDialect::getRowsAttrName(), rows);
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    Type elt = attention.getType().getElementType();
    if (!elt.isF32() && !elt.isF16() && !elt.isBF16())
      return op.emitError("the host's attention library runs f32, f16 and "
                          "bf16; this ")
             << attention.getType()
             << " attention needs flow-decompose-attention";
    Value mask = attention.getMask() ? in(attention.getMask()) : Value();
    auto hostAttention = HostAttentionOp::create(
        b, loc, in(attention.getQuery()), in(attention.getKey()),
        in(attention.getValue()), mask, dests[0], attention.getScaleAttr(),
        attention.getCausalAttr());
    if (Attribute rows = attention->getAttr(FlowDialect::getRowsAttrName()))
      hostAttention->setAttr(FlowDialect::getRowsAttrName(), rows);
  } else {
    MLIRContext *ctx = op.getContext();
    auto i64 = [&](int64_t v) {
      return IntegerAttr::get(IntegerType::get(ctx, 64), v);
    };
    CollectiveKind kind;
    ReductionKindAttr reduction;
    IntegerAttr dim, splitDim, concatDim;
    FlatSymbolRefAttr mesh;
    ArrayRef<int64_t> axes;
    if (auto r = dyn_cast<AllReduceOp>(op)) {
      kind = CollectiveKind::all_reduce;
      reduction = r.getKindAttr();
      mesh = r.getMeshAttr();
      axes = r.getMeshAxes();
    } else if (auto g = dyn_cast<AllGatherOp>(op)) {
      kind = CollectiveKind::all_gather;
      dim = i64(g.getDim());
      mesh = g.getMeshAttr();
      axes = g.getMeshAxes();
    } else if (auto s = dyn_cast<ReduceScatterOp>(op)) {
      kind = CollectiveKind::reduce_scatter;
      reduction = s.getKindAttr();
      dim = i64(s.getDim());
      mesh = s.getMeshAttr();
      axes = s.getMeshAxes();
    } else {
      auto a = cast<AllToAllOp>(op);
      kind = CollectiveKind::all_to_all;
      splitDim = i64(a.getSplitDim());
      concatDim = i64(a.getConcatDim());
      mesh = a.getMeshAttr();
      axes = a.getMeshAxes();
    }
    HostCollectiveOp::create(b, loc, CollectiveKindAttr::get(ctx, kind),
                             in(op.getOperand(0)), dests[0], mesh,
                             DenseI64ArrayAttr::get(ctx, axes), reduction, dim,
                             splitDim, concatDim);
  }
  for (auto [r, d] : llvm::zip(op.getResults(), dests))
    map.map(r, d);
  return success();
}

LogicalResult ScheduleBuilder::build() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("a host function must have one block");
  Block &old = func.getBody().front();
  auto ret = cast<func::ReturnOp>(old.getTerminator());

  // The new signature: inputs, then one buffer per output.
  SmallVector<Type> types;
  SmallVector<Type> signature(func.getArgumentTypes());
  llvm::append_range(signature, func.getResultTypes());
  for (Type t : signature) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    Type e = tensor ? tensor.getElementType() : Type();
    if (!tensor || !tensor.hasStaticShape() || !isFlowElementType(e))
      return func.emitError("function signature type ")
             << t
             << " is not supported: Flow executables take tensors of static "
                "shape of f32, f16, bf16, f64, i64, i32, i16, i8, ui64, "
                "ui32, ui16, ui8 or i1";
    types.push_back(bufferType(t));
  }
  auto *block = new Block();
  func.getBody().push_back(block);
  for (Type t : types)
    block->addArgument(t, func.getLoc());
  for (auto [arg, buffer] : llvm::zip(old.getArguments(), block->getArguments()))
    map.map(arg, buffer);
  outputs.assign(block->args_begin() + func.getNumArguments(),
                 block->args_end());

  // A returned value a command computes is written into its output (the
  // first time it is returned, at the output's size).
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value root = bufferRoot(v);
    Operation *def = root.getDefiningOp();
    if (def && isCommand(def) && !outputOf.count(root) &&
        storageBytes(cast<ShapedType>(root.getType())) ==
            storageBytes(cast<ShapedType>(v.getType())))
      outputOf[root] = i;
  }

  OpBuilder b = OpBuilder::atBlockEnd(block);
  auto fail = [&]() {
    block->dropAllDefinedValueUses();
    block->erase();
    return failure();
  };
  for (Operation &op : old.without_terminator()) {
    Location loc = op.getLoc();
    if (auto c = dyn_cast<ConstantOp>(op)) {
      map.map(c.getResult(), HostConstantOp::create(
                                 b, loc, bufferType(c.getType()), c.getValue()));
    } else if (auto p = dyn_cast<ParameterOp>(op)) {
      map.map(p.getResult(),
              HostParameterOp::create(b, loc, bufferType(p.getType()),
                                      p.getNameAttr(), p.getPieceOffsetsAttr(),
                                      p.getPieceOfAttr(), p.getPieceSbpAttr(),
                                      p.getPieceSbpOfAttr()));
    } else if (isParameterConcat(&op)) {
      auto concat = cast<ConcatOp>(op);
      SmallVector<Value> parts;
      for (Value input : concat.getInputs())
        parts.push_back(map.lookup(input));
      map.map(concat.getResult(), HostParameterConcatOp::create(
                                      b, loc, bufferType(concat.getType()),
                                      parts, concat.getAxisAttr()));
    } else if (auto sizes = dyn_cast<SymbolsOp>(op)) {
      map.map(sizes.getResult(),
              HostSymbolsOp::create(b, loc, bufferType(sizes.getType())));
    } else if (auto o = dyn_cast<PieceOffsetsOp>(op)) {
      map.map(o.getResult(), HostPieceOffsetsOp::create(
                                 b, loc, bufferType(o.getType()), o.getSbp(),
                                 o.getWithinAttr(), o.getOfAttr()));
    } else if (auto r = dyn_cast<ReshapeOp>(op)) {
      map.map(r.getResult(),
              HostViewOp::create(b, loc, bufferType(r.getType()),
                                 map.lookup(r.getOperand())));
    } else if (auto a = dyn_cast<AnnotateOp>(op)) {
      map.map(a.getResult(), map.lookup(a.getInput()));
    } else if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op) &&
               !func->hasAttr(FlowDialect::getRanksAttrName())) {
      op.emitError("'")
          << op.getName()
          << "' has no single-device lowering: collectives run in the "
             "device programs of mesh functions (give the function a "
             "'flow.mesh')";
      return fail();
    } else if (isCommand(&op)) {
      if (failed(command(b, op)))
        return fail();
    } else {
      op.emitError("the host cannot run '")
          << op.getName() << "': it belongs in a kernel";
      return fail();
    }
  }
  // Outputs no command wrote are copied at the end.
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto it = outputOf.find(bufferRoot(v));
    if (it != outputOf.end() && it->second == i)
      continue;
    auto copy = HostCopyOp::create(b, ret.getLoc(), map.lookup(v), outputs[i]);
    // An output of symbolic rows copies the rows of this call.
    if (auto symbolic = func.getResultAttrOfType<TypeAttr>(
            i, FlowDialect::getSymbolicTypeAttrName())) {
      std::string why;
      FailureOr<Extent> rows = rowExtent(symbolic.getValue(), why);
      if (succeeded(rows))
        copy->setAttr(FlowDialect::getRowsAttrName(),
                      StringAttr::get(func.getContext(), rows->str()));
    }
  }
  func::ReturnOp::create(b, ret.getLoc());
  // Views of returned values nothing reads.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block)))
    if (isa<HostViewOp>(op) && op.use_empty())
      op.erase();

  unsigned numOutputs = func.getNumResults();
  old.dropAllDefinedValueUses();
  old.erase();
  SmallVector<DictionaryAttr> argAttrs;
  func.getAllArgAttrs(argAttrs);
  // An output buffer keeps the state name of its result (flow-tie-state
  // writes it into the input of that name) and its symbolic type.
  for (unsigned i = 0; i < numOutputs; ++i) {
    SmallVector<NamedAttribute> kept;
    for (StringRef name : {FlowDialect::getStateAttrName(),
                           FlowDialect::getSymbolicTypeAttrName()})
      if (Attribute a = func.getResultAttr(i, name))
        kept.push_back(NamedAttribute(name, a));
    argAttrs.push_back(DictionaryAttr::get(func.getContext(), kept));
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), types, TypeRange()));
  argAttrs.resize(types.size(), DictionaryAttr::get(func.getContext()));
  func.setAllArgAttrs(argAttrs);
  func.removeResAttrsAttr();
  func->setAttr(FlowDialect::getHostOutputsAttrName(),
                IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                 numOutputs));
  return success();
}

namespace {
struct BuildHostSchedulePass
    : mlir::flow::impl::BuildHostSchedulePassBase<BuildHostSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    for (func::FuncOp func :
         llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.isExternal() || func.isPrivate() ||
          func->hasAttr(FlowDialect::getKernelAttrName()) ||
          func->hasAttr(FlowDialect::getHostOutputsAttrName()))
        continue;
      if (failed(ScheduleBuilder(func, bf16Convs, allowTf32).build()))
        return signalPassFailure();
    }
  }
};
} // namespace
