//===- FlowDialect.cpp - Flow dialect -------------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowGradient.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::flow;

#include "flow/Dialect/Flow/IR/FlowDialect.cpp.inc"

namespace {
/// Every flow op is pure dataflow on tensors: inlining a function that uses
/// them is always legal.
struct FlowInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool,
                       IRMapping &) const final {
    return true;
  }
};
} // namespace

void FlowDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flow/Dialect/Flow/IR/FlowOps.cpp.inc"
      >();
  registerAttributes();
  addInterfaces<FlowInlinerInterface>();
  registerSbpInterfaceModels(getContext());
  registerGradientInterfaceModels(getContext());
}

Operation *FlowDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// Discardable attributes: flow.mesh on functions, flow.sbp on their values
//===----------------------------------------------------------------------===//

/// Resolves the mesh named by `op`'s `flow.mesh` attribute, reporting why it
/// cannot be resolved.
static FailureOr<MeshOp> getFunctionMesh(Operation *op, StringRef what) {
  auto ref =
      op->getAttrOfType<FlatSymbolRefAttr>(FlowDialect::getMeshAttrName());
  if (!ref)
    return op->emitOpError()
           << what << " has a 'flow.sbp' attribute, so the function needs a '"
           << FlowDialect::getMeshAttrName() << "' attribute naming its mesh";
  MeshOp mesh = lookupMesh(op, ref);
  if (!mesh)
    return op->emitOpError()
           << "'" << FlowDialect::getMeshAttrName() << "' refers to " << ref
           << ", which is not a flow.mesh in scope";
  return mesh;
}

WalkResult
mlir::flow::walkFunctionTypes(FunctionOpInterface func,
                              function_ref<WalkResult(Type, Operation *)> fn) {
  for (Type type :
       llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (fn(type, func).wasInterrupted())
      return WalkResult::interrupt();
  return func->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (fn(type, op).wasInterrupted())
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Type type : block.getArgumentTypes())
          if (fn(type, op).wasInterrupted())
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
}

LogicalResult mlir::flow::verifySizeSymbols(FunctionOpInterface func) {
  auto list = func->getAttrOfType<ArrayAttr>(FlowDialect::getDimsAttrName());
  llvm::StringSet<> declared;
  if (list)
    for (Attribute entry : list)
      if (auto dim = dyn_cast<DimAttr>(entry))
        declared.insert(dim.getName().getValue());
  WalkResult walk = walkFunctionTypes(func, [&](Type type, Operation *at) {
    for (const std::string &name : symbolsOf(type)) {
      if (declared.contains(name))
        continue;
      at->emitOpError() << "uses size symbol '" << name << "', which function @"
                        << func.getName()
                        << " does not declare: give its bounds in its '"
                        << FlowDialect::getDimsAttrName() << "' (#flow.dim<\""
                        << name << "\", min, max>)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult FlowDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getDimsAttrName()) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!list || !func)
      return op->emitOpError()
             << "'" << getDimsAttrName()
             << "' goes on a function: an array of #flow.dim attributes";
    llvm::StringSet<> names;
    for (auto [i, entry] : llvm::enumerate(list)) {
      auto dim = dyn_cast<DimAttr>(entry);
      if (!dim)
        return op->emitOpError() << "'" << getDimsAttrName() << "' entry " << i
                                 << " is not a #flow.dim attribute";
      if (!names.insert(dim.getName().getValue()).second)
        return op->emitOpError()
               << "'" << getDimsAttrName() << "' declares size symbol '"
               << dim.getName().getValue() << "' twice";
    }
    return verifySizeSymbols(func);
  }
  if (attr.getName() == getRowExtentAttrName() ||
      attr.getName() == getRowsAttrName()) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    Extent extent;
    std::string error;
    if (!text || !Extent::parse(text.str(), extent, error) ||
        extent.isConstant())
      return op->emitOpError()
             << "'" << attr.getName().getValue()
             << "' must be a symbolic extent as text (\"batch\", \"2*seq\")";
    return success();
  }
  if (attr.getName() == getMeshAttrName()) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!ref)
      return op->emitOpError()
             << "'" << getMeshAttrName() << "' must be a symbol reference";
    if (!lookupMesh(op, ref))
      return op->emitOpError() << "'" << getMeshAttrName() << "' refers to "
                               << ref << ", which is not a flow.mesh in scope";
    return success();
  }
  if (attr.getName() == getSbpAttrName() ||
      attr.getName() == getOperandSbpAttrName()) {
    bool results = attr.getName() == getSbpAttrName();
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    TypeRange types = results ? TypeRange(op->getResultTypes())
                              : TypeRange(op->getOperandTypes());
    if (!list || list.size() != types.size())
      return op->emitOpError()
             << "'" << attr.getName().getValue() << "' must be an array of "
             << types.size() << " #flow.sbp attributes, one per "
             << (results ? "result" : "operand");
    auto func = op->getParentOfType<FunctionOpInterface>();
    FailureOr<MeshOp> mesh =
        func ? getFunctionMesh(func, "an op") : FailureOr<MeshOp>(failure());
    if (failed(mesh))
      return failure();
    for (auto [i, entry] : llvm::enumerate(list)) {
      auto sbp = dyn_cast<SbpAttr>(entry);
      if (!sbp)
        return op->emitOpError()
               << "'" << attr.getName().getValue() << "' entry " << i
               << " is not a #flow.sbp attribute";
      size_t index = i; // Structured bindings cannot be captured in C++17.
      if (failed(sbp.verifyFor((*mesh).getShape(), types[i], [&]() {
            return op->emitOpError()
                   << "'" << attr.getName().getValue() << "' entry " << index
                   << ": ";
          })))
        return failure();
    }
    return success();
  }
  if (attr.getName() == getRanksAttrName()) {
    auto ranks = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!ranks || ranks.empty() ||
        llvm::any_of(ranks.asArrayRef(), [](int64_t r) { return r < 0; }))
      return op->emitOpError() << "'" << getRanksAttrName()
                               << "' must be a non-empty array of ranks >= 0";
    return success();
  }
  if (attr.getName() == getGlobalInputsAttrName() ||
      attr.getName() == getGlobalOutputsAttrName()) {
    auto list = dyn_cast<ArrayAttr>(attr.getValue());
    auto bad = [&]() {
      return op->emitOpError()
             << "'" << attr.getName().getValue()
             << "' must be an array of [tensor type, #flow.sbp] pairs";
    };
    if (!list)
      return bad();
    FailureOr<MeshOp> mesh = getFunctionMesh(op, "the function");
    if (failed(mesh))
      return failure();
    for (Attribute entry : list) {
      auto pair = dyn_cast<ArrayAttr>(entry);
      if (!pair || pair.size() != 2 || !isa<TypeAttr>(pair[0]) ||
          !isa<SbpAttr>(pair[1]))
        return bad();
      if (failed(cast<SbpAttr>(pair[1]).verifyFor(
              (*mesh).getShape(), cast<TypeAttr>(pair[0]).getValue(),
              [&]() {
                return op->emitOpError()
                       << "'" << attr.getName().getValue() << "': ";
              })))
        return failure();
    }
    return success();
  }
  if (attr.getName() == getPartitionOfAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << getPartitionOfAttrName() << "' must be a string";
    return success();
  }
  if (attr.getName() == getFusionRefusedAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << getFusionRefusedAttrName() << "' must be a string";
    return success();
  }
  if (attr.getName() == getParametersAttrName()) {
    auto path = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !path || path.getValue().empty())
      return op->emitOpError()
             << "'" << getParametersAttrName()
             << "' must be a non-empty string on a module";
    return success();
  }
  if (attr.getName() == getKernelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << getKernelAttrName() << "' must be a unit attribute";
    return success();
  }
  if (attr.getName() == getWorkgroupExtentAttrName() ||
      attr.getName() == getMaxWorkgroupsAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 1)
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be a positive integer";
    return success();
  }
  if (attr.getName() == getGridAttrName() ||
      attr.getName() == getBlockAttrName()) {
    auto dims = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!dims || dims.size() != 3 ||
        llvm::any_of(dims.asArrayRef(), [](int64_t d) { return d < 1; }))
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be three positive extents";
    return success();
  }
  if (attr.getName() == getStageOfAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << getStageOfAttrName() << "' must be a kernel's name";
    return success();
  }
  if (attr.getName() == getScratchOffsetsAttrName()) {
    auto offsets = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!offsets ||
        llvm::any_of(offsets.asArrayRef(), [](int64_t o) { return o < 0; }))
      return op->emitOpError() << "'" << getScratchOffsetsAttrName()
                               << "' must be an array of byte offsets";
    return success();
  }
  if (attr.getName() == getSharedBytesAttrName() ||
      attr.getName() == getDynamicSharedBytesAttrName() ||
      attr.getName() == getStageAttrName() ||
      attr.getName() == getScratchBytesAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 0)
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be a non-negative integer";
    return success();
  }
  if (attr.getName() == getMergedKernelsAttrName()) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names || !op->hasAttr(getKernelAttrName()) ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError()
             << "'" << getMergedKernelsAttrName()
             << "' must be an array of kernel names on a kernel";
    return success();
  }
  if (attr.getName() == getHostOutputsAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!value || !func || value.getInt() < 0 ||
        value.getInt() > (int64_t)func.getNumArguments())
      return op->emitOpError()
             << "'" << getHostOutputsAttrName()
             << "' must be a function's count of trailing output buffers";
    return success();
  }
  if (attr.getName() == getInPlaceOperandsAttrName()) {
    auto indices = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!indices || llvm::any_of(indices.asArrayRef(),
                                 [](int64_t i) { return i < 0; }))
      return op->emitOpError()
             << "'" << getInPlaceOperandsAttrName()
             << "' must be an array<i64> of operand indices";
    return success();
  }
  if (attr.getName() == getBindingSizesAttrName()) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!sizes || llvm::any_of(sizes.asArrayRef(),
                               [](int64_t size) { return size < 0; }))
      return op->emitOpError()
             << "'" << getBindingSizesAttrName()
             << "' must be an array<i64> of non-negative byte sizes";
    return success();
  }
  if (attr.getName() == getNumOutputsAttrName()) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() < 0)
      return op->emitOpError() << "'" << getNumOutputsAttrName()
                               << "' must be a non-negative integer";
    return success();
  }
  if (attr.getName() == getScratchAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) ||
        !llvm::is_contained({StringRef("memref.alloc"), StringRef("memref.alloca")},
                            op->getName().getStringRef()))
      return op->emitOpError()
             << "'" << getScratchAttrName()
             << "' must be a unit attribute on an allocation";
    return success();
  }
  if (attr.getName() == getOptimizerAttrName()) {
    // Its entries are checked by flow-apply-optimizer, which reads them.
    if (!isa<DictionaryAttr>(attr.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << getOptimizerAttrName()
                               << "' must be a dictionary on a function";
    return success();
  }
  if (attr.getName() == getModeledPlanAttrName()) {
    // Written by flow-propagate-sbp for the report, which reads it.
    if (!isa<DictionaryAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << getModeledPlanAttrName()
                               << "' must be a dictionary on a function";
    return success();
  }
  if (attr.getName() == getRecomputeAttrName()) {
    // Its op names are checked by flow-autodiff, which reads them.
    if (!isa<ArrayAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << getRecomputeAttrName()
                               << "' must be an array on a function";
    return success();
  }
  return op->emitOpError() << "unknown flow attribute '"
                           << attr.getName().getValue() << "' on an operation";
}

/// Verifies the training attributes of function value `index` of `types`
/// (`flow.state` on arguments and results; `flow.state_init` and
/// `flow.learning_rate` and `flow.index_check` on arguments); std::nullopt
/// for other attributes.
static std::optional<LogicalResult>
verifyTrainingAttr(Operation *op, NamedAttribute attr, StringRef what,
                   unsigned index, TypeRange types, bool argument) {
  // A tensor, or the buffer it becomes in the host schedule.
  auto type = dyn_cast<ShapedType>(types[index]);
  if (attr.getName() == FlowDialect::getStateAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitOpError()
             << "'" << FlowDialect::getStateAttrName() << "' on " << what
             << " #" << index << " must be a non-empty string";
    return success();
  }
  if (!argument)
    return std::nullopt;
  if (attr.getName() == FlowDialect::getStateInitAttrName()) {
    auto init = dyn_cast<StringAttr>(attr.getValue());
    if (!init || init.getValue() != "zeros")
      return op->emitOpError()
             << "'" << FlowDialect::getStateInitAttrName() << "' on " << what
             << " #" << index << " must be \"zeros\"";
    return success();
  }
  if (attr.getName() == FlowDialect::getTiedInputAttrName()) {
    auto input = dyn_cast<IntegerAttr>(attr.getValue());
    auto outputs = op->getAttrOfType<IntegerAttr>(
        FlowDialect::getHostOutputsAttrName());
    int64_t numInputs =
        outputs ? static_cast<int64_t>(types.size()) - outputs.getInt() : 0;
    if (!input || !outputs || (int64_t)index < numInputs ||
        input.getInt() < 0 || input.getInt() >= numInputs ||
        types[input.getInt()] != types[index])
      return op->emitOpError()
             << "'" << FlowDialect::getTiedInputAttrName() << "' on "
             << what << " #" << index
             << " must be on an output buffer of a host schedule and name "
                "an input of its type";
    return success();
  }
  if (attr.getName() == FlowDialect::getLearningRateAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !type || !type.hasStaticShape() ||
        !isa<FloatType>(type.getElementType()) || type.getNumElements() != 1)
      return op->emitOpError()
             << "'" << FlowDialect::getLearningRateAttrName()
             << "' marks a float tensor of one element (unit attribute)";
    return success();
  }
  if (attr.getName() == FlowDialect::getIndexCheckAttrName()) {
    auto check = dyn_cast<DictionaryAttr>(attr.getValue());
    auto bound = check ? check.getAs<IntegerAttr>("bound") : IntegerAttr();
    auto element =
        type ? dyn_cast<IntegerType>(type.getElementType()) : IntegerType();
    bool known =
        check && llvm::all_of(check, [](NamedAttribute entry) {
          return llvm::is_contained({"bound", "lower", "ignore", "what"},
                                    entry.getName().getValue());
        });
    if (!known || !bound || bound.getInt() < 0 ||
        (check.get("ignore") && !check.getAs<IntegerAttr>("ignore")) ||
        (check.get("lower") && !check.getAs<IntegerAttr>("lower")) ||
        (check.get("what") && !check.getAs<StringAttr>("what")) || !element ||
        (element.getWidth() != 32 && element.getWidth() != 64))
      return op->emitOpError()
             << "'" << FlowDialect::getIndexCheckAttrName() << "' on " << what
             << " #" << index
             << " is {bound, lower?, ignore?, what?} (integers and a string) "
                "on an i32 or i64 tensor";
    return success();
  }
  return std::nullopt;
}

/// Verifies a `flow.sbp` attribute on value `index` of `types` (or the
/// `flow.symbolic_type` of a bounded value).
static LogicalResult verifyValueSbp(Operation *op, NamedAttribute attr,
                                    StringRef what, unsigned index,
                                    TypeRange types) {
  if (attr.getName() == FlowDialect::getSymbolicTypeAttrName()) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    if (!type || !isSymbolic(type.getValue()) || index >= types.size())
      return op->emitOpError()
             << "'" << FlowDialect::getSymbolicTypeAttrName() << "' on " << what
             << " #" << index << " must be a symbolic tensor type";
    FailureOr<RankedTensorType> bound =
        upperBoundType(type.getValue(), getSizeSymbols(op));
    auto actual = dyn_cast<ShapedType>(types[index]);
    if (failed(bound) || !actual || !actual.hasRank() ||
        actual.getShape() != bound->getShape() ||
        actual.getElementType() != bound->getElementType())
      return op->emitOpError()
             << what << " #" << index << " has type " << types[index]
             << ", which is not the upper bound of its '"
             << FlowDialect::getSymbolicTypeAttrName() << "' "
             << type.getValue();
    return success();
  }
  if (attr.getName() != FlowDialect::getSbpAttrName())
    return op->emitOpError()
           << "unknown flow attribute '" << attr.getName().getValue() << "' on "
           << what << " #" << index;
  auto sbp = dyn_cast<SbpAttr>(attr.getValue());
  if (!sbp)
    return op->emitOpError()
           << "'" << FlowDialect::getSbpAttrName() << "' on " << what << " #"
           << index << " must be a #flow.sbp attribute";
  FailureOr<MeshOp> mesh = getFunctionMesh(op, what);
  if (failed(mesh))
    return failure();
  if (index >= types.size())
    return op->emitOpError() << what << " #" << index << " does not exist";
  return sbp.verifyFor((*mesh).getShape(), types[index], [&]() {
    return op->emitOpError() << what << " #" << index << ": ";
  });
}

LogicalResult FlowDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (func && attr.getName() == getRequiresGradAttrName()) {
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[argIndex]);
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << getRequiresGradAttrName()
                               << "' is a unit attribute";
    if (!type || !isa<FloatType>(type.getElementType()))
      return op->emitOpError()
             << "argument #" << argIndex << " is marked '"
             << getRequiresGradAttrName() << "' but is a "
             << func.getArgumentTypes()[argIndex]
             << ": only float tensors have gradients";
    return success();
  }
  if (func)
    if (std::optional<LogicalResult> r =
            verifyTrainingAttr(op, attr, "argument", argIndex,
                               func.getArgumentTypes(), /*argument=*/true))
      return *r;
  if (func)
    return verifyValueSbp(op, attr, "argument", argIndex,
                          func.getArgumentTypes());
  return op->emitOpError() << "'" << attr.getName().getValue()
                           << "' is only valid on function arguments";
}

LogicalResult FlowDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (func && attr.getName() == getGradientOfAttrName()) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!index || index.getInt() < 0 ||
        index.getInt() >= static_cast<int64_t>(func.getNumArguments()))
      return op->emitOpError()
             << "'" << getGradientOfAttrName() << "' on result #"
             << resultIndex << " must be the position of an argument";
    return success();
  }
  if (func)
    if (std::optional<LogicalResult> r =
            verifyTrainingAttr(op, attr, "result", resultIndex,
                               func.getResultTypes(), /*argument=*/false))
      return *r;
  if (func)
    return verifyValueSbp(op, attr, "result", resultIndex,
                          func.getResultTypes());
  return op->emitOpError() << "'" << attr.getName().getValue()
                           << "' is only valid on function results";
}
