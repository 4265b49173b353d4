//===- StagedBuffers.h - A call's buffers in a device's memory --*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A device that does not run on host memory (CUDA) runs each call on
// copies of its buffers in its own memory. StagedBuffers holds one
// function's copies and moves a call's data in and out, leaving resident
// state (CallHooks::resident, CallHooks::keepState) where it lies.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_STAGEDBUFFERS_H
#define FLOW_RUNTIME_SRC_STAGEDBUFFERS_H

#include "Executor.h"
#include "flow/runtime/Device.h"

namespace flow {
namespace runtime {
namespace detail {

class StagedBuffers {
public:
  /// Allocates the function's arena, inputs and outputs at its first call
  /// (and again after a call that failed to allocate them).
  Status prepare(Device &device, const FunctionSignature &sig);
  /// Copies the call's inputs in, except those CallHooks::resident says
  /// are already here.
  Status copyIn(Device &device, const std::vector<ConstBuffer> &inputs,
                const CallHooks &hooks);
  /// Copies the outputs to the caller: an output written into its state
  /// input (tied) is read from there, or, with CallHooks::keepState, left
  /// there.
  Status copyOut(Device &device, const FunctionSignature &sig,
                 const std::vector<MutableBuffer> &outputs,
                 const CallHooks &hooks) const;
  /// Reads what input \p input's buffer holds now (a resident state's
  /// value after the function's last call).
  Status readInput(Device &device, size_t input,
                   const MutableBuffer &out) const;

  uint64_t arena() const { return arenaMemory.address(); }
  uint64_t input(size_t i) const { return inputs[i].address(); }
  uint64_t output(size_t i) const { return outputs[i].address(); }

private:
  bool allocated = false;
  DeviceMemory arenaMemory;
  std::vector<DeviceMemory> inputs, outputs;
};

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_STAGEDBUFFERS_H
