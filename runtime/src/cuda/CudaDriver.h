//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The runtime never links libcuda: the driver is opened with dlopen when a
// CUDA device is first asked for, so flow-run starts (and runs CPU
// executables) on machines without an NVIDIA driver, and a CUDA executable
// there fails with an error naming what is missing. The entry points are
// taken by the names cuda.h maps them to (cuMemAlloc -> cuMemAlloc_v2).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_CUDADRIVER_H
#define FLOW_RUNTIME_SRC_CUDA_CUDADRIVER_H

#include "flow/runtime/Status.h"

#include <cuda.h>
#include <string>

namespace flow {
namespace runtime {
namespace cuda {

// X(name): every driver entry point the runtime calls.
#define FLOW_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuMemGetInfo)                                                              \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemHostAlloc)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemcpy2DAsync)                                                           \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamQuery)                                                             \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)

/// The driver's entry points (members named as cuda.h spells them after its
/// macros, e.g. cuMemAlloc_v2).
struct Driver {
#define FLOW_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  FLOW_CUDA_DRIVER_FUNCTIONS(FLOW_CUDA_DECLARE)
#undef FLOW_CUDA_DECLARE

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult result) const;
  /// An error "<what>: <describe(result)>", or ok for CUDA_SUCCESS.
  Status check(CUresult result, const std::string &what) const;
};

/// The driver, loaded and initialized once per process: from
/// $FLOW_CUDA_DRIVER when set, else libcuda.so.1 on the library path. The
/// error says whether the library is missing, is the toolkit's stub (no
/// driver installed), lacks an entry point, or cuInit failed (no GPU).
StatusOr<const Driver *> loadDriver();

/// Opens a CUDA library with dlopen: the path in \p variable if it is set,
/// else \p name on the library path, else in the toolkit's lib64 the
/// runtime was built with. The error lists every attempt's reason.
StatusOr<void *> openCudaLibrary(const char *variable, const std::string &name,
                                 std::string &path);

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_CUDADRIVER_H
