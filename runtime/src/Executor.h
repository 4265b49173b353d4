//===- Executor.h - A device's way of running functions ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Session checks a call (counts, sizes, NaNs in the inputs) and hands it to
// its device's executor, which runs the function's commands. Executors are
// made by Device::createExecutor.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_EXECUTOR_H
#define FLOW_RUNTIME_SRC_EXECUTOR_H

#include "ExecutableImpl.h"
#include "flow/runtime/Session.h"
#include "flow/runtime/TrainingState.h"

#include <functional>
#include <optional>

namespace flow {
namespace runtime {
namespace detail {

/// What a call asks of the executor besides its buffers.
struct CallHooks {
  /// Profiling: seconds and calls per command (sized to the function's
  /// commands), or null.
  std::vector<std::pair<double, uint64_t>> *times = nullptr;
  bool checkNumerics = false;
  /// The bytes each collective exchanged, appended in program order.
  std::vector<uint64_t> *collectiveBytes = nullptr;
  /// The group a collective over these mesh axes runs on: the device's own
  /// (Device::createGroup; device addresses on CUDA) or the processes'.
  std::function<StatusOr<Group *>(const std::vector<int64_t> &)> group;
  /// Resident state, for an executor that runs on copies in its device's
  /// memory (Executor::ownsMemory()): per input, whether its copy from this
  /// function's last call still holds the value (it is not copied in).
  const std::vector<bool> *resident = nullptr;
  /// Outputs written into their state input stay there: they are not
  /// copied to the caller (Executor::readInput() reads them).
  bool keepState = false;
  /// The call's values of the function's size symbols (bindSymbols()), or
  /// null for a function without them.
  const std::vector<int64_t> *symbols = nullptr;
};

class Executor {
public:
  virtual ~Executor() = default;
  /// Host threads running kernels and libraries.
  virtual int threads() const = 0;
  /// Runs function \p function (buffers checked by the caller).
  virtual Status run(size_t function, const std::vector<ConstBuffer> &inputs,
                     const std::vector<MutableBuffer> &outputs,
                     const CallHooks &hooks) = 0;
  /// Whether calls run on copies of their buffers in the device's own
  /// memory (CUDA): the session then keeps its state there between steps.
  virtual bool ownsMemory() const { return false; }
  /// What the device's copy of input \p input of \p function holds now
  /// (a resident state's value after the function's last call).
  virtual Status readInput(size_t function, size_t input,
                           const MutableBuffer &out) {
    (void)function;
    (void)input;
    (void)out;
    return Status::error("this device runs on the caller's buffers");
  }
  /// The library kernel \p command runs on, for profiles ("" when none).
  virtual std::string libraryKernel(const Command &command) const {
    (void)command;
    return "";
  }
};

using flow::runtime::firstNonFinite;

/// For profiles and messages: "dispatch", "gemm", "conv", ... and what it
/// computes ("1 x 4x256x784", "conv 1x64x56x56 * 256x64x1x1, relu").
void describeCommand(const Executable::Impl &impl, const Command &command,
                     std::string &kind, std::string &what);

/// The error for \p exe given to a device of another kind.
Status wrongTarget(const Executable &exe, const char *deviceKind);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_EXECUTOR_H
