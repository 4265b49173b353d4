//===- CudaHost.h - The CUDA device's host-side logic -----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// What the CUDA device decides on the host, kept apart from the driver so
// that it is unit-tested on machines without a GPU: which kernel library a
// device loads, where each buffer of a call lives, how a dispatch's
// arguments are packed for cuLaunchKernel, and how a row-major GEMM command
// becomes a column-major cuBLASLt matmul.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_CUDAHOST_H
#define FLOW_RUNTIME_SRC_CUDA_CUDAHOST_H

#include "../ExecutableImpl.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flow {
namespace runtime {
namespace cuda {

/// The library a device of compute capability \p deviceCC (90 for sm_90)
/// loads: a cubin built for it (or for an older minor of its major, which
/// runs there; an "a" cubin only on its own), else a PTX for it or an older
/// one (the driver compiles it). The error names what the libraries were
/// built for and what to pass --gpu-arch.
StatusOr<size_t> chooseLibrary(const std::vector<detail::GpuLibrary> &libraries,
                               int deviceCC, const std::string &deviceName);

/// The PTX library a device of compute capability \p deviceCC falls back
/// to when the driver refuses the cubin chooseLibrary picked (a cubin from
/// a toolkit newer than the driver): the closest PTX for it or an older
/// compute capability, or none.
std::optional<size_t>
chooseFallbackPtx(const std::vector<detail::GpuLibrary> &libraries,
                  int deviceCC);

/// The PTX ISA version a PTX library declares (`.version 7.8` is 78), or 0
/// when it declares none.
int ptxIsaVersion(const detail::GpuLibrary &library);

/// The first CUDA version whose driver compiles PTX ISA \p isa, as
/// cuDriverGetVersion spells it (12040 for CUDA 12.4); 0 for an ISA newer
/// than Flow knows.
int cudaVersionForPtxIsa(int isa);

/// "12.4" for cuDriverGetVersion's 12040.
std::string cudaVersionName(int version);

/// The device addresses of one call's buffers.
struct DeviceFrame {
  std::vector<uint64_t> inputs, outputs, constants;
  uint64_t arena = 0;

  /// \p ref's device address (0 for an empty buffer).
  uint64_t address(const detail::BufferRef &ref) const;
};

/// cuLaunchKernel's `kernelParams` for one dispatch: each binding's device
/// address, then the kernel's scratch buffers (the per-dispatch scratch
/// memory at \p scratch, plus each offset). `params[i]` points at
/// `values[i]`, so the object must stay put while launching.
struct LaunchArguments {
  std::vector<uint64_t> values;
  std::vector<void *> params;

  LaunchArguments(const detail::DispatchCommand &cmd,
                  const detail::GpuKernel &kernel, const DeviceFrame &frame,
                  uint64_t scratch);
  LaunchArguments(const LaunchArguments &) = delete;
  LaunchArguments &operator=(const LaunchArguments &) = delete;
};

/// A GEMM command as column-major cuBLASLt calls. Row-major C = op(A) op(B)
/// is column-major C^T = op(B)^T op(A)^T: cuBLASLt's first operand is the
/// command's B, its second the command's A, and C is n x m with leading
/// dimension n.
struct GemmPlan {
  /// cuBLASLt's m, n, k (the command's n, m, k).
  uint64_t m = 0, n = 0, k = 0;
  /// cuBLASLt's operands: `first` is the command's B, `second` its A.
  bool transposeFirst = false, transposeSecond = false;
  /// Each operand's stored rows x columns (column-major) and leading
  /// dimension.
  uint64_t firstRows = 0, firstCols = 0, firstLd = 0;
  uint64_t secondRows = 0, secondCols = 0, secondLd = 0;
  uint64_t cRows = 0, cCols = 0, cLd = 0;
  /// The innermost batch dimension as a strided batch (elements).
  int64_t batchCount = 1;
  int64_t firstStride = 0, secondStride = 0, cStride = 0;
  /// One call per index of the outer batch dimensions, when they do not
  /// fold into the strided batch: the element offsets of B, A and C.
  struct Call {
    int64_t first = 0, second = 0, c = 0;
  };
  std::vector<Call> calls;
  /// Element types: A and B's (f32, bf16, f16), C's (f32 or A's). The
  /// products are summed in f32 (TF32 multiplies where `tf32`).
  DType abType = DType::F32, cType = DType::F32;
  bool tf32 = false;
  /// Bytes per element of A and B, and of C (and the bias).
  int elementBytes = 4, cElementBytes = 4;
  /// cuBLASLt's epilogue for the command's bias and activation.
  enum Epilogue { Default, Bias, Relu, ReluBias, GeluTanh, GeluTanhBias };
  Epilogue epilogue = Default;
  /// The alignment (bytes, a power of two up to 256) every call's pointer
  /// to cuBLASLt's first and second operand, C and the bias is known to
  /// have: buffers start 256-aligned, and the offsets of the command's
  /// buffer refs, calls and strided matrices keep only their common low
  /// bits. cuBLASLt's heuristic assumes 256 unless told.
  uint32_t firstAlignment = 256, secondAlignment = 256, cAlignment = 256,
           biasAlignment = 256;
};

/// Plans \p cmd (m, n, k > 0 and at least one batch; an empty GEMM needs no
/// plan).
GemmPlan planGemm(const detail::GemmCommand &cmd);

/// A convolution command as cuDNN calls (NCHW, f32, no TF32). With ReLU
/// one fused call, y = relu(conv(x) + z + bias) (cuDNN's bias-activation
/// forward; z is the residual, or y itself with weight 0; a zero bias when
/// the command has none). Without, y = conv(x) + y (the residual, copied
/// into y first unless it is y already) and the bias added after.
struct ConvPlan {
  bool fused = false;
  /// Copy the residual into the output before the convolution.
  bool copyResidual = false;
  /// The weight of what y (or z) holds before the call: 1 with a residual.
  float residualWeight = 0;
  /// The fused call needs a bias: zeros, when the command has none.
  bool zeroBias = false;
  /// cuDNN's symmetric padding, per spatial dimension.
  int padH = 0, padW = 0;
};

/// Plans \p cmd, or an error for what cuDNN's path does not take
/// (asymmetric padding, blocked or bf16 buffers).
StatusOr<ConvPlan> planConv(const detail::ConvCommand &cmd);

/// Refuses, naming the function and command, what the CUDA device does not
/// run: convolutions planConv refuses, pools (the CUDA target compiles them
/// to kernels), reductions of types NCCL has no arithmetic for (16-bit
/// integers, booleans), and an empty product (k = 0) with a bias or
/// activation (cuBLASLt is not called for it).
Status checkCudaCommands(const Executable::Impl &impl);

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_CUDAHOST_H
