//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

#define FLOW_CUDA_STRINGIFY(x) #x
// Expands cuda.h's macro first: "cuMemAlloc_v2", not "cuMemAlloc".
#define FLOW_CUDA_SYMBOL(x) FLOW_CUDA_STRINGIFY(x)

std::string Driver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(int(result));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

Status Driver::check(CUresult result, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return Status::ok();
  return Status::error(what + ": " + describe(result));
}

static StatusOr<const Driver *> load() {
  const char *override = std::getenv("FLOW_CUDA_DRIVER");
  std::string path = override && *override ? override : "libcuda.so.1";
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Status::error("no CUDA driver: cannot load " + path + " (" +
                         (why ? why : "unknown error") +
                         "); install the NVIDIA driver, or run a CPU "
                         "executable (flow-compile --target=cpu)");
  }
  static Driver driver;
#define FLOW_CUDA_LOAD(name)                                                   \
  driver.name = reinterpret_cast<decltype(driver.name)>(                       \
      dlsym(handle, FLOW_CUDA_SYMBOL(name)));                                  \
  if (!driver.name)                                                            \
    return Status::error("the CUDA driver " + path + " has no " +              \
                         FLOW_CUDA_SYMBOL(name) +                              \
                         " (it is older than CUDA 12; update the driver)");
  FLOW_CUDA_DRIVER_FUNCTIONS(FLOW_CUDA_LOAD)
#undef FLOW_CUDA_LOAD
  CUresult init = driver.cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY)
    return Status::error("no CUDA driver: " + path +
                         " is the CUDA toolkit's stub library, not a driver "
                         "(install the NVIDIA driver)");
  if (init == CUDA_ERROR_NO_DEVICE)
    return Status::error("no CUDA GPU: the driver found no device (" +
                         driver.describe(init) + ")");
  if (init != CUDA_SUCCESS)
    return Status::error("the CUDA driver failed to initialize: " +
                         driver.describe(init));
  return &driver;
}

StatusOr<const Driver *> cuda::loadDriver() {
  // Loaded once; the outcome (a driver or an error) is kept.
  static std::once_flag once;
  static StatusOr<const Driver *> loaded =
      Status::error("the CUDA driver was not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

StatusOr<void *> cuda::openCudaLibrary(const char *variable,
                                       const std::string &name,
                                       std::string &path) {
  std::vector<std::string> candidates;
  if (const char *set = std::getenv(variable); set && *set) {
    candidates.push_back(set);
  } else {
    candidates.push_back(name);
#ifdef FLOW_CUDA_LIBRARY_DIR
    candidates.push_back(std::string(FLOW_CUDA_LIBRARY_DIR) + "/" + name);
#endif
  }
  std::string errors;
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = candidate;
      return handle;
    }
    const char *why = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") +
              (why ? why : candidate + ": not found");
  }
  return Status::error(errors);
}
