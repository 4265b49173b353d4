//===- Attention.h - Fused attention on the CPU -----------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's attention command: for each leading index and block of
// query rows, the keys are walked in blocks with an online softmax (running
// maximum and sum per row, flash-attention style), so the scores are never
// held whole: memory is a few blocks per thread whatever the sequence
// length. Products of blocks run on the BLAS; sums are f32 whatever the
// element type.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_ATTENTION_H
#define FLOW_RUNTIME_SRC_ATTENTION_H

#include "ExecutableImpl.h"

namespace flow {
namespace runtime {
class ThreadPool;
namespace detail {

/// Runs `cmd` (checked at load) on its buffers. `mask` is null when the
/// command has none.
void runAttention(const AttentionCommand &cmd, const void *query,
                  const void *key, const void *value, const void *mask,
                  void *output, ThreadPool &pool);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_ATTENTION_H
