//===- CublasLt.cpp - cuBLASLt, loaded at run time ------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"

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
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("FLOW_CUBLASLT"); path && *path) {
    candidates.push_back(path);
  } else {
    std::string name =
        "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    candidates.push_back(name);
#ifdef FLOW_CUDA_LIBRARY_DIR
    candidates.push_back(std::string(FLOW_CUDA_LIBRARY_DIR) + "/" + name);
#endif
  }
  void *handle = nullptr;
  std::string errors;
  for (const std::string &candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      static CublasLt lt;
      lt.path = candidate;
#define FLOW_CUBLASLT_LOAD(name)                                               \
  lt.name = reinterpret_cast<decltype(lt.name)>(                               \
      dlsym(handle, FLOW_CUBLASLT_SYMBOL(name)));                              \
  if (!lt.name)                                                                \
    return Status::error(candidate + " has no " +                              \
                         FLOW_CUBLASLT_SYMBOL(name) + " (not cuBLASLt " +      \
                         std::to_string(CUBLAS_VER_MAJOR) + ")");
      FLOW_CUBLASLT_FUNCTIONS(FLOW_CUBLASLT_LOAD)
#undef FLOW_CUBLASLT_LOAD
      return &lt;
    }
    const char *why = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") +
              (why ? why : candidate + ": not found");
  }
  return Status::error("cannot load cuBLASLt, which runs the GEMMs on CUDA (" +
                       errors +
                       "); install the CUDA toolkit's cuBLAS or set "
                       "FLOW_CUBLASLT to libcublasLt.so's path");
}

StatusOr<const CublasLt *> cuda::loadCublasLt() {
  static std::once_flag once;
  static StatusOr<const CublasLt *> loaded =
      Status::error("cuBLASLt was not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}
