//===- Device.h - Where an executable runs ----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A Device is the runtime's seam between the host schedule and the hardware:
// it owns memory (allocations, copies to and from the host) and turns a
// verified Executable into something that runs its functions there (an
// executor, internal to the runtime: the CPU device runs kernels on a thread
// pool and GEMMs on the BLAS; the CUDA device loads PTX or cubins through the
// driver API and runs kernels, cuBLASLt and copies on a stream).
//
// openDevice("cpu") always works. openDevice("cuda") / ("cuda:N") loads the
// driver (libcuda.so.1) at run time, so flow-run starts on machines without
// one and a CUDA executable there is an error naming what is missing.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_DEVICE_H
#define FLOW_RUNTIME_DEVICE_H

#include "flow/runtime/Communicator.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace flow {
namespace runtime {

namespace detail {
class Executor;
} // namespace detail

enum class DeviceKind : uint8_t { Cpu, Cuda };

struct DeviceInfo {
  DeviceKind kind = DeviceKind::Cpu;
  /// The device's number among those of its kind.
  int ordinal = 0;
  /// "cpu", or the GPU's name ("NVIDIA H200").
  std::string name;
  /// CUDA: the compute capability as a number (90) and as "sm_90".
  int computeCapability = 0;
  std::string arch;
  /// Memory the device has (bytes; 0 when unknown).
  uint64_t memoryBytes = 0;

  /// "cpu" or "cuda:0 (NVIDIA H200, sm_90, 140 GiB)".
  std::string str() const;
};

class Device;

/// A device allocation, freed when the handle goes.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(Device *device, uint64_t address, uint64_t size)
      : device(device), addr(address), bytes(size) {}
  DeviceMemory(DeviceMemory &&other) noexcept { *this = std::move(other); }
  DeviceMemory &operator=(DeviceMemory &&other) noexcept;
  ~DeviceMemory() { reset(); }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  /// The device address (on the CPU, the host pointer); 0 when empty.
  uint64_t address() const { return addr; }
  uint64_t size() const { return bytes; }
  void reset();

private:
  Device *device = nullptr;
  uint64_t addr = 0;
  uint64_t bytes = 0;
};

class Device {
public:
  virtual ~Device();
  virtual const DeviceInfo &info() const = 0;

  /// \p bytes of device memory, aligned to 256 bytes at least (none for
  /// 0 bytes); \p what names it in the out-of-memory error.
  virtual StatusOr<DeviceMemory> allocate(uint64_t bytes,
                                          const std::string &what) = 0;
  /// Copies between the host and device addresses (complete on return).
  virtual Status copyToDevice(uint64_t dst, const void *src,
                              uint64_t bytes) = 0;
  virtual Status copyToHost(void *dst, uint64_t src, uint64_t bytes) = 0;

  /// Prepares \p exe to run here: an error naming the mismatch when its
  /// target is another kind of device (or its code cannot run on this
  /// one). Internal: Session is the public way to run.
  virtual StatusOr<std::unique_ptr<detail::Executor>>
  createExecutor(std::shared_ptr<const Executable> exe, int threads) = 0;

  /// The group of this device and its peers that the executor's
  /// collectives run on, made from \p host (the processes' group: the same
  /// members in the same order); collective over \p host. Null when the
  /// executor runs collectives on \p host itself (host memory: the CPU).
  /// The CUDA device's is an NCCL group on its stream (device addresses).
  virtual StatusOr<std::unique_ptr<Group>> createGroup(Group &host) {
    (void)host;
    return std::unique_ptr<Group>();
  }

protected:
  friend class DeviceMemory;
  virtual void release(uint64_t address) = 0;
};

/// Opens a device by name: "cpu", "cuda" (the GPU of this process' local
/// MPI rank, modulo the GPUs there are; GPU 0 without MPI) or "cuda:N".
StatusOr<std::shared_ptr<Device>> openDevice(const std::string &name);

/// The device an executable runs on by default: "cpu" or "cuda".
std::string defaultDeviceName(const Executable &exe);

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_DEVICE_H
