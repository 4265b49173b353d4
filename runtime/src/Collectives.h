//===- Collectives.h - Tensor collectives over a group ----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_COLLECTIVES_H
#define FLOW_RUNTIME_SRC_COLLECTIVES_H

#include "ExecutableImpl.h"
#include "flow/runtime/Communicator.h"

namespace flow {
namespace runtime {
namespace detail {

/// Copies the box `box` (a shape) at `srcOffset` of a row-major tensor
/// `src` of shape `srcShape` to `dstOffset` of `dst` (shape `dstShape`).
void copyBox(const uint8_t *src, const std::vector<int64_t> &srcShape,
             const std::vector<int64_t> &srcOffset, uint8_t *dst,
             const std::vector<int64_t> &dstShape,
             const std::vector<int64_t> &dstOffset,
             const std::vector<int64_t> &box, size_t elementSize);

/// Length of piece `i` of `n` cut over `g` (the longer pieces first), and
/// where it starts.
int64_t pieceSize(int64_t n, int64_t g, int64_t i);
int64_t pieceOffset(int64_t n, int64_t g, int64_t i);

/// Runs `cmd` over `group` from this device's `input` to its `output`.
Status runCollective(const CollectiveCommand &cmd, Group &group,
                     const uint8_t *input, uint8_t *output,
                     uint64_t *bytes = nullptr);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_COLLECTIVES_H
