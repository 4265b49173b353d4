//===- FlowSbp.h - SBP signatures, validity and boxing costs ----*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The SBP rule set (docs/distributed.md): per-op signatures along one mesh
// axis (SbpOpInterface), their product over an nd mesh filtered by sizes,
// and the cost of boxing a value from one nd-SBP to another.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWSBP_H
#define FLOW_DIALECT_FLOW_IR_FLOWSBP_H

#include "flow/Dialect/Flow/IR/FlowAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace flow {

/// One SBP per operand and per result, along one mesh axis.
struct SbpSignature {
  SmallVector<SbpDim> operands;
  SmallVector<SbpDim> results;
  /// Valid only where every split cuts its dimension into equal pieces (a
  /// reshape that merges or splits its split dimension: the pieces of the
  /// operand and of the result coincide only then).
  bool evenSplits = false;

  bool operator==(const SbpSignature &other) const {
    return operands == other.operands && results == other.results;
  }
};

/// An nd-SBP: one entry per mesh axis.
using NdSbp = SmallVector<SbpDim, 2>;

/// One nd-SBP per operand and per result.
struct NdSbpSignature {
  SmallVector<NdSbp> operands;
  SmallVector<NdSbp> results;
};

/// The all-B nd-SBP of a mesh of rank `rank`.
NdSbp broadcastSbp(unsigned rank);

/// True if `sbp` is valid for a tensor of `type` on `meshShape`: every split
/// dimension exists and is at least as long as the number of pieces it is
/// cut into (splits on several axes nest).
bool isValidSbp(ArrayRef<SbpDim> sbp, RankedTensorType type,
                ArrayRef<int64_t> meshShape);

/// The op's signatures on a mesh of shape `meshShape`: the Cartesian product
/// of its per-axis rules, keeping those valid for every operand and result.
/// The all-B signature is always first.
SmallVector<NdSbpSignature> getNdSbpSignatures(Operation *op,
                                               ArrayRef<int64_t> meshShape);

/// Bytes moved (summed over devices) to turn a value of `type` laid out as
/// `from` into `to`, changing one mesh axis at a time along the cheapest
/// route per axis; infinity when there is no route.
double boxingCost(ArrayRef<SbpDim> from, ArrayRef<SbpDim> to,
                  RankedTensorType type, ArrayRef<int64_t> meshShape);

/// The route from `from` to `to` along one mesh axis: the intermediate
/// SBPs visited, ending with `to` (empty when equal); std::nullopt when
/// there is none.
std::optional<SmallVector<SbpDim>> boxingRoute1D(SbpDim from, SbpDim to,
                                                 int64_t rank);

/// The shape of the piece of a `globalShape` tensor laid out as `sbp` that
/// the device at `coords` holds (uneven splits give the first ranks one
/// more), and the offset of that piece in the global tensor.
void localPiece(ArrayRef<int64_t> globalShape, ArrayRef<SbpDim> sbp,
                ArrayRef<int64_t> meshShape, ArrayRef<int64_t> coords,
                SmallVectorImpl<int64_t> &shape,
                SmallVectorImpl<int64_t> &offset);

/// Attaches the SBP rules to every flow op (called by the dialect).
void registerSbpInterfaceModels(MLIRContext *context);

} // namespace flow
} // namespace mlir

#include "flow/Dialect/Flow/IR/FlowSbpInterface.h.inc"

#endif // FLOW_DIALECT_FLOW_IR_FLOWSBP_H
