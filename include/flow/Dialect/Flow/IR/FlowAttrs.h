//===- FlowAttrs.h - Flow attributes ----------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWATTRS_H
#define FLOW_DIALECT_FLOW_IR_FLOWATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TensorEncoding.h"
#include "llvm/ADT/Hashing.h"

#include "flow/Dialect/Flow/IR/FlowEnums.h.inc"

namespace mlir {
namespace flow {

/// How a tensor is laid out along one mesh axis.
enum class SbpKind : uint8_t {
  Split,      ///< S(d): split along tensor dimension d.
  Broadcast,  ///< B: every device holds the whole tensor.
  PartialSum, ///< P / P(sum): the value is the sum over the axis.
  PartialMax, ///< P(max): the value is the maximum over the axis.
};

/// One entry of an nd-SBP: the layout along one mesh axis.
struct SbpDim {
  SbpKind kind = SbpKind::Broadcast;
  /// The split tensor dimension; only meaningful for SbpKind::Split.
  int64_t dim = 0;

  static SbpDim split(int64_t dim) { return {SbpKind::Split, dim}; }
  static SbpDim broadcast() { return {SbpKind::Broadcast, 0}; }
  static SbpDim partialSum() { return {SbpKind::PartialSum, 0}; }
  static SbpDim partialMax() { return {SbpKind::PartialMax, 0}; }

  bool isSplit() const { return kind == SbpKind::Split; }
  bool isBroadcast() const { return kind == SbpKind::Broadcast; }
  bool isPartial() const {
    return kind == SbpKind::PartialSum || kind == SbpKind::PartialMax;
  }

  bool operator==(const SbpDim &other) const {
    return kind == other.kind && (kind != SbpKind::Split || dim == other.dim);
  }
  bool operator!=(const SbpDim &other) const { return !(*this == other); }
};

inline llvm::hash_code hash_value(const SbpDim &d) {
  return llvm::hash_combine(static_cast<uint8_t>(d.kind),
                            d.isSplit() ? d.dim : 0);
}

/// Prints `S(d)`, `B`, `P` or `P(max)`.
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SbpDim &d);

/// An nd-SBP as text: `[S(0), B]` (as `#flow.sbp<...>` writes it inside).
std::string ndSbpText(llvm::ArrayRef<SbpDim> sbp);

} // namespace flow
} // namespace mlir

#define GET_ATTRDEF_CLASSES
#include "flow/Dialect/Flow/IR/FlowAttrs.h.inc"

#endif // FLOW_DIALECT_FLOW_IR_FLOWATTRS_H
