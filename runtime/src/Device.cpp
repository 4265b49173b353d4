//===- Device.cpp - Opening devices ---------------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Device.h"

#include <cstdlib>
#include <cstring>

using namespace flow::runtime;

namespace flow {
namespace runtime {
namespace detail {
std::shared_ptr<Device> createCpuDevice();
#ifdef FLOW_HAVE_CUDA
/// cuda/CudaDevice.cpp: GPU \p ordinal, or -1 for the local rank's.
StatusOr<std::shared_ptr<Device>> createCudaDevice(int ordinal);
#endif
} // namespace detail
} // namespace runtime
} // namespace flow

std::string DeviceInfo::str() const {
  if (kind == DeviceKind::Cpu)
    return name;
  std::string s = "cuda:" + std::to_string(ordinal) + " (" + name;
  if (!arch.empty())
    s += ", " + arch;
  if (memoryBytes)
    s += ", " + std::to_string((memoryBytes + (1ull << 29)) >> 30) + " GiB";
  return s + ")";
}

DeviceMemory &DeviceMemory::operator=(DeviceMemory &&other) noexcept {
  if (this != &other) {
    reset();
    device = other.device;
    addr = other.addr;
    bytes = other.bytes;
    other.device = nullptr;
    other.addr = 0;
    other.bytes = 0;
  }
  return *this;
}

void DeviceMemory::reset() {
  if (device && addr)
    device->release(addr);
  device = nullptr;
  addr = 0;
  bytes = 0;
}

Device::~Device() = default;

StatusOr<std::shared_ptr<Device>> flow::runtime::openDevice(
    const std::string &name) {
  if (name == "cpu")
    return detail::createCpuDevice();
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    int ordinal = -1;
    if (name != "cuda") {
      std::string number = name.substr(5);
      char *end = nullptr;
      long value = std::strtol(number.c_str(), &end, 10);
      if (number.empty() || *end || value < 0 || value > 4096)
        return Status::error("invalid device '" + name +
                             "' (cuda:N names GPU N, from 0)");
      ordinal = static_cast<int>(value);
    }
#ifdef FLOW_HAVE_CUDA
    return detail::createCudaDevice(ordinal);
#else
    (void)ordinal;
    return Status::error("this Flow runtime was built without CUDA support "
                         "(no CUDA toolkit was found when it was built)");
#endif
  }
  return Status::error("unknown device '" + name +
                       "' (devices: cpu, cuda, cuda:N)");
}

std::string flow::runtime::defaultDeviceName(const Executable &exe) {
  return exe.target() == ExecutableTarget::Cuda ? "cuda" : "cpu";
}
