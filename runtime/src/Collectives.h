//===- Collectives.h - Tensor collectives over a group ----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_COLLECTIVES_H
#define FLOW_RUNTIME_SRC_COLLECTIVES_H

#include "ExecutableImpl.h"
#include "flow/runtime/Communicator.h"
#include "flow/runtime/rules/Pieces.h"

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
/// where it starts: the rule the compiler cuts by (flow/runtime/rules/).
using flow::rules::pieceOffset;
using flow::rules::pieceSize;

/// A strided copy between the buffers of a collective: `rows` rows of
/// `rowBytes`, `srcPitch` and `dstPitch` bytes apart, from `srcOffset` of
/// `src` to `dstOffset` of `dst`. Every piece a collective moves is such a
/// copy: a box that differs from its tensor only along one dimension is
/// the rows of the dimensions before it.
struct StridedCopy {
  enum Buffer { Input, Output, SendStage, RecvStage };
  Buffer src = Input, dst = Output;
  uint64_t srcOffset = 0, dstOffset = 0;
  uint64_t rows = 0, rowBytes = 0, srcPitch = 0, dstPitch = 0;
};

/// One collective command for a member of a group of `size`, as any
/// device runs it: `pack` copies into the send stage (or the output), the
/// group primitive of the command's kind from `send` to `recv`, `unpack`
/// copies out of the receive stage. Pieces that are already contiguous and
/// in member order are sent from the input or received into the output
/// directly, without a stage.
struct CollectivePlan {
  std::vector<StridedCopy> pack, unpack;
  StridedCopy::Buffer send = StridedCopy::Input, recv = StridedCopy::Output;
  /// Bytes of each stage (0: not used).
  uint64_t sendStageBytes = 0, recvStageBytes = 0;
  /// The primitive's counts: AllReduce: `count` elements of `recv` in
  /// place; AllGather: `recvCounts`, bytes per member; ReduceScatter:
  /// `sendCounts`, elements per member; AllToAll: bytes to (`sendCounts`)
  /// and from (`recvCounts`) each member.
  uint64_t count = 0;
  std::vector<size_t> sendCounts, recvCounts;
};

CollectivePlan planCollective(const CollectiveCommand &cmd, int64_t size);

/// The plan's group primitive for `cmd`, from `send` to `recv` (the plan's
/// send and receive buffers, in the group's memory).
Status runPrimitive(const CollectiveCommand &cmd, const CollectivePlan &plan,
                    Group &group, const void *send, void *recv);

/// Runs `cmd` over `group` from this device's `input` to its `output`
/// (host memory).
Status runCollective(const CollectiveCommand &cmd, Group &group,
                     const uint8_t *input, uint8_t *output);

/// Whether asynchronous collectives may run on a thread of their own:
/// FLOW_ASYNC_COLLECTIVES=0 runs them where they start (for comparisons);
/// a group that must be called from the thread that made it says so.
bool asyncCollectivesEnabled();

/// A process' collectives in flight: a communication thread runs them one
/// at a time in the order they were started, so the members of a group,
/// starting the same collectives in the same order, meet in each. The
/// thread starts with the first collective and ends with the queue. Only
/// the thread that owns the queue starts and waits; the buffers of a
/// collective stay untouched (its input unwritten) until it is waited for.
class CollectiveQueue {
public:
  CollectiveQueue();
  CollectiveQueue(const CollectiveQueue &) = delete;
  CollectiveQueue &operator=(const CollectiveQueue &) = delete;
  ~CollectiveQueue();

  /// Starts `cmd` over `group` (runCollective); returns its ticket
  /// (1, 2, ... in start order).
  uint64_t start(const CollectiveCommand &cmd, Group &group,
                 const uint8_t *input, uint8_t *output);
  /// Waits until the collective with `ticket` and every one started before
  /// it have finished. Appends the bytes each of those not yet reported
  /// passed to its transport to `bytes` (if not null), in start order;
  /// returns the first error among them (an error, and the collectives
  /// after a failed one do not run).
  Status wait(uint64_t ticket, std::vector<uint64_t> *bytes);
  /// Waits for every collective started; as wait().
  Status drain(std::vector<uint64_t> *bytes) { return wait(started, bytes); }
  /// Collectives started and not yet waited for.
  bool busy() const { return waited < started; }

private:
  struct Task;
  void work();

  struct State;
  std::unique_ptr<State> state;
  uint64_t started = 0, waited = 0;
};

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_COLLECTIVES_H
