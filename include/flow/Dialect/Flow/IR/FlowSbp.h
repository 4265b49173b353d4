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
#include "flow/Dialect/Flow/IR/MeshSpec.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
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
  /// When positive, every split dimension is made of this many equal blocks
  /// a piece must hold whole (a grouped convolution's groups): valid only
  /// where the pieces, over all mesh axes using such a rule, divide it.
  int64_t blocks = 0;
  /// The all-reduces of partial statistics (maxima, sums) the op runs
  /// across this mesh axis itself under this rule (softmax or a norm over a
  /// split axis), and the bytes of each for the whole tensor.
  int statisticsCount = 0;
  double statisticsBytes = 0;

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
  /// The time (seconds, as boxingCost) of the collectives the op runs
  /// itself under this signature: all-reduces of its partial statistics.
  double collectiveCost = 0;
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
/// The all-B signature is always first. Collective costs are priced on
/// `spec`.
SmallVector<NdSbpSignature>
getNdSbpSignatures(Operation *op, ArrayRef<int64_t> meshShape,
                   const MeshSpec &spec = defaultMeshSpec());

/// The time (seconds) to turn a value of `type` laid out as `from` into
/// `to` on a mesh described by `spec`, changing one mesh axis at a time
/// along the cheapest route per axis: per collective step, the bytes each
/// device sends over the axis' bandwidth plus the axis' per-call latency
/// (the groups along an axis run at once); a local step out of B costs one
/// byte's time, so that a whole value is not cut for nothing and gathered
/// again later. Infinity when there is no route.
double boxingCost(ArrayRef<SbpDim> from, ArrayRef<SbpDim> to,
                  RankedTensorType type, ArrayRef<int64_t> meshShape,
                  const MeshSpec &spec = defaultMeshSpec());

/// boxingCost, calling `step` with each step it times (the mesh axis, the
/// step's SBPs on it and its seconds).
double forEachBoxingStep(
    ArrayRef<SbpDim> from, ArrayRef<SbpDim> to, RankedTensorType type,
    ArrayRef<int64_t> meshShape, const MeshSpec &spec,
    function_ref<void(unsigned axis, SbpDim from, SbpDim to, double seconds)>
        step);

/// The collective a boxing step runs (`all_gather`, `all_reduce`,
/// `reduce_scatter`, `all_to_all`), or `local` for the steps out of B.
StringRef boxingStepKind(SbpDim from, SbpDim to);

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

/// Where one device of a mesh sits, for writing an op of a global program as
/// that device's op (SbpOpInterface::partition): the mesh, the device's
/// coordinates, and the nd-SBP of each operand and result of the op.
struct DevicePlace {
  StringRef mesh;
  ArrayRef<int64_t> meshShape;
  ArrayRef<int64_t> coords;
  ArrayRef<NdSbp> operands;
  ArrayRef<NdSbp> results;

  /// The mesh axes whose splits cut dimension `dim` of a value laid out as
  /// `sbp`, in mesh order.
  SmallVector<int64_t> axesSplitting(ArrayRef<SbpDim> sbp, int64_t dim) const;
  /// The length of this device's piece of dimension `dim` of a `global`
  /// tensor laid out as `sbp` (the same on every device a program serves).
  int64_t pieceSize(RankedTensorType global, ArrayRef<SbpDim> sbp,
                    int64_t dim) const;
  /// The offset of that piece, as a 0-d i64 tensor the runtime fills in for
  /// the device running the program (flow.piece_offsets): offsets differ
  /// between devices, programs do not.
  Value pieceOffset(OpBuilder &b, Location loc, RankedTensorType global,
                    ArrayRef<SbpDim> sbp, int64_t dim) const;
};

/// flow.piece_offsets: the offsets of the running device's piece of a
/// tensor of `shape` laid out as `sbp`, within its piece laid out as
/// `within` (not written when `within` splits nothing), filled in by the
/// runtime.
Value createPieceOffsets(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         ArrayRef<SbpDim> sbp, ArrayRef<SbpDim> within = {});

/// The default partition of an op: the same op on the device's pieces, its
/// results typed `resultTypes` (ops whose rules need more implement their
/// own in FlowPartition.cpp).
FailureOr<SmallVector<Value>> partitionOnDevice(Operation *op, OpBuilder &b,
                                                ValueRange operands,
                                                TypeRange resultTypes,
                                                const DevicePlace &place);

/// True if the runtime's collectives can reduce elements of `type` (a
/// partial value must be reduced some day).
bool isReducible(Type type);

/// Attaches the SBP rules to every flow op (called by the dialect).
void registerSbpInterfaceModels(MLIRContext *context);

} // namespace flow
} // namespace mlir

#include "flow/Dialect/Flow/IR/FlowSbpInterface.h.inc"

#endif // FLOW_DIALECT_FLOW_IR_FLOWSBP_H
