//===- ProgramBuilder.h - Building a flow program op by op ------*- C++ -*-===//
//
// Part of the Flow project.
//
// The importers' way into the compiler: a `func.func` of flow ops built one
// operation at a time, by name, with each op's result types inferred by the
// op itself (InferTypeOpInterface), so a shape rule lives once, in the
// dialect. Attributes are written in MLIR's attribute syntax; constants come
// as raw element bytes. Every op is verified as it is built, and a failure
// is returned as a message naming the op, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_FRONTEND_PROGRAMBUILDER_H
#define FLOW_FRONTEND_PROGRAMBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mlir::flow {

/// A tensor type as the importers spell it: dims and an element type name
/// (`f32`, `bf16`, `i64`, `ui8`, `i1`, ...). A symbolic dimension has its
/// extent's text (`batch`, `batch*seq`) in `extents` (which is empty or
/// has one entry per dimension, "" for a static one) and -1 in `shape`.
struct TensorSpec {
  std::vector<int64_t> shape;
  std::string dtype;
  std::vector<std::string> extents = {};
};

class ProgramBuilder {
public:
  /// Starts `func.func @<function>` in a module of its own.
  explicit ProgramBuilder(llvm::StringRef function);
  ~ProgramBuilder();

  /// Each call below returns value handles (indices into this builder's
  /// values) or nullopt, with `error()` saying why.

  /// Appends a function argument.
  std::optional<int64_t> addArgument(const TensorSpec &type);

  /// Builds `name` (for example `flow.add`) on `operands`. `attributes`
  /// are (name, MLIR attribute text) pairs; a Flow enum attribute may be
  /// given by its case name (`predicate` = `eq`). Without `resultTypes` the op
  /// must infer them (InferTypeOpInterface); with them, an op that infers
  /// must agree.
  std::optional<std::vector<int64_t>>
  create(llvm::StringRef name, llvm::ArrayRef<int64_t> operands,
         llvm::ArrayRef<std::pair<std::string, std::string>> attributes,
         std::optional<std::vector<TensorSpec>> resultTypes);

  /// A `flow.constant` of `type` whose elements are the `size` bytes at
  /// `data`, laid out as numpy lays out a C-contiguous array (one byte per
  /// bool).
  std::optional<int64_t> constant(const TensorSpec &type, const void *data,
                                  size_t size);

  /// The type of a value handle.
  std::optional<TensorSpec> typeOf(int64_t value);

  /// Places the function on a new `flow.mesh @mesh` of `shape` (what
  /// `flow.sbp` argument attributes refer to).
  bool setMesh(llvm::ArrayRef<int64_t> shape);

  /// Sets attribute `name` (MLIR attribute text) on function argument
  /// `argument` (`flow.sbp` places an input on the mesh).
  bool setArgumentAttribute(int64_t argument, llvm::StringRef name,
                            llvm::StringRef text);

  /// Sets attribute `name` (MLIR attribute text) on result `result` of
  /// the function, checked against the results `finish` returns
  /// (`flow.state` names the state a result is the next value of).
  bool setResultAttribute(int64_t result, llvm::StringRef name,
                          llvm::StringRef text);

  /// Sets attribute `name` (MLIR attribute text) on the function
  /// (`flow.optimizer` makes it a training step).
  bool setFunctionAttribute(llvm::StringRef name, llvm::StringRef text);

  /// Where the next ops come from: a file and line, or else a name (an
  /// ONNX node); neither clears it.
  void setLocation(llvm::StringRef file, int64_t line, llvm::StringRef name);

  /// Returns `results`, sets the module's `flow.parameters` archive (when
  /// not empty), verifies the module and prints it (locations included).
  std::optional<std::string> finish(llvm::ArrayRef<int64_t> results,
                                    llvm::StringRef archive);

  /// Why the last call failed.
  const std::string &error() const { return lastError; }

private:
  /// Sets `error()` to `message` and any diagnostics since the last call.
  std::nullopt_t fail(const llvm::Twine &message);
  std::optional<RankedTensorType> tensorType(const TensorSpec &spec);
  /// `text` parsed as an attribute; null (and `error()` naming the `what`
  /// attribute `name`) when it is not MLIR attribute syntax.
  Attribute parseAttributeText(llvm::StringRef what, llvm::StringRef name,
                               llvm::StringRef text);
  bool checkHandles(llvm::ArrayRef<int64_t> handles, llvm::StringRef what);
  std::optional<std::vector<int64_t>> insert(OperationState &state);

  std::unique_ptr<MLIRContext> context;
  /// Diagnostics of the current call, in the order they came.
  std::string diagnostics;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  OwningOpRef<ModuleOp> module;
  func::FuncOp function;
  std::vector<Value> values;
  /// Set on the function's arguments when it is finished (its type, and
  /// so its argument count, is known then).
  std::vector<std::tuple<int64_t, StringAttr, Attribute>> argumentAttributes;
  std::vector<std::tuple<int64_t, StringAttr, Attribute>> resultAttributes;
  Location location;
  bool finished = false;
  std::string lastError;
};

} // namespace mlir::flow

#endif // FLOW_FRONTEND_PROGRAMBUILDER_H
