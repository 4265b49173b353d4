//===- ProgramBuilder.cpp - Building a flow program op by op --------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Frontend/ProgramBuilder.h"

#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Support/ParseGuard.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstring>

using namespace mlir;
using namespace mlir::flow;

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// `AttrT` for the case of its enum spelled \p text, or null.
template <typename AttrT>
Attribute enumAttr(MLIRContext *context, llvm::StringRef text) {
  using Enum = decltype(std::declval<AttrT>().getValue());
  if (std::optional<Enum> c = symbolizeEnum<Enum>(text))
    return AttrT::get(context, *c);
  return {};
}

/// A Flow enum attribute spelled by its case name (`predicate` = `eq`,
/// `approximate` = `tanh`, `reduction` = `add`, `kind` = `sum`), or null.
Attribute enumCase(MLIRContext *context, llvm::StringRef key,
                   llvm::StringRef text) {
  if (key == "predicate")
    return enumAttr<ComparePredicateAttr>(context, text);
  if (key == "approximate")
    return enumAttr<GeluApproximationAttr>(context, text);
  if (key == "reduction")
    return enumAttr<ScatterReductionAttr>(context, text);
  if (key == "kind")
    return enumAttr<ReductionKindAttr>(context, text);
  return {};
}

} // namespace

ProgramBuilder::ProgramBuilder(llvm::StringRef name)
    : context(std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED)),
      location(UnknownLoc::get(context.get())) {
  context->loadDialect<FlowDialect, func::FuncDialect>();
  handler = std::make_unique<ScopedDiagnosticHandler>(
      context.get(), [this](Diagnostic &diagnostic) {
        if (!diagnostics.empty())
          diagnostics += "; ";
        diagnostics += diagnostic.str();
        for (const Diagnostic &note : diagnostic.getNotes())
          if (!llvm::StringRef(note.str()).starts_with("see current operation"))
            diagnostics += " (" + note.str() + ")";
        return success();
      });
  module = ModuleOp::create(location);
  OpBuilder builder(module->getBodyRegion());
  function = func::FuncOp::create(builder, location, name,
                                  builder.getFunctionType({}, {}));
  function.addEntryBlock();
}

ProgramBuilder::~ProgramBuilder() = default;

std::nullopt_t ProgramBuilder::fail(const llvm::Twine &message) {
  lastError = message.str();
  if (!diagnostics.empty())
    lastError += ": " + diagnostics;
  diagnostics.clear();
  return std::nullopt;
}

std::optional<RankedTensorType>
ProgramBuilder::tensorType(const TensorSpec &spec) {
  size_t numRead = 0;
  Type element = parseType(spec.dtype, context.get(), &numRead);
  if (!element || numRead != spec.dtype.size() ||
      !isFlowElementType(element)) {
    diagnostics.clear();
    return fail("'" + spec.dtype + "' is not an element type Flow computes in");
  }
  if (!spec.extents.empty() && spec.extents.size() != spec.shape.size())
    return fail("a shape's extents need one entry per dimension");
  int64_t elements = 1;
  Extents extents;
  for (auto [i, d] : llvm::enumerate(spec.shape)) {
    if (!spec.extents.empty() && !spec.extents[i].empty()) {
      Extent extent;
      std::string error;
      if (!Extent::parse(spec.extents[i], extent, error))
        return fail("dimension " + llvm::Twine(i) + ": " + error);
      extents.push_back(extent);
      continue;
    }
    if (d < 0)
      return fail("negative dimension " + llvm::Twine(d) + " in a shape");
    if (d && elements > (int64_t(1) << 56) / d)
      return fail("a shape of more than 2^56 elements");
    elements *= d;
    extents.push_back(Extent(d));
  }
  return getTensorType(context.get(), extents, element);
}

bool ProgramBuilder::checkHandles(llvm::ArrayRef<int64_t> handles,
                                  llvm::StringRef what) {
  for (int64_t h : handles)
    if (h < 0 || h >= static_cast<int64_t>(values.size())) {
      fail(what + ": no value " + llvm::Twine(h) + " in this program");
      return false;
    }
  return true;
}

std::optional<int64_t> ProgramBuilder::addArgument(const TensorSpec &spec) {
  diagnostics.clear();
  if (finished)
    return fail("the program is finished");
  std::optional<RankedTensorType> type = tensorType(spec);
  if (!type)
    return std::nullopt;
  values.push_back(function.front().addArgument(*type, location));
  return static_cast<int64_t>(values.size()) - 1;
}

std::optional<std::vector<int64_t>>
ProgramBuilder::insert(OperationState &state) {
  OpBuilder builder = OpBuilder::atBlockEnd(&function.front());
  Operation *op = builder.create(state);
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return fail(state.name.getStringRef() + " is not valid");
  }
  std::vector<int64_t> handles;
  for (Value result : op->getResults()) {
    values.push_back(result);
    handles.push_back(static_cast<int64_t>(values.size()) - 1);
  }
  return handles;
}

std::optional<std::vector<int64_t>> ProgramBuilder::create(
    llvm::StringRef name, llvm::ArrayRef<int64_t> operands,
    llvm::ArrayRef<std::pair<std::string, std::string>> attributes,
    std::optional<std::vector<TensorSpec>> resultTypes) {
  diagnostics.clear();
  if (finished)
    return fail("the program is finished");
  if (!checkHandles(operands, name))
    return std::nullopt;
  std::optional<RegisteredOperationName> opName =
      RegisteredOperationName::lookup(name, context.get());
  if (!opName)
    return fail("'" + name + "' is not an op Flow knows");

  NamedAttrList attrs;
  for (const auto &[key, text] : attributes) {
    // Text the MLIR parser is known to crash on is refused first.
    if (std::optional<ParserHazard> hazard = findParserHazard(text))
      return fail(name + ": attribute '" + key + "': " + hazard->message);
    Attribute attr = enumCase(context.get(), key, text);
    size_t numRead = text.size();
    if (!attr)
      attr = parseAttribute(text, context.get(), Type(), &numRead);
    if (!attr || numRead != text.size())
      return fail(name + ": attribute '" + key + "' = '" + text +
                  "' is not MLIR attribute syntax");
    attrs.set(key, attr);
  }
  SmallVector<Value> operandValues;
  for (int64_t h : operands)
    operandValues.push_back(values[h]);

  SmallVector<Type> types;
  if (resultTypes) {
    for (const TensorSpec &spec : *resultTypes) {
      std::optional<RankedTensorType> type = tensorType(spec);
      if (!type)
        return fail(name + ": result type: " + lastError);
      types.push_back(*type);
    }
  } else {
    auto *infer = opName->getInterface<InferTypeOpInterface>();
    if (!infer)
      return fail(name + " does not infer its result types; give them");
    // The op reads its inherent attributes from properties: build them
    // from the dictionary, as creating the op will.
    DictionaryAttr dictionary = attrs.getDictionary(context.get());
    int size = opName->getOpPropertyByteSize();
    std::vector<std::max_align_t> storage(
        (size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
    OpaqueProperties properties(size ? storage.data() : nullptr);
    if (size)
      opName->initOpProperties(properties, OpaqueProperties(nullptr));
    llvm::scope_exit destroy([&] {
      if (size)
        opName->destroyOpProperties(properties);
    });
    if (size && failed(opName->setOpPropertiesFromAttribute(
                    *opName, properties, dictionary,
                    [&] { return emitError(location); })))
      return fail(name + ": bad attributes");
    if (failed(infer->inferReturnTypes(context.get(), location, operandValues,
                                       dictionary, properties, RegionRange(),
                                       types)))
      return fail(name + " cannot take these operands");
  }
  OperationState state(location, *opName);
  state.addOperands(operandValues);
  state.addAttributes(attrs);
  state.addTypes(types);
  return insert(state);
}

std::optional<int64_t> ProgramBuilder::constant(const TensorSpec &spec,
                                                const void *data,
                                                size_t size) {
  diagnostics.clear();
  if (finished)
    return fail("the program is finished");
  std::optional<RankedTensorType> type = tensorType(spec);
  if (!type)
    return fail("flow.constant: " + lastError);
  int64_t count = type->getNumElements();
  Type element = type->getElementType();
  size_t width = static_cast<size_t>(elementStorageBytes(element));
  if (size != static_cast<size_t>(count) * width)
    return fail("flow.constant: " + llvm::Twine(size) + " bytes for " +
                llvm::Twine(count) + " elements of " + spec.dtype);
  const char *bytes = static_cast<const char *>(data);
  // One element's bytes spell a splat.
  bool splat = count > 0;
  for (int64_t i = 1; splat && i < count; ++i)
    splat = std::memcmp(bytes, bytes + i * width, width) == 0;
  size_t used = splat ? width : size;
  DenseElementsAttr value;
  if (element.isInteger(1)) {
    SmallVector<bool> bits;
    for (size_t i = 0; i < used; ++i)
      bits.push_back(bytes[i] != 0);
    value = DenseElementsAttr::get(*type, bits);
  } else {
    value = DenseElementsAttr::getFromRawBuffer(
        *type, llvm::ArrayRef<char>(bytes, used));
  }
  OperationState state(location, ConstantOp::getOperationName());
  state.addAttribute("value", value);
  state.addTypes(*type);
  std::optional<std::vector<int64_t>> handles = insert(state);
  if (!handles)
    return std::nullopt;
  return handles->front();
}

bool ProgramBuilder::setMesh(llvm::ArrayRef<int64_t> shape) {
  diagnostics.clear();
  if (function->hasAttr(FlowDialect::getMeshAttrName())) {
    fail("the function is already on a mesh");
    return false;
  }
  if (shape.empty() || llvm::any_of(shape, [](int64_t d) { return d < 1; })) {
    fail("a mesh needs one or more axes of at least one device");
    return false;
  }
  OpBuilder builder = OpBuilder::atBlockBegin(module->getBody());
  MeshOp::create(builder, location, "mesh", shape);
  function->setAttr(FlowDialect::getMeshAttrName(),
                    FlatSymbolRefAttr::get(context.get(), "mesh"));
  return true;
}

Attribute ProgramBuilder::parseAttributeText(llvm::StringRef what,
                                             llvm::StringRef name,
                                             llvm::StringRef text) {
  if (std::optional<ParserHazard> hazard = findParserHazard(text)) {
    fail(what + " attribute '" + name + "': " + hazard->message);
    return {};
  }
  size_t numRead = 0;
  Attribute attr = parseAttribute(text, context.get(), Type(), &numRead);
  if (!attr || numRead != text.size()) {
    fail(what + " attribute '" + name + "' = '" + text +
         "' is not MLIR attribute syntax");
    return {};
  }
  return attr;
}

bool ProgramBuilder::setArgumentAttribute(int64_t argument,
                                          llvm::StringRef name,
                                          llvm::StringRef text) {
  diagnostics.clear();
  if (argument < 0 ||
      argument >= static_cast<int64_t>(function.front().getNumArguments())) {
    fail("the function has no argument " + llvm::Twine(argument));
    return false;
  }
  Attribute attr = parseAttributeText("argument", name, text);
  if (!attr)
    return false;
  argumentAttributes.push_back(
      {argument, StringAttr::get(context.get(), name), attr});
  return true;
}

bool ProgramBuilder::setResultAttribute(int64_t result, llvm::StringRef name,
                                        llvm::StringRef text) {
  diagnostics.clear();
  if (result < 0) {
    fail("the function has no result " + llvm::Twine(result));
    return false;
  }
  Attribute attr = parseAttributeText("result", name, text);
  if (!attr)
    return false;
  resultAttributes.push_back(
      {result, StringAttr::get(context.get(), name), attr});
  return true;
}

bool ProgramBuilder::setFunctionAttribute(llvm::StringRef name,
                                          llvm::StringRef text) {
  diagnostics.clear();
  Attribute attr = parseAttributeText("function", name, text);
  if (!attr)
    return false;
  function->setAttr(name, attr);
  return true;
}

std::optional<TensorSpec> ProgramBuilder::typeOf(int64_t value) {
  diagnostics.clear();
  if (!checkHandles(value, "type"))
    return std::nullopt;
  auto type = cast<RankedTensorType>(values[value].getType());
  TensorSpec spec{
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
      typeText(type.getElementType())};
  if (isSymbolic(type)) {
    Extents extents = *getExtents(type);
    for (const Extent &e : extents)
      spec.extents.push_back(e.isConstant() ? "" : e.str());
    for (int64_t &d : spec.shape)
      d = ShapedType::isDynamic(d) ? -1 : d;
  }
  return spec;
}

void ProgramBuilder::setLocation(llvm::StringRef file, int64_t line,
                                 llvm::StringRef name) {
  if (!file.empty() && line > 0)
    location = FileLineColLoc::get(context.get(), file, line, 0);
  else if (!name.empty())
    location = NameLoc::get(StringAttr::get(context.get(), name));
  else
    location = UnknownLoc::get(context.get());
}

std::optional<std::string>
ProgramBuilder::finish(llvm::ArrayRef<int64_t> results,
                       llvm::StringRef archive) {
  diagnostics.clear();
  if (finished)
    return fail("the program is finished");
  if (!checkHandles(results, "return"))
    return std::nullopt;
  for (const auto &entry : resultAttributes)
    if (std::get<0>(entry) >= static_cast<int64_t>(results.size()))
      return fail("an attribute is set on result " +
                  llvm::Twine(std::get<0>(entry)) + " of a function of " +
                  llvm::Twine(results.size()) + " results");
  SmallVector<Value> resultValues;
  for (int64_t h : results)
    resultValues.push_back(values[h]);
  OpBuilder builder = OpBuilder::atBlockEnd(&function.front());
  func::ReturnOp::create(builder, UnknownLoc::get(context.get()),
                         resultValues);
  function.setFunctionType(builder.getFunctionType(
      function.front().getArgumentTypes(), ValueRange(resultValues).getTypes()));
  for (const auto &[argument, name, attr] : argumentAttributes)
    function.setArgAttr(argument, name, attr);
  for (const auto &[result, name, attr] : resultAttributes)
    function.setResultAttr(result, name, attr);
  if (!archive.empty())
    (*module)->setAttr("flow.parameters", builder.getStringAttr(archive));
  finished = true;
  if (failed(verify(*module)))
    return fail("the program is not valid");
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo().useLocalScope());
  return text;
}
