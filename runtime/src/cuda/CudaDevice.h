//===- CudaDevice.h - An NVIDIA GPU as a Flow device ------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA device: one primary context and one stream per GPU. Every copy
// between host and GPU goes through pinned staging buffers on that stream,
// so it is ordered with the kernels, library calls and collectives queued
// around it (CudaDevice.cpp); executables run on it through a
// CudaExecutor (CudaExecutor.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_CUDADEVICE_H
#define FLOW_RUNTIME_SRC_CUDA_CUDADEVICE_H

#include "CudaDriver.h"

#include "flow/runtime/Device.h"

#include <memory>
#include <mutex>

namespace flow {
namespace runtime {
namespace cuda {

class CudaDevice final : public Device {
public:
  static StatusOr<std::shared_ptr<Device>> open(int ordinal);
  ~CudaDevice() override;

  const DeviceInfo &info() const override { return deviceInfo; }
  StatusOr<DeviceMemory> allocate(uint64_t bytes,
                                  const std::string &what) override;
  Status copyToDevice(uint64_t dst, const void *src, uint64_t bytes) override;
  Status copyToHost(void *dst, uint64_t src, uint64_t bytes) override;
  StatusOr<std::unique_ptr<detail::Executor>>
  createExecutor(std::shared_ptr<const Executable> exe, int threads) override;
  StatusOr<std::unique_ptr<Group>> createGroup(Group &host) override;

  /// Makes the device's context current on the calling thread.
  Status enter() const {
    return driver->check(driver->cuCtxSetCurrent(context),
                         "cannot use " + deviceInfo.str());
  }
  /// Makes the context current and waits for the stream's work.
  Status idle() const;
  const Driver &api() const { return *driver; }
  /// The shared memory a block may opt in to (bytes).
  int sharedOptIn() const { return maxSharedOptIn; }
  CUstream queue() const { return stream; }

protected:
  void release(uint64_t address) override {
    // Queued work may still use the memory: wait for it first.
    if (idle())
      driver->cuMemFree(static_cast<CUdeviceptr>(address));
  }

private:
  CudaDevice(const Driver *driver) : driver(driver) {}
  /// Allocates the pinned staging buffers once; false where the driver
  /// gives no pinned memory (copies then go from pageable memory, each
  /// waited for).
  bool haveStaging();

  const Driver *driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  DeviceInfo deviceInfo;
  int maxSharedOptIn = 48 * 1024;
  /// Host copies go through two pinned buffers on the device's stream: a
  /// host-to-device copy fills one while the stream reads the other, and
  /// `done` (recorded after the copy that reads a buffer) says when it is
  /// free again.
  struct Staging {
    void *host = nullptr;
    CUevent done = nullptr;
    bool inUse = false;
  };
  std::mutex copyMutex;
  Staging staging[2];
  unsigned nextStaging = 0;
  bool stagingTried = false, stagingMade = false;
};

/// Bytes of each pinned staging buffer.
constexpr uint64_t kStagingBytes = uint64_t(8) << 20;

/// Loads \p exe (a CUDA executable) onto \p device: its kernels, constants
/// and library plans.
StatusOr<std::unique_ptr<detail::Executor>>
createCudaExecutor(std::shared_ptr<const Executable> exe, CudaDevice &device);

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_CUDADEVICE_H
