//===- Cudnn.h - cuDNN, loaded at run time ----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA device's convolutions run on cuDNN's convolution API (NCHW, f32
// with FMA math: no TF32), opened with dlopen when an executable with
// convolution commands is loaded on a CUDA device: $FLOW_CUDNN, else
// libcudnn.so.<major> on the library path or in the toolkit's lib64.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_CUDNN_H
#define FLOW_RUNTIME_SRC_CUDA_CUDNN_H

#include "flow/runtime/Status.h"

#include <cudnn.h>
#include <string>

namespace flow {
namespace runtime {
namespace cuda {

#define FLOW_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnCreateActivationDescriptor)                                           \
  X(cudnnSetActivationDescriptor)                                              \
  X(cudnnDestroyActivationDescriptor)                                          \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnConvolutionBiasActivationForward)                                     \
  X(cudnnAddTensor)

struct Cudnn {
#define FLOW_CUDNN_DECLARE(name) decltype(&::name) name = nullptr;
  FLOW_CUDNN_FUNCTIONS(FLOW_CUDNN_DECLARE)
#undef FLOW_CUDNN_DECLARE
  /// The file it was loaded from.
  std::string path;

  /// An error "<what>: CUDNN_STATUS_..." or ok.
  Status check(cudnnStatus_t status, const std::string &what) const;
};

/// cuDNN, loaded once per process (the outcome is kept).
StatusOr<const Cudnn *> loadCudnn();

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_CUDNN_H
