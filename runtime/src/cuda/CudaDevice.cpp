//===- CudaDevice.cpp - An NVIDIA GPU as a Flow device --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Opening a GPU (its primary context and a non-blocking stream), its
// memory, and the copies between host and GPU: each goes through one of
// two pinned staging buffers with cuMemcpy*Async on the device's stream, so
// that it is ordered after the work queued before it and before the work
// queued after; a copy to the host returns once the stream has finished
// it.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#ifdef FLOW_HAVE_NCCL
#include "Nccl.h"
#endif

#include "../Executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

namespace {

/// This process' rank among those on its node, as the MPI launchers (and
/// Slurm) give it; -1 when none does.
int localRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char *value = std::getenv(name); value && *value) {
      char *end = nullptr;
      long rank = std::strtol(value, &end, 10);
      if (!*end && rank >= 0 && rank < 1 << 20)
        return static_cast<int>(rank);
    }
  return -1;
}

} // namespace

StatusOr<std::shared_ptr<Device>> CudaDevice::open(int ordinal) {
  StatusOr<const Driver *> loaded = loadDriver();
  if (!loaded)
    return loaded.status();
  const Driver &d = **loaded;
  int count = 0;
  if (Status s = d.check(d.cuDeviceGetCount(&count), "cannot count CUDA GPUs");
      !s)
    return s;
  if (count == 0)
    return Status::error("no CUDA GPU: the driver found no device");
  if (ordinal < 0) {
    int rank = localRank();
    ordinal = rank < 0 ? 0 : rank % count;
  }
  if (ordinal >= count)
    return Status::error("no CUDA GPU " + std::to_string(ordinal) +
                         " (this machine has " + std::to_string(count) + ")");
  std::shared_ptr<CudaDevice> device(new CudaDevice(&d));
  DeviceInfo &info = device->deviceInfo;
  info.kind = DeviceKind::Cuda;
  info.ordinal = ordinal;
  std::string where = "cuda:" + std::to_string(ordinal);
  if (Status s = d.check(d.cuDeviceGet(&device->device, ordinal),
                         "cannot open " + where);
      !s)
    return s;
  char name[256] = {0};
  if (d.cuDeviceGetName(name, sizeof(name) - 1, device->device) == CUDA_SUCCESS)
    info.name = name;
  int major = 0, minor = 0;
  if (Status s =
          d.check(d.cuDeviceGetAttribute(
                      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      device->device),
                  "cannot read " + where + "'s compute capability");
      !s)
    return s;
  if (Status s =
          d.check(d.cuDeviceGetAttribute(
                      &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      device->device),
                  "cannot read " + where + "'s compute capability");
      !s)
    return s;
  info.computeCapability = major * 10 + minor;
  info.arch = "sm_" + std::to_string(info.computeCapability);
  int optIn = 0;
  if (d.cuDeviceGetAttribute(
          &optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
          device->device) == CUDA_SUCCESS &&
      optIn > 0)
    device->maxSharedOptIn = optIn;
  size_t total = 0;
  if (d.cuDeviceTotalMem(&total, device->device) == CUDA_SUCCESS)
    info.memoryBytes = total;
  if (Status s =
          d.check(d.cuDevicePrimaryCtxRetain(&device->context, device->device),
                  "cannot create a context on " + info.str());
      !s)
    return s;
  if (Status s = device->enter(); !s)
    return s;
  if (Status s =
          d.check(d.cuStreamCreate(&device->stream, CU_STREAM_NON_BLOCKING),
                  "cannot create a stream on " + info.str());
      !s)
    return s;
  return std::shared_ptr<Device>(std::move(device));
}

CudaDevice::~CudaDevice() {
  if (context && enter()) {
    if (stream)
      driver->cuStreamSynchronize(stream);
    for (Staging &s : staging) {
      if (s.done)
        driver->cuEventDestroy(s.done);
      if (s.host)
        driver->cuMemFreeHost(s.host);
    }
    if (stream)
      driver->cuStreamDestroy(stream);
    driver->cuDevicePrimaryCtxRelease(device);
  }
}

StatusOr<DeviceMemory> CudaDevice::allocate(uint64_t bytes,
                                            const std::string &what) {
  if (bytes == 0)
    return DeviceMemory();
  if (Status s = enter(); !s)
    return s;
  CUdeviceptr address = 0;
  CUresult result = driver->cuMemAlloc(&address, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    driver->cuMemGetInfo(&free, &total);
    return Status::error("out of device memory allocating " + what + " (" +
                         std::to_string(bytes) + " bytes) on " +
                         deviceInfo.str() + ": " + std::to_string(free) +
                         " bytes free of " + std::to_string(total));
  }
  if (Status s = driver->check(result, "cannot allocate " + what + " (" +
                                           std::to_string(bytes) +
                                           " bytes) on " + deviceInfo.str());
      !s)
    return s;
  return DeviceMemory(this, static_cast<uint64_t>(address), bytes);
}

Status CudaDevice::idle() const {
  if (Status s = enter(); !s)
    return s;
  return driver->check(driver->cuStreamSynchronize(stream),
                       "waiting for " + deviceInfo.str());
}

bool CudaDevice::haveStaging() {
  if (stagingTried)
    return stagingMade;
  stagingTried = true;
  for (Staging &s : staging) {
    if (driver->cuMemHostAlloc(&s.host, kStagingBytes, 0) != CUDA_SUCCESS ||
        driver->cuEventCreate(&s.done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
      return false;
  }
  stagingMade = true;
  return true;
}

Status CudaDevice::copyToDevice(uint64_t dst, const void *src, uint64_t bytes) {
  if (bytes == 0)
    return Status::ok();
  std::lock_guard<std::mutex> lock(copyMutex);
  if (Status s = enter(); !s)
    return s;
  std::string what =
      "copying " + std::to_string(bytes) + " bytes to " + deviceInfo.str();
  // Every copy is ordered on the device's stream, after the work queued
  // before it and before the work queued after.
  if (!haveStaging()) {
    // Pageable memory: the stream reads it at some later point, so wait
    // before handing the caller's buffer back.
    if (Status s = driver->check(
            driver->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), src, bytes,
                                      stream),
            what);
        !s)
      return s;
    return driver->check(driver->cuStreamSynchronize(stream), what);
  }
  const auto *from = static_cast<const unsigned char *>(src);
  for (uint64_t offset = 0; offset < bytes; offset += kStagingBytes) {
    uint64_t n = std::min(kStagingBytes, bytes - offset);
    Staging &s = staging[nextStaging++ % 2];
    // The stream may still be reading this buffer's previous contents.
    if (s.inUse)
      if (Status st = driver->check(driver->cuEventSynchronize(s.done), what);
          !st)
        return st;
    std::memcpy(s.host, from + offset, n);
    if (Status st = driver->check(
            driver->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst + offset),
                                      s.host, n, stream),
            what);
        !st)
      return st;
    if (Status st = driver->check(driver->cuEventRecord(s.done, stream), what);
        !st)
      return st;
    s.inUse = true;
  }
  return Status::ok();
}

Status CudaDevice::copyToHost(void *dst, uint64_t src, uint64_t bytes) {
  if (bytes == 0)
    return Status::ok();
  std::lock_guard<std::mutex> lock(copyMutex);
  if (Status s = enter(); !s)
    return s;
  std::string what =
      "copying " + std::to_string(bytes) + " bytes from " + deviceInfo.str();
  // Read back only once the stream has finished the copy (and everything
  // queued before it).
  if (!haveStaging()) {
    if (Status s = driver->check(
            driver->cuMemcpyDtoHAsync(dst, static_cast<CUdeviceptr>(src), bytes,
                                      stream),
            what);
        !s)
      return s;
    return driver->check(driver->cuStreamSynchronize(stream), what);
  }
  auto *to = static_cast<unsigned char *>(dst);
  for (uint64_t offset = 0; offset < bytes; offset += kStagingBytes) {
    uint64_t n = std::min(kStagingBytes, bytes - offset);
    Staging &s = staging[0];
    if (Status st = driver->check(
            driver->cuMemcpyDtoHAsync(
                s.host, static_cast<CUdeviceptr>(src + offset), n, stream),
            what);
        !st)
      return st;
    if (Status st = driver->check(driver->cuStreamSynchronize(stream), what);
        !st)
      return st;
    std::memcpy(to + offset, s.host, n);
  }
  // The stream is idle: both buffers are free.
  for (Staging &s : staging)
    s.inUse = false;
  return Status::ok();
}

StatusOr<std::unique_ptr<Group>> CudaDevice::createGroup(Group &host) {
#ifdef FLOW_HAVE_NCCL
  if (Status s = enter(); !s)
    return s;
  return createNcclGroup(host, stream);
#else
  (void)host;
  return Status::error("this runtime was built without NCCL's header "
                       "(nccl.h), so the CUDA device runs no collectives");
#endif
}

StatusOr<std::unique_ptr<detail::Executor>>
CudaDevice::createExecutor(std::shared_ptr<const Executable> exe, int threads) {
  (void)threads;
  if (exe->target() != ExecutableTarget::Cuda)
    return detail::wrongTarget(*exe, "CUDA");
  return createCudaExecutor(std::move(exe), *this);
}

namespace flow {
namespace runtime {
namespace detail {
StatusOr<std::shared_ptr<Device>> createCudaDevice(int ordinal) {
  return CudaDevice::open(ordinal);
}
} // namespace detail
} // namespace runtime
} // namespace flow
