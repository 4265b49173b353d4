//===- Convolution.h - Convolution commands on a library --------*- C++ -*-===//
//
// Part of the Flow project.
//
// Convolution commands run on oneDNN's primitives when libdnnl 2.x is
// installed (unless FLOW_CONV=reference when the session is created), else
// on Flow's reference path
// (im2col and the BLAS GEMM, single-threaded: correct, not fast). Buffers
// a command marks blocked hold the layout oneDNN's convolutions prefer on
// this CPU (asked once per process: nhwc where its brgemm kernels run,
// nChw16c or nChw8c for its older direct kernels; nChw16c without
// oneDNN): the same bytes as NCHW, channels innermost (all of them, or in
// blocks). Weights that are constants are reordered into the primitive's
// layout once per session.
//
// oneDNN runs on OpenMP: a convolution runs on the calling thread with
// OpenMP threads equal to the session's thread count while Flow's pool
// waits (its workers sleep), so at any time one set of threads uses the
// cores; the calling thread's OpenMP count is set back to what it was
// afterwards (one once GEMM pieces ran there: they expect it).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CONVOLUTION_H
#define FLOW_RUNTIME_SRC_CONVOLUTION_H

#include "ExecutableImpl.h"

#include <memory>
#include <string>
#include <unordered_map>

namespace flow {
namespace runtime {
namespace detail {

/// dlopen()s libdnnl.so.2 (null when absent). When this process has not
/// loaded OpenMP yet and the user set no OMP_WAIT_POLICY, OpenMP starts
/// with the passive policy: its threads sleep as soon as a convolution
/// ends instead of spinning against Flow's pool.
void *openOneDnn();

/// "oneDNN 2.6.3, nhwc" or "Flow reference (im2col +
/// GEMM)": what runs convolution commands in this process.
std::string convLibrary();

/// The addresses of one convolution's buffers (bias and residual null
/// when absent).
/// A command's buffers: f32, except the input, residual and output that
/// the command marks bf16.
struct ConvBuffers {
  const void *input;
  const float *filter, *bias;
  const void *residual;
  void *output;
};

/// A session's convolutions: each command's primitive is made at its
/// first run and kept.
class ConvRunner {
public:
  /// \p threads: the session's thread count.
  explicit ConvRunner(int threads);
  ~ConvRunner();
  ConvRunner(const ConvRunner &) = delete;
  ConvRunner &operator=(const ConvRunner &) = delete;

  /// Runs \p cmd; \p filterIsConstant lets its reordered weights be kept.
  Status run(const ConvCommand &cmd, const ConvBuffers &buffers,
             bool filterIsConstant);
  /// What ran \p cmd ("jit:avx512_core", "reference"), empty before its
  /// first run.
  std::string kernel(const ConvCommand &cmd) const;

  struct Plan;

private:
  Status runReference(const ConvCommand &cmd, const ConvBuffers &buffers);
  /// At least \p bytes of scratch memory, 64-byte aligned.
  float *scratch(size_t bytes);

  int threads;
  /// False with FLOW_CONV=reference.
  bool library;
  std::unordered_map<const ConvCommand *, std::unique_ptr<Plan>> plans;
  AlignedBuffer scratchMemory;
  size_t scratchBytes = 0;
};

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CONVOLUTION_H
