//===- Cudnn.cpp - cuDNN, loaded at run time ------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "Cudnn.h"
#include "CudaDriver.h"

#include <dlfcn.h>
#include <mutex>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

#define FLOW_CUDNN_STRINGIFY(x) #x
#define FLOW_CUDNN_SYMBOL(x) FLOW_CUDNN_STRINGIFY(x)

Status Cudnn::check(cudnnStatus_t status, const std::string &what) const {
  if (status == CUDNN_STATUS_SUCCESS)
    return Status::ok();
  const char *text = cudnnGetErrorString ? cudnnGetErrorString(status)
                                         : nullptr;
  return Status::error(what + ": " +
                       (text ? text
                             : "cuDNN status " + std::to_string(int(status))));
}

static StatusOr<const Cudnn *> load() {
  static Cudnn dnn;
  StatusOr<void *> handle = openCudaLibrary(
      "FLOW_CUDNN", "libcudnn.so." + std::to_string(CUDNN_MAJOR), dnn.path);
  if (!handle)
    return Status::error("cannot load cuDNN, which runs the convolutions on "
                         "CUDA (" +
                         handle.status().message() +
                         "); install cuDNN or set FLOW_CUDNN to libcudnn.so's "
                         "path");
#define FLOW_CUDNN_LOAD(name)                                                  \
  dnn.name = reinterpret_cast<decltype(dnn.name)>(                             \
      dlsym(*handle, FLOW_CUDNN_SYMBOL(name)));                                \
  if (!dnn.name)                                                               \
    return Status::error(dnn.path + " has no " + FLOW_CUDNN_SYMBOL(name) +     \
                         " (not cuDNN " + std::to_string(CUDNN_MAJOR) + ")");
  FLOW_CUDNN_FUNCTIONS(FLOW_CUDNN_LOAD)
#undef FLOW_CUDNN_LOAD
  return &dnn;
}

StatusOr<const Cudnn *> cuda::loadCudnn() {
  static std::once_flag once;
  static StatusOr<const Cudnn *> loaded = Status::error("cuDNN was not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}
