//===- FlowAttrs.cpp - Flow attributes ------------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::flow;

#include "flow/Dialect/Flow/IR/FlowEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flow/Dialect/Flow/IR/FlowAttrs.cpp.inc"

void FlowDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flow/Dialect/Flow/IR/FlowAttrs.cpp.inc"
      >();
}

raw_ostream &mlir::flow::operator<<(raw_ostream &os, const SbpDim &d) {
  switch (d.kind) {
  case SbpKind::Split:
    return os << "S(" << d.dim << ")";
  case SbpKind::Broadcast:
    return os << "B";
  case SbpKind::PartialSum:
    return os << "P";
  case SbpKind::PartialMax:
    return os << "P(max)";
  }
  return os;
}

//===----------------------------------------------------------------------===//
// SbpAttr
//===----------------------------------------------------------------------===//

/// Parses one entry: `S(d)`, `B`, `P`, `P(sum)` or `P(max)`.
static ParseResult parseSbpDim(AsmParser &parser, SbpDim &result) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (keyword == "B") {
    result = SbpDim::broadcast();
    return success();
  }
  if (keyword == "S") {
    int64_t dim = 0;
    SMLoc dimLoc;
    if (parser.parseLParen() || parser.getCurrentLocation(&dimLoc) ||
        parser.parseInteger(dim) || parser.parseRParen())
      return failure();
    if (dim < 0)
      return parser.emitError(dimLoc)
             << "split dimension must be non-negative, got " << dim;
    result = SbpDim::split(dim);
    return success();
  }
  if (keyword == "P") {
    result = SbpDim::partialSum();
    if (failed(parser.parseOptionalLParen()))
      return success();
    StringRef reduction;
    SMLoc reductionLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&reduction) || parser.parseRParen())
      return failure();
    if (reduction == "max")
      result = SbpDim::partialMax();
    else if (reduction != "sum")
      return parser.emitError(reductionLoc)
             << "partial reduction must be 'sum' or 'max', got '" << reduction
             << "'";
    return success();
  }
  return parser.emitError(loc)
         << "expected an SBP entry 'S(d)', 'B', 'P' or 'P(max)', got '"
         << keyword << "'";
}

Attribute SbpAttr::parse(AsmParser &parser, Type) {
  SmallVector<SbpDim> dims;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&]() { return parseSbpDim(parser, dims.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  if (dims.empty()) {
    parser.emitError(loc) << "an SBP needs one entry per mesh axis, got none";
    return {};
  }
  return SbpAttr::get(parser.getContext(), dims);
}

std::string mlir::flow::ndSbpText(ArrayRef<SbpDim> sbp) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(sbp, os);
  os << "]";
  return s;
}

void SbpAttr::print(AsmPrinter &printer) const {
  printer << "<" << ndSbpText(getDims()) << ">";
}

LogicalResult
SbpAttr::verifyFor(ArrayRef<int64_t> meshShape, Type type,
                   function_ref<InFlightDiagnostic()> emitError) const {
  ArrayRef<SbpDim> dims = getDims();
  if (dims.size() != meshShape.size())
    return emitError() << "SBP " << *this << " has " << dims.size()
                       << " entries but the mesh has rank " << meshShape.size();
  auto tensorType = dyn_cast<RankedTensorType>(type);
  // Number of pieces each tensor dimension is cut into.
  SmallVector<int64_t> pieces(tensorType ? tensorType.getRank() : 0, 1);
  for (auto [axis, d] : llvm::enumerate(dims)) {
    if (!d.isSplit())
      continue;
    if (!tensorType)
      return emitError() << "SBP " << *this << " splits a value of type "
                         << type << ", which is not a ranked tensor";
    if (d.dim >= tensorType.getRank())
      return emitError() << "SBP " << *this << " splits dimension " << d.dim
                         << " of a rank-" << tensorType.getRank() << " tensor";
    pieces[d.dim] = llvm::checkedMul(pieces[d.dim], meshShape[axis])
                        .value_or(std::numeric_limits<int64_t>::max());
  }
  for (auto [dim, n] : llvm::enumerate(pieces)) {
    int64_t size = tensorType.getDimSize(dim);
    if (n > 1 && !ShapedType::isDynamic(size) && size < n)
      return emitError() << "SBP " << *this << " cuts dimension " << dim
                         << " of size " << size << " into " << n
                         << " pieces; each device needs at least one element";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// DimAttr and ShapeAttr
//===----------------------------------------------------------------------===//

LogicalResult DimAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringAttr name, int64_t min, int64_t max) {
  if (!name || !::flow::rules::isSymbolName(name.str()))
    return emitError() << "a size symbol's name is a letter or '_' followed "
                          "by letters, digits or '_', got \""
                       << (name ? name.getValue() : "") << "\"";
  if (min < 1 || max < min)
    return emitError() << "size symbol '" << name.getValue()
                       << "' needs bounds 1 <= min <= max, got [" << min << ", "
                       << max << "]";
  return success();
}

namespace {
/// MLIR's tokens as rules::parseExtent reads them: #flow.shape's entries
/// are parsed by the one extent grammar.
struct AsmTokens {
  AsmParser &parser;

  bool eat(char c) {
    switch (c) {
    case '+':
      return succeeded(parser.parseOptionalPlus());
    case '-':
      return succeeded(parser.parseOptionalMinus());
    case '*':
      return succeeded(parser.parseOptionalStar());
    case '(':
      return succeeded(parser.parseOptionalLParen());
    case ')':
      return succeeded(parser.parseOptionalRParen());
    default:
      return false;
    }
  }
  int number(int64_t &v) {
    OptionalParseResult result = parser.parseOptionalInteger(v);
    if (!result.has_value())
      return 0;
    return failed(*result) ? -1 : 1;
  }
  bool name(std::string &n) {
    StringRef keyword;
    if (failed(parser.parseOptionalKeyword(&keyword)))
      return false;
    n = keyword.str();
    return true;
  }
  bool expectedFactor() {
    return fail("expected an integer, a size symbol or '('");
  }
  bool fail(const std::string &what) {
    parser.emitError(parser.getCurrentLocation(), what);
    return false;
  }
};
} // namespace

Attribute ShapeAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<Attribute> dims;
  auto parseDim = [&]() -> ParseResult {
    ::flow::rules::Extent extent;
    AsmTokens tokens{parser};
    if (!::flow::rules::parseExtent(tokens, extent))
      return failure();
    dims.push_back(extentAttr(context, extent));
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<ShapeAttr>(loc, context,
                                      ArrayAttr::get(context, dims));
}

void ShapeAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    if (auto number = dyn_cast<IntegerAttr>(dim))
      printer << number.getInt();
    else
      printer << cast<StringAttr>(dim).getValue();
  });
  printer << "]>";
}

LogicalResult ShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayAttr dims) {
  bool symbolic = false;
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (auto number = dyn_cast<IntegerAttr>(dim)) {
      if (number.getInt() < 0)
        return emitError() << "#flow.shape dimension " << i << " is negative ("
                           << number.getInt() << ")";
      continue;
    }
    auto text = dyn_cast<StringAttr>(dim);
    ::flow::rules::Extent extent;
    std::string error;
    if (!text)
      return emitError() << "#flow.shape dimension " << i
                         << " is neither an integer nor an extent";
    if (!::flow::rules::Extent::parse(text.str(), extent, error))
      return emitError() << "#flow.shape dimension " << i << ": " << error;
    if (extent.isConstant() || extent.str() != text.getValue())
      return emitError() << "#flow.shape dimension " << i << " '"
                         << text.getValue()
                         << "' is not in normal form (expected '"
                         << extent.str() << "')";
    symbolic = true;
  }
  if (!symbolic)
    return emitError() << "#flow.shape with no size symbol: give the tensor "
                          "a static type instead";
  return success();
}

LogicalResult
ShapeAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                          function_ref<InFlightDiagnostic()> emitError) const {
  ArrayAttr dims = getDims();
  if (dims.size() != shape.size())
    return emitError() << "#flow.shape has " << dims.size()
                       << " dimensions for a tensor of rank " << shape.size();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    auto number = dyn_cast<IntegerAttr>(dim);
    if (ShapedType::isDynamic(shape[i]) == (bool)number ||
        (number && number.getInt() != shape[i]))
      return emitError() << "#flow.shape dimension " << i << " ("
                         << (number ? std::to_string(number.getInt())
                                    : cast<StringAttr>(dim).str())
                         << ") does not match the tensor's dimension "
                         << (ShapedType::isDynamic(shape[i])
                                 ? std::string("?")
                                 : std::to_string(shape[i]))
                         << ": a static dimension takes its number, a '?' "
                            "one an expression over size symbols";
  }
  return success();
}
