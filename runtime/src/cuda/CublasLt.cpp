//===- CublasLt.cpp - cuBLASLt, loaded at run time ------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

#define FLOW_CUBLASLT_STRINGIFY(x) #x
#define FLOW_CUBLASLT_SYMBOL(x) FLOW_CUBLASLT_STRINGIFY(x)

Status CublasLt::check(cublasStatus_t status, const std::string &what) const {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  const char *text = cublasLtGetStatusString ? cublasLtGetStatusString(status)
                                             : nullptr;
  return Status::error(what + ": " +
                       (text ? text
                             : "cuBLAS status " + std::to_string(int(status))));
}

static StatusOr<const CublasLt *> load() {
  static CublasLt lt;
  StatusOr<void *> handle = openCudaLibrary(
      "FLOW_CUBLASLT", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
      lt.path);
  if (!handle)
    return Status::error(
        "cannot load cuBLASLt, which runs the GEMMs on CUDA (" +
        handle.status().message() +
        "); install the CUDA toolkit's cuBLAS or set FLOW_CUBLASLT to "
        "libcublasLt.so's path");
#define FLOW_CUBLASLT_LOAD(name)                                               \
  lt.name = reinterpret_cast<decltype(lt.name)>(                               \
      dlsym(*handle, FLOW_CUBLASLT_SYMBOL(name)));                             \
  if (!lt.name)                                                                \
    return Status::error(lt.path + " has no " + FLOW_CUBLASLT_SYMBOL(name) +   \
                         " (not cuBLASLt " +                                   \
                         std::to_string(CUBLAS_VER_MAJOR) + ")");
  FLOW_CUBLASLT_FUNCTIONS(FLOW_CUBLASLT_LOAD)
#undef FLOW_CUBLASLT_LOAD
  return &lt;
}

StatusOr<const CublasLt *> cuda::loadCublasLt() {
  static std::once_flag once;
  static StatusOr<const CublasLt *> loaded =
      Status::error("cuBLASLt was not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}
