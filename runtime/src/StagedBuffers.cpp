//===- StagedBuffers.cpp - A call's buffers in a device's memory ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "StagedBuffers.h"

namespace flow {
namespace runtime {
namespace detail {

Status StagedBuffers::prepare(Device &device, const FunctionSignature &sig) {
  if (allocated)
    return Status::ok();
  // Nothing half-made from a failed first call is kept.
  arenaMemory.reset();
  inputs.clear();
  outputs.clear();
  StatusOr<DeviceMemory> arena =
      device.allocate(sig.arenaSize, "the arena of '" + sig.name + "'");
  if (!arena)
    return arena.status();
  arenaMemory = std::move(*arena);
  auto allocateAll = [&](const std::vector<TensorSpec> &specs,
                         const char *kind,
                         std::vector<DeviceMemory> &out) -> Status {
    for (size_t i = 0; i < specs.size(); ++i) {
      StatusOr<DeviceMemory> memory = device.allocate(
          specs[i].byteSize(), std::string(kind) + " " + std::to_string(i) +
                                   " of '" + sig.name + "'");
      if (!memory)
        return memory.status();
      out.push_back(std::move(*memory));
    }
    return Status::ok();
  };
  if (Status s = allocateAll(sig.inputs, "input", inputs); !s)
    return s;
  if (Status s = allocateAll(sig.outputs, "output", outputs); !s)
    return s;
  allocated = true;
  return Status::ok();
}

Status StagedBuffers::copyIn(Device &device,
                             const std::vector<ConstBuffer> &given,
                             const CallHooks &hooks) {
  for (size_t i = 0; i < given.size(); ++i) {
    if (hooks.resident && (*hooks.resident)[i])
      continue;
    if (Status s = device.copyToDevice(inputs[i].address(), given[i].data,
                                       given[i].size);
        !s)
      return s;
  }
  return Status::ok();
}

Status StagedBuffers::copyOut(Device &device, const FunctionSignature &sig,
                              const std::vector<MutableBuffer> &given,
                              const CallHooks &hooks) const {
  for (size_t i = 0; i < given.size(); ++i) {
    int64_t tied = sig.tiedInput(i);
    if (tied >= 0 && hooks.keepState)
      continue;
    uint64_t from = tied >= 0 ? inputs[tied].address() : outputs[i].address();
    if (Status s = device.copyToHost(given[i].data, from, given[i].size); !s)
      return s;
  }
  return Status::ok();
}

Status StagedBuffers::readInput(Device &device, size_t input,
                                const MutableBuffer &out) const {
  if (!allocated || input >= inputs.size() ||
      inputs[input].size() < out.size)
    return Status::error("no device copy of input " + std::to_string(input) +
                         " to read");
  return device.copyToHost(out.data, inputs[input].address(), out.size);
}

} // namespace detail
} // namespace runtime
} // namespace flow
