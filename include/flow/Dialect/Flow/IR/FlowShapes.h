//===- FlowShapes.h - Extents of Flow tensors -------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A Flow tensor's dimensions as extents (flow/runtime/rules/Extent.h): the
// number of a static dimension, or the polynomial over size symbols its
// `#flow.shape` encoding gives a `?` dimension. Shape rules written on
// extents serve static and symbolic tensors alike.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWSHAPES_H
#define FLOW_DIALECT_FLOW_IR_FLOWSHAPES_H

#include "flow/runtime/rules/Extent.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir {
namespace flow {

using Extent = ::flow::rules::Extent;
using Extents = SmallVector<Extent, 4>;

/// The attribute of one `#flow.shape` entry: an integer for a number, the
/// normal-form text of a symbolic extent.
Attribute extentAttr(MLIRContext *context, const Extent &extent);

/// Whether `type` is a ranked tensor with a `#flow.shape` encoding.
bool isSymbolic(Type type);

/// The extents of a ranked tensor type; failure when a `?` dimension has
/// no `#flow.shape` extent.
FailureOr<Extents> getExtents(Type type);

/// The tensor type with these extents and element type: a static type when
/// every extent is a number, otherwise `?` dimensions with a `#flow.shape`.
RankedTensorType getTensorType(MLIRContext *context, ArrayRef<Extent> extents,
                               Type elementType);

/// `[batch, seq, 768]`; a static shape reads `2x3` (`scalar` for rank 0).
std::string extentsStr(ArrayRef<Extent> extents);

/// The product of `extents` (1 for none).
Extent productOf(ArrayRef<Extent> extents);

/// Broadcasts `shapes` (numpy rules, aligned at the last dimension). A
/// dimension broadcasts when it is the number 1 or the same extent as the
/// others; two different symbolic extents cannot be proven to broadcast, so
/// they are an error (a symbol that may be 1 is not treated as 1).
FailureOr<Extents>
broadcastExtents(ArrayRef<Extents> shapes,
                 function_ref<InFlightDiagnostic()> emitError);

/// The size symbols `type`'s encoding refers to, sorted (none for a static
/// tensor).
std::vector<std::string> symbolsOf(Type type);

/// The `flow.dims` of the function `op` is in (or is): its size symbols and
/// their bounds; null when it declares none.
ArrayAttr getSizeSymbols(Operation *op);
/// The least and greatest value of `extent` over the bounds in `dims` (a
/// `flow.dims` list); failure for a symbol `dims` does not declare.
FailureOr<std::pair<int64_t, int64_t>> extentBounds(const Extent &extent,
                                                    ArrayAttr dims);
/// The extent of `type`'s rows (its first dimension that is not the number
/// 1) when that is its only symbolic dimension: what varies between calls
/// of a program compiled at its upper bounds. Failure otherwise, with the
/// reason in `why`.
FailureOr<Extent> rowExtent(Type type, std::string &why);
/// `type` with every symbolic dimension at its upper bound over `dims` (no
/// encoding); a static type as it is. Failure for a symbol without bounds.
FailureOr<RankedTensorType> upperBoundType(Type type, ArrayAttr dims);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_FLOWSHAPES_H
