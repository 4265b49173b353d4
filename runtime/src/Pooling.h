//===- Pooling.h - Pooling next to the convolution library -----*- C++ -*-===//
//
// Part of the Flow project.
//
// Max and average pooling commands run here, on the session's thread
// pool, in the layout of the buffers they are given: the runtime's
// convolution layout for a blocked buffer (channels innermost: nChw16c,
// nChw8c or NHWC, each channel's 16 or 8 neighbours side by side, so that
// one vector holds them whatever the window's stride), NCHW for a plain
// one. A blocked
// buffer may hold bf16 (the maximum of bf16 values is one of them, so a
// bf16 maximum is exact; an average is summed in f32 and rounded).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_POOLING_H
#define FLOW_RUNTIME_SRC_POOLING_H

#include "ExecutableImpl.h"

namespace flow {
namespace runtime {
class ThreadPool;
namespace detail {

/// Runs \p cmd from \p input to \p output on \p pool; \p block is the
/// channels per block of the session's blocked buffers (16 or 8; 0: NHWC).
void runPool(const PoolCommand &cmd, const void *input, void *output,
                int block, ThreadPool &pool);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_POOLING_H
