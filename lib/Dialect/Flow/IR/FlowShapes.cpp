//===- FlowShapes.cpp - Extents of Flow tensors ---------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"

#include <set>

using namespace mlir;
using namespace mlir::flow;

Attribute mlir::flow::extentAttr(MLIRContext *context, const Extent &extent) {
  if (extent.isConstant())
    return IntegerAttr::get(IntegerType::get(context, 64), extent.constant());
  return StringAttr::get(context, extent.str());
}

bool mlir::flow::isSymbolic(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa_and_nonnull<ShapeAttr>(tensor.getEncoding());
}

bool mlir::flow::hasFlowShape(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return false;
  if (!tensor.getEncoding())
    return tensor.hasStaticShape();
  // The encoding's own verifier checks it against the shape.
  return isa<ShapeAttr>(tensor.getEncoding());
}

FailureOr<Extents> mlir::flow::getExtents(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return failure();
  auto shape = dyn_cast_or_null<ShapeAttr>(tensor.getEncoding());
  if (shape && shape.getDims().size() != (size_t)tensor.getRank())
    return failure();
  Extents extents;
  for (auto [i, size] : llvm::enumerate(tensor.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      extents.push_back(Extent(size));
      continue;
    }
    auto text = shape ? dyn_cast<StringAttr>(shape.getDims()[i]) : StringAttr();
    Extent extent;
    std::string error;
    if (!text || !Extent::parse(text.str(), extent, error))
      return failure();
    extents.push_back(extent);
  }
  return extents;
}

RankedTensorType mlir::flow::getTensorType(MLIRContext *context,
                                           ArrayRef<Extent> extents,
                                           Type elementType) {
  SmallVector<int64_t> shape;
  SmallVector<Attribute> dims;
  bool symbolic = false;
  for (const Extent &e : extents) {
    symbolic |= !e.isConstant();
    shape.push_back(e.isConstant() ? e.constant() : ShapedType::kDynamic);
    dims.push_back(extentAttr(context, e));
  }
  if (!symbolic)
    return RankedTensorType::get(shape, elementType);
  return RankedTensorType::get(
      shape, elementType,
      ShapeAttr::get(context, ArrayAttr::get(context, dims)));
}

std::string mlir::flow::extentsStr(ArrayRef<Extent> extents) {
  // Static shapes read as they always have (`2x3`, `scalar`).
  if (llvm::all_of(extents, [](const Extent &e) { return e.isConstant(); })) {
    if (extents.empty())
      return "scalar";
    std::string s;
    for (size_t i = 0; i < extents.size(); ++i)
      s += (i ? "x" : "") + extents[i].str();
    return s;
  }
  std::string s = "[";
  for (size_t i = 0; i < extents.size(); ++i)
    s += (i ? ", " : "") + extents[i].str();
  return s + "]";
}

Extent mlir::flow::productOf(ArrayRef<Extent> extents) {
  Extent p(1);
  for (const Extent &e : extents)
    p = p * e;
  return p;
}

FailureOr<Extents>
mlir::flow::broadcastExtents(ArrayRef<Extents> shapes,
                             function_ref<InFlightDiagnostic()> emitError) {
  size_t rank = 0;
  for (const Extents &s : shapes)
    rank = std::max(rank, s.size());
  Extents result(rank, Extent(1));
  for (const Extents &s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      const Extent &d = s[s.size() - 1 - i];
      Extent &r = result[rank - 1 - i];
      if (d == r || d.is(1))
        continue;
      if (r.is(1)) {
        r = d;
        continue;
      }
      if (emitError) {
        InFlightDiagnostic diag = emitError();
        diag << "shapes ";
        llvm::interleave(
            shapes, [&](const Extents &sh) { diag << extentsStr(sh); },
            [&] { diag << ", "; });
        diag << " are not broadcast-compatible (dimension " << -(int64_t)i - 1
             << ": " << r.str() << " vs " << d.str() << ")";
        if (!r.isConstant() || !d.isConstant())
          diag << "; a size symbol is never taken to be 1, so symbolic "
                  "dimensions broadcast only against 1 or the same extent";
      }
      return failure();
    }
  }
  return result;
}

std::vector<std::string> mlir::flow::symbolsOf(Type type) {
  FailureOr<Extents> extents = getExtents(type);
  std::set<std::string> names;
  if (succeeded(extents))
    for (const Extent &e : *extents)
      for (const std::string &name : e.symbols())
        names.insert(name);
  return {names.begin(), names.end()};
}

ArrayAttr mlir::flow::getSizeSymbols(Operation *op) {
  auto func = isa<FunctionOpInterface>(op)
                  ? op
                  : op->getParentOfType<FunctionOpInterface>().getOperation();
  return func ? func->getAttrOfType<ArrayAttr>(FlowDialect::getDimsAttrName())
              : ArrayAttr();
}

FailureOr<std::pair<int64_t, int64_t>>
mlir::flow::extentBounds(const Extent &extent, ArrayAttr dims) {
  auto range = [&](const std::string &name, int64_t &lo, int64_t &hi) {
    if (!dims)
      return false;
    for (Attribute entry : dims) {
      auto dim = dyn_cast<DimAttr>(entry);
      if (dim && dim.getName().getValue() == name) {
        lo = dim.getMin();
        hi = dim.getMax();
        return true;
      }
    }
    return false;
  };
  int64_t lo, hi;
  if (!extent.bounds(range, lo, hi))
    return failure();
  return std::make_pair(lo, hi);
}

FailureOr<RankedTensorType> mlir::flow::upperBoundType(Type type,
                                                       ArrayAttr dims) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return failure();
  if (!isSymbolic(type))
    return tensor;
  FailureOr<Extents> extents = getExtents(type);
  if (failed(extents))
    return failure();
  SmallVector<int64_t> shape;
  for (const Extent &e : *extents) {
    FailureOr<std::pair<int64_t, int64_t>> range = extentBounds(e, dims);
    if (failed(range))
      return failure();
    shape.push_back(range->second);
  }
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// The extent of `type`'s rows when its only symbolic dimension is its row
/// dimension; otherwise failure, with the reason in `why`.
FailureOr<Extent> mlir::flow::rowExtent(Type type, std::string &why) {
  FailureOr<Extents> extents = getExtents(type);
  if (failed(extents)) {
    why = "its #flow.shape cannot be read";
    return failure();
  }
  std::optional<size_t> row;
  for (auto [d, e] : llvm::enumerate(*extents)) {
    if (!row && !e.is(1)) {
      row = d;
      continue;
    }
    if (row && !e.isConstant()) {
      why = "dimension " + std::to_string(d) + " (" + e.str() +
            ") is symbolic and is not the row dimension (dimension " +
            std::to_string(*row) +
            "); only a tensor's rows may vary in size yet";
      return failure();
    }
  }
  if (!row || (*extents)[*row].isConstant()) {
    why = "it has no symbolic dimension";
    return failure();
  }
  return (*extents)[*row];
}
