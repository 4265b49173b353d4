//===- Session.h - Running an executable's functions ------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A Session runs the functions of an Executable on a Device (the CPU, or a
// CUDA GPU): the device's executor owns what the calls share (the CPU's
// thread pool; each function's arena, allocated at the first call and
// reused by the next; constants resident on a GPU). The commands of a
// function run in order: a Dispatch runs a kernel, a Gemm a GEMM on the
// device's library, a Copy copies bytes.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SESSION_H
#define FLOW_RUNTIME_SESSION_H

#include "flow/runtime/Communicator.h"
#include "flow/runtime/Device.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace flow {
namespace runtime {


/// How a Session runs.
struct RuntimeOptions {
  /// CPU: threads for workgroups and BLAS; 0 means one per hardware thread.
  int threads = 0;
  /// For an executable with a mesh: the processes running it, one per
  /// device (rank r is mesh device r). Null: a single process, which runs
  /// only meshes of one device.
  std::shared_ptr<Communicator> communicator;
  /// The device to run on; null: the executable's target's default
  /// (openDevice(defaultDeviceName(exe))).
  std::shared_ptr<Device> device;
};

/// Read-only bytes the caller owns (an input).
struct ConstBuffer {
  const void *data = nullptr;
  size_t size = 0;
};

/// Writable bytes the caller owns (an output).
struct MutableBuffer {
  void *data = nullptr;
  size_t size = 0;
};

/// Checks \p buffer (the value of input check.input, of \p dtype) against
/// \p check: an error names the input, the element, its value, the op and
/// the valid range.
Status checkIndices(const IndexCheck &check, DType dtype,
                    const ConstBuffer &buffer);

/// Runs an executable's functions. run() calls on one Session are serialized
/// (they share the arenas); use one Session per thread to run concurrently.
class Session {
public:
  /// Creates a session over \p executable (shared with its other users).
  static StatusOr<std::unique_ptr<Session>>
  create(std::shared_ptr<const Executable> executable,
         RuntimeOptions options = {});

  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const Executable &executable() const { return *exe; }
  const Device &device() const { return *dev; }

  /// The number of threads workgroups and BLAS run on.
  int threads() const;

  /// Runs \p function on \p inputs, which must match its signature in count,
  /// dtype and shape, and returns its outputs. On a mesh, the name of a
  /// global function runs this device's program: \p inputs are this
  /// device's pieces (its local inputs, as OneFlow's `to_global` takes
  /// them) and the outputs are its pieces of the results.
  StatusOr<std::vector<HostTensor>> run(const std::string &function,
                                        const std::vector<HostTensor> &inputs);

  /// Runs function number \p function on caller-owned memory, without
  /// copies: \p inputs and \p outputs hold one buffer per signature entry, of
  /// exactly its byte size, row-major and aligned to the element size at
  /// least. The caller checks dtypes and shapes (see Executable::functions());
  /// this checks counts and sizes. Outputs must not overlap inputs. A state
  /// written in place (FunctionSignature::state) is copied into its output
  /// first and updated there: the caller's input is never written.
  /// A function with size symbols (FunctionSignature::symbols) takes their
  /// values for this call in \p symbols (bindSymbols() of the inputs'
  /// shapes); its buffers then have the sizes callShape() gives.
  Status run(size_t function, const std::vector<ConstBuffer> &inputs,
             const std::vector<MutableBuffer> &outputs,
             const std::vector<int64_t> *symbols = nullptr);

  /// Resident state. The session keeps one buffer per state name of its
  /// functions (parameters, optimizer moments, the step count); step()
  /// passes them and the function updates them where they lie: no copy
  /// in or out per call. A state starts as zeros where the executable says
  /// so; the others (the parameters) must be set before the first step().
  /// On a mesh each device keeps only its piece of every state (its
  /// function's local input; with ZeRO-style sharded moments, its rows),
  /// while setState() and getState() take and give the whole (global)
  /// tensor: getState() of a split state gathers the pieces, so every
  /// device calls it, in the same order. On a CUDA device the buffers are
  /// host memory copied to the device and back around each call.
  ///
  /// The state names of the functions this device runs, in the order they
  /// first appear.
  std::vector<std::string> stateNames() const;
  /// Sets state \p name (of its global dtype and shape) to a copy of
  /// \p value (on a mesh, of this device's piece of it).
  Status setState(const std::string &name, const HostTensor &value);
  /// A copy of state \p name's current (global) value; zeros-initialized
  /// states read as zeros before the first step.
  StatusOr<HostTensor> getState(const std::string &name);
  /// State \p name's global dtype and shape (what setState() takes).
  StatusOr<TensorSpec> stateType(const std::string &name) const;
  /// The bytes of state this device keeps.
  uint64_t stateBytes() const;
  /// Runs \p function with the session's state: \p inputs are its inputs
  /// that are not state, in order; returns its outputs that are not
  /// written into a state. On a mesh, as runGlobal(): the whole inputs in,
  /// the whole outputs out, on every device.
  StatusOr<std::vector<HostTensor>> step(const std::string &function,
                                         const std::vector<HostTensor> &inputs);

  /// Runs the global function \p function of a mesh executable on this
  /// device: \p inputs are the whole (global) tensors, of which it uses its
  /// pieces, and every device gets the whole outputs back. On executables
  /// without a mesh this is run().
  StatusOr<std::vector<HostTensor>>
  runGlobal(const std::string &function, const std::vector<HostTensor> &inputs);

  /// The bytes each collective of the last run() exchanged on this device,
  /// in program order (as the compile report's `collective_ops` counts
  /// them).
  const std::vector<uint64_t> &collectiveBytes() const {
    return lastCollectiveBytes;
  }

  /// Where the time of the calls made while profiling went: one entry per
  /// command of each function that ran, in program order.
  struct CommandProfile {
    std::string function;
    /// "dispatch", "gemm", "conv", "max_pool", "avg_pool", "copy" or
    /// "collective".
    std::string kind;
    /// The kernel's symbol, a GEMM's shape, ...
    std::string what;
    double seconds = 0;
    uint64_t calls = 0;
  };
  /// Starts (clearing what was recorded) or stops timing every command.
  /// Costs a clock read per command while on.
  void setProfiling(bool on);
  std::vector<CommandProfile> profile() const;

  /// Checks every call for NaN and infinities: each float input, then the
  /// outputs of each command as it finishes. The first one found ends the
  /// call with an error naming the input, or the command and the kernel
  /// (its ops and their source lines) that wrote it, with the element and
  /// its value. Costs a pass over every output; GEMM epilogues then run
  /// after their GEMM instead of with it.
  void setCheckNumerics(bool on) { checkNumerics = on; }

  /// This process' device (mesh rank), 0 without a mesh.
  int64_t rank() const { return deviceRank; }

private:
  Session(std::shared_ptr<const Executable> executable,
          std::shared_ptr<Device> device,
          std::unique_ptr<detail::Executor> executor);

  std::shared_ptr<const Executable> exe;
  std::shared_ptr<Device> dev;
  std::unique_ptr<detail::Executor> executor;
  mutable std::mutex runMutex;
  /// Mesh execution: the communicator, this device's rank and coordinates,
  /// and one group per set of mesh axes a collective runs over.
  std::shared_ptr<Communicator> comm;
  std::vector<uint64_t> lastCollectiveBytes;
  bool profiling = false;
  bool checkNumerics = false;
  /// Per function, per command: seconds and calls while profiling.
  std::vector<std::vector<std::pair<double, uint64_t>>> commandTimes;
  int64_t deviceRank = 0;
  std::vector<int64_t> coords;
  std::map<std::vector<int64_t>, std::unique_ptr<Group>> groups;
  /// The device's own groups for the collectives' axis sets, where it has
  /// them (Device::createGroup: NCCL on CUDA); else they run on `groups`.
  std::map<std::vector<int64_t>, std::unique_ptr<Group>> deviceGroups;
  Status makeGroups();
  StatusOr<std::vector<HostTensor>>
  runGlobalUnchecked(const std::string &function,
                     const std::vector<HostTensor> &inputs);
  StatusOr<Group *> group(const std::vector<int64_t> &axes);
  /// Every mesh axis, in order (the group of all devices).
  std::vector<int64_t> allAxes() const;
  /// An error when \p values (meant to be the same whole tensors in every
  /// process) differ between the processes: a 64-bit digest of each,
  /// gathered from every device. \p names names them ("input 0",
  /// "state 'w'"). Collective; nothing without a mesh.
  Status checkSameOnEveryRank(const std::vector<std::string> &names,
                              const std::vector<const HostTensor *> &values);
  /// checkSameOnEveryRank() of a call's inputs ("input 0", ...).
  Status checkSameInputs(const std::vector<HostTensor> &inputs);
  /// run() after its checks, on buffers where tied states are updated in
  /// place.
  Status runInPlace(size_t function, const std::vector<ConstBuffer> &inputs,
                    const std::vector<MutableBuffer> &outputs,
                    const std::vector<bool> *resident = nullptr,
                    const std::vector<int64_t> *symbols = nullptr);
  /// The resident state, by name (on a mesh, this device's pieces).
  std::map<std::string, HostTensor> stateValues;
  /// On a device with memory of its own (Executor::ownsMemory()), where
  /// each state's current value is: in `stateValues` (`onHost`) and in the
  /// device buffers of these functions' last calls. A step that updates a
  /// state leaves it on the device alone; it is read back only when asked
  /// for (getState) or needed elsewhere. No entry: on the host only.
  struct StateHome {
    bool onHost = true;
    std::vector<size_t> functions;
  };
  std::map<std::string, StateHome> stateHomes;
  /// Makes `stateValues[name]` current (reads it back from the device).
  Status syncState(const std::string &name);
  /// Before a call of \p function with the caller's buffers (run()):
  /// reads back each state only its device buffers hold, which the call
  /// overwrites.
  Status releaseState(size_t function);
  /// Whether this device runs \p sig (a single-device function, or a mesh
  /// function's program for this rank).
  bool runsHere(const FunctionSignature &sig) const;
  /// Where state \p name lives: the first function this device runs that
  /// names it gives its piece and its global placement.
  struct StateSlot {
    TensorSpec local;
    Placement global;
    bool zeros = false;
    bool onMesh = false;
  };
  StatusOr<StateSlot> stateSlot(const std::string &name) const;
  /// This device's piece of \p whole, laid out as \p p (a partial value
  /// lies on each axis' first device, zeros elsewhere).
  HostTensor pieceOf(const Placement &p, const HostTensor &whole) const;
  /// The whole tensor of which \p piece is this device's piece, laid out
  /// as \p p: collectives every device of the mesh runs.
  StatusOr<HostTensor> assemble(const Placement &p, HostTensor piece);
  StatusOr<std::vector<HostTensor>>
  stepUnchecked(const std::string &function,
                const std::vector<HostTensor> &inputs);
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SESSION_H
