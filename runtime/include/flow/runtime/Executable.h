//===- Executable.h - A loaded and verified .fbin executable ----*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// An Executable is a .fbin file (schema: runtime/schema/executable.fbs) that
// has been checked completely and made ready to run: its kernel library is
// loaded, its kernel entry points are resolved and its constants sit in
// 64-byte aligned memory. Loading refuses a file with one error message
// naming what is wrong; a loaded Executable is immutable, so several Sessions
// may share it.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_EXECUTABLE_H
#define FLOW_RUNTIME_EXECUTABLE_H

#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flow {
namespace runtime {

/// The format version this runtime reads.
constexpr uint32_t kExecutableVersion = 16;

/// The largest tensor, arena or constant the runtime accepts (64 GiB): a
/// larger size is taken for a corrupt file rather than attempted.
constexpr uint64_t kMaxBufferBytes = uint64_t(64) << 30;

/// The element type and static shape of a function input or output.
struct TensorSpec {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// For an input or output whose rows vary from call to call: each
  /// dimension's extent over the function's size symbols ("batch", "784");
  /// `shape` is then the largest. Empty for a static tensor.
  std::vector<std::string> extents;

  /// Product of the dimensions (1 for a scalar).
  int64_t numElements() const;
  /// numElements() * dtypeSize(dtype); loading guarantees it fits.
  size_t byteSize() const;
  /// The spec as text, e.g. "f32[8,784]" ("f32[]" for a scalar), with
  /// its extents where it has them ("f32[batch,784]").
  std::string str() const;
};

/// A size symbol of a function: the dimensions of its inputs and outputs
/// that vary from call to call share it, within [min, max].
struct SizeSymbol {
  std::string name;
  int64_t min = 0, max = 0;
};

/// One entry of an nd-SBP: how a global tensor is laid out along one mesh
/// axis (S(dim), B, P(sum) or P(max)).
struct SbpEntry {
  enum Kind { Split, Broadcast, PartialSum, PartialMax } kind = Broadcast;
  int64_t dim = 0;
};

/// A global tensor of a mesh function and its layout.
struct Placement {
  TensorSpec spec;
  std::vector<SbpEntry> sbp;
};

/// A tensor a function reads and updates from call to call (training
/// state): input `input` holds it; with `output` >= 0 the function writes
/// its next value into that input's buffer in place, and output `output`
/// is not written (Session::run copies the input there first and runs on
/// the copy; Session::step runs on the session's own buffer).
struct StateSpec {
  std::string name;
  size_t input = 0;
  int64_t output = -1;
  /// Starts as zeros (else the caller gives its first value).
  bool zeros = false;
};

/// An input that holds indices (of a gather): every element must be in
/// [lower, bound) (lower: 0, or -bound where negative indices count from
/// the end), or equal to `ignore` where given (a loss's ignore_index).
/// Session checks each call's value before it runs.
struct IndexCheck {
  size_t input = 0;
  int64_t lower = 0;
  int64_t bound = 0;
  std::optional<int64_t> ignore;
  /// The op that reads the indices ("flow.gather at model.py:12:0").
  std::string what;
};

/// The signature of one function of an executable.
struct FunctionSignature {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// Bytes of transient memory one call needs.
  uint64_t arenaSize = 0;
  /// For a device program of a mesh function: the devices that run it,
  /// the global function's name and its global inputs and outputs
  /// (`inputs`/`outputs` are this device's pieces). Empty otherwise.
  std::vector<int64_t> ranks;
  std::string globalName;
  std::vector<Placement> globalInputs, globalOutputs;
  /// The state the function reads and updates, by input.
  std::vector<StateSpec> state;
  /// The inputs that hold indices, checked on every call.
  std::vector<IndexCheck> indexChecks;
  /// The size symbols a call binds from its inputs' shapes (empty for a
  /// function of static shapes).
  std::vector<SizeSymbol> symbols;

  /// The input output \p output is written into in place, or -1.
  int64_t tiedInput(size_t output) const;
};

/// The values of \p sig's size symbols in a call whose inputs have shapes
/// \p inputShapes: each input's rank and static dimensions must match, and
/// each symbolic dimension its extent, within the symbols' bounds, the same
/// symbol the same size in every input. An error names the input, the
/// dimension, the symbol, its bounds and the size given.
StatusOr<std::vector<int64_t>>
bindSymbols(const FunctionSignature &sig,
            const std::vector<std::vector<int64_t>> &inputShapes);

/// \p spec's shape in a call whose size symbols have \p values (as
/// bindSymbols() gives them); its static shape when it has no extents.
std::vector<int64_t> callShape(const FunctionSignature &sig,
                               const TensorSpec &spec,
                               const std::vector<int64_t> &values);

/// The shape of the piece of `global` laid out as `sbp` on `mesh` that the
/// device at `coords` holds, and its offset (the first N mod p devices of
/// an axis hold one more element).
void localPiece(const std::vector<int64_t> &global,
                const std::vector<SbpEntry> &sbp,
                const std::vector<int64_t> &mesh,
                const std::vector<int64_t> &coords,
                std::vector<int64_t> &shape, std::vector<int64_t> &offset);

/// The coordinates on `mesh` of device `rank` (row-major: the last axis
/// varies fastest).
std::vector<int64_t> meshCoordinates(const std::vector<int64_t> &mesh,
                                     int64_t rank);

/// The kind of device an executable's kernels were compiled for.
enum class ExecutableTarget : uint8_t { Cpu, Cuda };

/// "cpu" or "cuda".
const char *targetName(ExecutableTarget target);

/// How to find an executable's parameters.
struct LoadOptions {
  /// The safetensors archive to read parameters from instead of the one the
  /// executable names.
  std::string parameterArchive;
  /// The directory a relative archive path is taken from; loadFile uses
  /// the .fbin's directory when this is empty, loadBytes the current one.
  std::string baseDirectory;
  /// An allow-list of trusted executables: a file of SHA-256 digests, one
  /// per line as `sha256sum` prints them (`# comments` and blank lines
  /// allowed). When set (here, or by the FLOW_TRUSTED_EXECUTABLES
  /// environment variable when this is empty), an executable whose digest
  /// is not listed is refused before anything else is read.
  std::string trustedList;
};

/// The environment variable naming the default allow-list.
constexpr const char *kTrustedListVariable = "FLOW_TRUSTED_EXECUTABLES";

/// A verified executable, ready to run with a Session.
class Executable {
public:
  /// Reads and loads the .fbin file at \p path; errors start with the path.
  static StatusOr<std::unique_ptr<Executable>>
  loadFile(const std::string &path, const LoadOptions &options = {});

  /// Loads an executable from the bytes of a .fbin file (copied into 64-byte
  /// aligned memory that the executable keeps).
  static StatusOr<std::unique_ptr<Executable>>
  loadBytes(std::vector<uint8_t> bytes, const LoadOptions &options = {});
  static StatusOr<std::unique_ptr<Executable>>
  loadBytes(const void *data, size_t size, const LoadOptions &options = {});

  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  /// The functions, in file order.
  const std::vector<FunctionSignature> &functions() const;

  /// Binds the parameters the programs of mesh device `rank` read that are
  /// not read by every device (each device's pieces of split weights),
  /// copying each piece out of the archive once. A Session of a mesh
  /// executable calls it for its rank; the other devices' pieces are never
  /// read in this process.
  Status bindRank(int64_t rank) const;

  /// Bytes of parameters bound in this process (pieces, whole weights and
  /// joined ones; those read in place from the mapped archive included).
  size_t boundParameterBytes() const;

  /// The names of the functions, in file order.
  std::vector<std::string> functionNames() const;

  /// The index of the function called \p name, or an error listing the
  /// functions there are.
  StatusOr<size_t> findFunction(const std::string &name) const;

  /// The mesh the executable's mesh functions run on (empty: one device).
  const std::vector<int64_t> &mesh() const;

  /// The function device `rank` runs for the (global) function `name`: a
  /// device program of a mesh function, or `name` itself.
  StatusOr<size_t> findFunction(const std::string &name, int64_t rank) const;

  /// The device kind its kernels run on, and what they were compiled for
  /// (the CPU's name, or the CUDA compute capability as sm_XY; for CUDA
  /// the newest any of its libraries needs).
  ExecutableTarget target() const;
  std::string kernelArch() const;

  /// The number of kernels and constants (for tools and tests).
  size_t numKernels() const;
  size_t numConstants() const;
  /// The number of constants read from the parameter archive, and the
  /// archive's path ("" when there are none).
  size_t numParameters() const;
  std::string parameterArchive() const;

  /// The verified program (src/ExecutableImpl.h), for the runtime's
  /// devices.
  struct Impl;
  const Impl &implementation() const { return *impl; }

private:
  friend class Session;
  explicit Executable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_EXECUTABLE_H
