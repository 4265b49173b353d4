//===- CublasLt.h - cuBLASLt, loaded at run time ----------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Like the driver, cuBLASLt is opened with dlopen when an executable with
// GEMM commands is loaded on a CUDA device: $FLOW_CUBLASLT, else
// libcublasLt.so.<major> of the toolkit the runtime was built with, on the
// library path or in the toolkit's lib64.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_CUBLASLT_H
#define FLOW_RUNTIME_SRC_CUDA_CUBLASLT_H

#include "flow/runtime/Status.h"

#include <cublasLt.h>
#include <string>

namespace flow {
namespace runtime {
namespace cuda {

#define FLOW_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

struct CublasLt {
#define FLOW_CUBLASLT_DECLARE(name) decltype(&::name) name = nullptr;
  FLOW_CUBLASLT_FUNCTIONS(FLOW_CUBLASLT_DECLARE)
#undef FLOW_CUBLASLT_DECLARE
  /// The file it was loaded from.
  std::string path;

  /// An error "<what>: CUBLAS_STATUS_..." or ok.
  Status check(cublasStatus_t status, const std::string &what) const;
};

/// cuBLASLt, loaded once per process (the outcome is kept).
StatusOr<const CublasLt *> loadCublasLt();

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_CUBLASLT_H
