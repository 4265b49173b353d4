//===- FlowAttrs.cpp - Flow attributes ------------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
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
