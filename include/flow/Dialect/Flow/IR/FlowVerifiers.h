//===- FlowVerifiers.h - Checks the op verifiers share ----------*- C++ -*-===//
//
// Part of the Flow project.
//
// Shape arithmetic and checks shared by the verifiers of the flow dialect's
// ops (lib/Dialect/Flow/IR) and the host dialect's (lib/Dialect/Host/IR):
// a piece of a split tensor, a pooling window, a collective's group.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_FLOWVERIFIERS_H
#define FLOW_DIALECT_FLOW_IR_FLOWVERIFIERS_H

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <optional>
#include <string>

namespace mlir {
namespace flow {
namespace opsupport {

/// Limit on any size computed from attributes: keeps shape arithmetic far
/// from int64 overflow while allowing every real tensor.
inline constexpr int64_t kMaxSize = int64_t(1) << 48;

/// a * b + c, or nullopt if it overflows or exceeds kMaxSize.
inline std::optional<int64_t> mulAdd(int64_t a, int64_t b, int64_t c) {
  std::optional<int64_t> r = llvm::checkedMulAdd(a, b, c);
  if (!r || *r > kMaxSize || *r < -kMaxSize)
    return std::nullopt;
  return r;
}

/// The product of `dims`, or nullopt on overflow.
inline std::optional<int64_t> product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> r = llvm::checkedMul(n, d);
    if (!r)
      return std::nullopt;
    n = *r;
  }
  return n;
}

/// Formats a shape as `2x3x4` (`scalar` for rank 0) for diagnostics.
inline std::string shapeStr(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string str;
  llvm::raw_string_ostream os(str);
  llvm::interleave(shape, os, "x");
  return str;
}
/// Emits errors for type inference at an optional location.
struct Reporter {
  std::optional<Location> loc;
  InFlightDiagnostic operator()() const { return emitError(*loc); }
  /// A diagnostic builder for helpers that report through one, or null when
  /// inference runs without a location and must stay silent.
  function_ref<InFlightDiagnostic()> emitter() const {
    if (!loc)
      return nullptr;
    return *this;
  }
  /// Reports `args...` and returns failure.
  template <typename... Args> LogicalResult fail(Args &&...args) const {
    if (loc) {
      InFlightDiagnostic diag = emitError(*loc);
      (diag << ... << std::forward<Args>(args));
    }
    return failure();
  }
};

inline RankedTensorType tensorTypeOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Checks that `values` are distinct and in `[0, bound)`.
inline LogicalResult checkAxes(ArrayRef<int64_t> values, int64_t bound,
                               StringRef what, const Reporter &report) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t v : values) {
    if (v < 0 || v >= bound)
      return report.fail(what, " ", v, " is out of range [0, ", bound, ")");
    if (!seen.insert(v).second)
      return report.fail(what, " ", v, " appears more than once");
  }
  return success();
}

/// Checks that `values` has `size` entries, each at least `min`.
inline LogicalResult checkSizes(ArrayRef<int64_t> values, size_t size,
                                int64_t min, StringRef what,
                                const Reporter &report) {
  if (values.size() != size)
    return report.fail(what, " needs ", size, " values, got ", values.size());
  for (int64_t v : values)
    if (v < min)
      return report.fail(what, " must be at least ", min, ", got ", v);
  return success();
}

// Checks shared by the ops of several files.
LogicalResult verifyPiece(Operation *op,
                          std::optional<ArrayRef<int64_t>> offsets,
                          std::optional<ArrayRef<int64_t>> of,
                          ArrayRef<int64_t> shape);
LogicalResult verifySbpPiece(Operation *op, SbpAttr sbp,
                             std::optional<ArrayRef<int64_t>> of,
                             ArrayRef<int64_t> shape);
LogicalResult checkWindow(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                          ArrayRef<int64_t> padding,
                          ArrayRef<int64_t> dilations, const Reporter &report);
FailureOr<std::pair<int64_t, int64_t>>
windowOutputHW(ArrayRef<int64_t> x, ArrayRef<int64_t> kernel,
               ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
               ArrayRef<int64_t> dilations, bool ceilMode,
               const Reporter &report);
LogicalResult verifyPieceOffsets(Operation *op, SbpAttr sbp, SbpAttr within,
                                 ArrayRef<int64_t> of, ShapedType result);
/// `flow.symbols` and `host.symbols`: one value per size symbol of the
/// enclosing function's `flow.dims`.
LogicalResult verifySymbolValues(Operation *op, ShapedType result);
LogicalResult verifyCollective(Operation *op, ArrayRef<int64_t> axes,
                               ArrayRef<std::pair<StringRef, int64_t>> dims);
FailureOr<int64_t> resolveGroup(Operation *op, FlatSymbolRefAttr name,
                                ArrayRef<int64_t> axes,
                                SymbolTableCollection &symbolTable);
LogicalResult verifyPieces(Operation *op, RankedTensorType input,
                           RankedTensorType result,
                           ArrayRef<std::pair<int64_t, int64_t>> gathered,
                           ArrayRef<std::pair<int64_t, int64_t>> scattered);

} // namespace opsupport
} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_FLOWVERIFIERS_H
