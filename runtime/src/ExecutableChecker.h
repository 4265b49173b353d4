//===- ExecutableChecker.h - Checking and loading .fbin files ---*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The file is untrusted until it is loaded. Loading runs, in order: the
// FlatBuffers verifier (every offset and length inside the file), the format
// version, the checksum over every byte of the file, the semantic checks
// (enums, shapes, every buffer reference inside its buffer, gemm extents,
// unique kernel symbols), the parameter archive, and only then dlopen, symbol
// lookup, and the check of the library's own ABI table (flow/runtime/
// KernelAbi.h) against the metadata. Nothing is run, and no memory is handed
// out, before all of them pass. Each check fails with one message naming the
// function, command and field at fault.
//
// What is not caught: a file forged on purpose (metadata and kernel code
// changed together and the checksum recomputed). A .fbin holds native code,
// to be trusted like a shared library.
//
//
// The loader's parts, private to the runtime:
//   ExecutableChecker.cpp     the header, kernels, constants and functions
//   ExecutableCommands.cpp    each command of a function
//   ExecutableParameters.cpp  binding parameters and a device's pieces
//   ExecutableLoad.cpp        reading the file, the checksum, the allow-list,
//                             loading the kernels, and load() running it all
//   Executable.cpp            the public Executable API
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_EXECUTABLECHECKER_H
#define FLOW_RUNTIME_SRC_EXECUTABLECHECKER_H

#include "ExecutableImpl.h"

#include "flow/runtime/executable_generated.h"
#include "flow/runtime/rules/Extent.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace flow {
namespace runtime {
namespace detail {

namespace fbs = flow::fbs;

/// Checked a * b and a + b on sizes.
inline bool mulOk(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}
inline bool addOk(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

inline std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// FlatBuffers 2 verifies the alignment of a vector's length but not of its
/// elements, which must be aligned to be read (longs and BufferRefs to 8, uints
/// to 4). (The builder does not align empty vectors, which are never read.) The
/// file is 64-byte aligned in memory, so addresses tell.
template <typename T> bool isAligned(const flatbuffers::Vector<T> *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->Data()) % alignof(T) == 0;
}

inline Status misaligned(const std::string &what) {
  return Status::error(what + " is misaligned (the file is corrupt)");
}

/// \p name with bytes outside printable ASCII escaped, for messages.
inline std::string printable(const std::string &name) {
  std::string out;
  for (unsigned char c : name) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char buf[8];
    snprintf(buf, sizeof(buf), "\\x%02x", c);
    out += buf;
  }
  return out;
}

/// The byte sizes of the buffers one function can reference.
struct BufferSizes {
  std::vector<uint64_t> inputs, outputs;
  /// Inputs a state's next value is written into; outputs nothing writes
  /// (their value is written into their input).
  std::vector<bool> writableInputs, tiedOutputs;
  uint64_t arena = 0;
  const std::vector<detail::Constant> *constants = nullptr;
  /// The function's size symbols (their values are the Symbols space).
  std::vector<SizeSymbol> symbols;
};

/// Runs the semantic checks on a file the FlatBuffers verifier accepted, and
/// fills an Executable::Impl from it.
class Checker {
public:
  Checker(const fbs::Executable &file, Executable::Impl &impl,
          const LoadOptions &options)
      : file(file), impl(impl), options(options) {}

  Status verify();

private:
  Status verifyHeader();
  Status verifyKernels();
  Status verifyGpuKernels();
  Status verifyConstants();
  Status verifyFunction(size_t index);
  /// Each wait names an earlier async collective, once; each async
  /// collective is waited for; no command in between writes its input or
  /// touches its output.
  Status verifyWaits(const std::string &ctx,
                     const std::vector<detail::Command> &commands);
  /// The buffers `command` reads and writes.
  void commandBuffers(const detail::Command &command,
                      std::vector<detail::BufferRef> &reads,
                      std::vector<detail::BufferRef> &writes);
  Status loadDeviceOffsets(const fbs::Constant *entry, size_t index,
                           detail::Constant &constant);
  Status verifyTensor(const fbs::TensorType *type, const std::string &what,
                      TensorSpec &spec, uint64_t &bytes);
  /// Reads a function's size symbols into `sizes.symbols` and `sig`.
  Status verifySymbols(const std::string &ctx, const fbs::Function &function,
                       FunctionSignature &sig);
  /// Checks a signature tensor's extents (in `spec`): one per dimension,
  /// over the function's symbols, the upper bound its static size.
  Status verifyExtents(const std::string &what, const TensorSpec &spec);
  /// For a function with size symbols: every library command that reads or
  /// writes an input or output whose rows vary does so for the call's rows
  /// only (its `rows` are that tensor's, and it scales that operand).
  Status verifyRowsUse(const std::string &ctx, const FunctionSignature &sig,
                       const std::vector<detail::Command> &commands);
  /// Reads a command's row extent: over the function's symbols, at most
  /// \p max and exactly \p max at the symbols' upper bounds.
  Status verifyRowExtent(const std::string &ctx,
                         const flatbuffers::String *text, int64_t max,
                         detail::RowExtent &out);
  Status verifyCommand(const std::string &ctx, fbs::Command type,
                       const void *value, detail::Command &out);
  Status verifyDispatch(const std::string &ctx, const fbs::Dispatch &cmd,
                        detail::DispatchCommand &out);
  Status verifyGemm(const std::string &ctx, const fbs::Gemm &cmd,
                    detail::GemmCommand &out);
  Status verifyCopy(const std::string &ctx, const fbs::Copy &cmd,
                    detail::CopyCommand &out);
  Status verifyCollective(const std::string &ctx, const fbs::Collective &cmd,
                          detail::CollectiveCommand &out);
  Status verifyConv(const std::string &ctx, const fbs::Conv &cmd,
                    detail::ConvCommand &out);
  Status verifyAttention(const std::string &ctx, const fbs::Attention &cmd,
                         detail::AttentionCommand &out);
  /// fbs::MaxPool or fbs::AvgPool.
  template <typename Table>
  Status verifyPool(const std::string &ctx, const Table &cmd,
                    detail::PoolCommand &out);
  /// Checks the state table (names unique, inputs and outputs in range and
  /// of one type, each used once) and marks its buffers in `sizes`.
  Status verifyState(
      const std::string &ctx,
      const flatbuffers::Vector<flatbuffers::Offset<fbs::State>> *list,
      FunctionSignature &sig);
  /// Checks the index checks: inputs in range, of an integer type, bounds
  /// not negative.
  Status verifyIndexChecks(
      const std::string &ctx,
      const flatbuffers::Vector<flatbuffers::Offset<fbs::IndexCheck>> *list,
      FunctionSignature &sig);
  Status verifyPlacements(const std::string &ctx,
                          const flatbuffers::Vector<
                              flatbuffers::Offset<fbs::Placement>> *list,
                          std::vector<Placement> &out);
  /// Checks a command's input and output refs (verifyRef) and that they
  /// hold \p inBytes and \p outBytes.
  Status verifyInOut(const std::string &ctx, const fbs::BufferRef *input,
                     const fbs::BufferRef *output, uint64_t inBytes,
                     uint64_t outBytes, detail::BufferRef &in,
                     detail::BufferRef &out);
  /// Checks that \p ref lies inside its buffer; \p writable refs must not be
  /// in the input or constant space.
  Status verifyRef(const std::string &ctx, const std::string &what,
                   const fbs::BufferRef *ref, bool writable,
                   detail::BufferRef &out);
  Status bindParameters();
  Status loadParameterConcat(const fbs::Constant *entry, size_t index,
                             detail::Constant &constant);
  Status loadKernels();
  /// Each kernel's name and metadata (Impl::kernelNames, kernelMeta).
  Status readKernelMeta(const fbs::Kernel &kernel, const std::string &ctx);
  Status loadKernelMeta();

  const fbs::Executable &file;
  Executable::Impl &impl;
  const LoadOptions &options;
  /// The buffers of the function being verified.
  BufferSizes sizes;
};

/// \p extent (over \p symbols, each of which it names) by symbol position,
/// at most \p max.
RowExtent rowExtentOf(const ::flow::rules::Extent &extent,
                      const std::vector<SizeSymbol> &symbols, int64_t max);

/// Reads the file at \p path into aligned memory.
Status readFile(const std::string &path, AlignedBuffer &out);

/// Verifies the file held in \p file and builds the executable.
StatusOr<std::unique_ptr<Executable::Impl>> load(AlignedBuffer file,
                                                 const LoadOptions &options);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_EXECUTABLECHECKER_H
