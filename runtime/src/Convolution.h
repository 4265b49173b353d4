//===- Convolution.h - Convolution commands on a library --------*- C++ -*-===//
//
// Part of the Flow project.
//
// Convolution commands run on oneDNN's primitives when libdnnl 2.x is
// installed (unless FLOW_CONV=reference when the session is created), else
// on Flow's reference path
// (im2col and the BLAS GEMM, single-threaded: correct, not fast). Where
// oneDNN has a Winograd kernel for f32 3x3 convolutions on this CPU (its
// avx512_core one), f32 3x3 stride-1 convolutions it takes run on it
// (F(4x4, 3x3) or F(2x2, 3x3): ResNet-50's 3x3 convolutions 1.6 to 2x
// faster at batch 8) unless FLOW_CONV=direct. Buffers a command marks
// blocked hold nChw16c in a session with Winograd (what it reads), else
// the layout oneDNN's direct convolutions prefer on this CPU (asked once
// per process: nhwc where its brgemm kernels run, nChw16c or nChw8c for
// its older direct kernels; nChw16c without oneDNN): the same bytes as
// NCHW, channels innermost (all of them, or in blocks). Weights that are
// constants are reordered into the primitive's layout once per session.
//
// oneDNN runs on OpenMP: a convolution runs on the calling thread with
// OpenMP threads equal to the session's thread count. A session with
// convolution commands on oneDNN runs its other loops on the same OpenMP
// team (ThreadPool's OpenMP mode), so one set of threads runs every kernel
// and no second set spins beside it; the calling thread's OpenMP count is
// set back to what it was afterwards (one once GEMM pieces ran there: they
// expect it).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CONVOLUTION_H
#define FLOW_RUNTIME_SRC_CONVOLUTION_H

#include "ExecutableImpl.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace flow {
namespace runtime {
namespace detail {

/// dlopen()s libdnnl.so.2 (null when absent). When this process has not
/// loaded OpenMP yet and the user set neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT, OpenMP's threads spin after a convolution as long as
/// Flow's pool spins between jobs (FLOW_SPIN_US), then sleep.
void *openOneDnn();

/// True when a session created now runs its convolution commands on
/// oneDNN (loading it), whose work runs on OpenMP's team.
bool convolutionsOnOpenMp();

/// "oneDNN 2.6.3, nChw16c, Winograd for f32 3x3 stride-1
/// convolutions", "oneDNN 2.6.3, nhwc" or "Flow reference (im2col +
/// GEMM, one thread), nChw16c": what runs the convolution commands of a
/// session created now.
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
  /// A command whose batch varies from call to call (ConvCommand::rows)
  /// runs as \p cmd sized for this call, with the loaded command as \p key:
  /// it keeps one primitive per batch.
  Status run(const ConvCommand &cmd, const ConvBuffers &buffers,
             bool filterIsConstant, const ConvCommand *key = nullptr);
  /// Channels per block of this session's blocked buffers (16 or 8; 0:
  /// NHWC), settled at the first call of this or run().
  int layoutBlock() {
    configure();
    return block;
  }
  /// What ran \p cmd ("jit:avx512_core", "reference"), empty before its
  /// first run.
  std::string kernel(const ConvCommand &cmd) const;

  struct Plan;

private:
  Status runReference(const ConvCommand &cmd, const ConvBuffers &buffers);
  /// At least \p bytes of scratch memory, 64-byte aligned.
  float *scratch(size_t bytes);

  /// Asks oneDNN for the settings below, at the first convolution.
  void configure();

  int threads;
  /// FLOW_CONV as the session started.
  std::string choice;
  bool configured = false;
  /// False with FLOW_CONV=reference.
  bool library = true;
  /// oneDNN's Winograd kernel for the f32 3x3 stride-1 convolutions it
  /// takes; false without it or with FLOW_CONV=direct.
  bool winograd = false;
  /// The layout of blocked buffers: channels innermost in blocks of
  /// `block`, 0 meaning all of them (NHWC).
  int block = 16;
  std::map<std::pair<const ConvCommand *, int64_t>, std::unique_ptr<Plan>>
      plans;
  AlignedBuffer scratchMemory;
  size_t scratchBytes = 0;
};

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CONVOLUTION_H
