//===- Collectives.cpp - Tensor collectives over a group ------------------===//
//
// Part of the Flow project.
//
// Pieces along a dimension are packed into contiguous blocks in member
// order, exchanged with the group's byte-level primitives, and unpacked:
// planCollective says how (the same plan for host memory here and for a
// GPU's memory on its stream), runCollective runs it on the host.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include <cstring>

using namespace flow::runtime;
using namespace flow::runtime::detail;

void detail::copyBox(const uint8_t *src, const std::vector<int64_t> &srcShape,
                     const std::vector<int64_t> &srcOffset, uint8_t *dst,
                     const std::vector<int64_t> &dstShape,
                     const std::vector<int64_t> &dstOffset,
                     const std::vector<int64_t> &box, size_t elementSize) {
  size_t rank = box.size();
  for (int64_t d : box)
    if (d == 0)
      return;
  if (rank == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  // Strides in bytes.
  std::vector<size_t> srcStride(rank), dstStride(rank);
  size_t s = elementSize, t = elementSize;
  for (size_t d = rank; d-- > 0;) {
    srcStride[d] = s;
    dstStride[d] = t;
    s *= static_cast<size_t>(srcShape[d]);
    t *= static_cast<size_t>(dstShape[d]);
  }
  size_t row = static_cast<size_t>(box[rank - 1]) * elementSize;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    size_t so = 0, doff = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += static_cast<size_t>(srcOffset[d] + index[d]) * srcStride[d];
      doff += static_cast<size_t>(dstOffset[d] + index[d]) * dstStride[d];
    }
    std::memcpy(dst + doff, src + so, row);
    // Next row: odometer over all but the last dimension.
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < box[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

namespace {

size_t numElements(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}


} // namespace

namespace {

/// Rows, row bytes and pitch of the box `[offset, offset + length)` along
/// dimension `d` of a row-major tensor of `shape`.
struct Slab {
  uint64_t rows = 1, inner = 1, extent = 0;
  Slab(const std::vector<int64_t> &shape, int64_t d, size_t elem) {
    for (int64_t i = 0; i < d; ++i)
      rows *= static_cast<uint64_t>(shape[i]);
    inner = elem;
    for (size_t i = d + 1; i < shape.size(); ++i)
      inner *= static_cast<uint64_t>(shape[i]);
    extent = static_cast<uint64_t>(shape[d]);
  }
};

using Buffer = StridedCopy::Buffer;

/// Copies pieces `length` long at `offset` along `d` of a tensor (`slab`)
/// in buffer `tensor` to or from a contiguous block at `at` of `block`.
StridedCopy slabCopy(const Slab &slab, int64_t offset, int64_t length,
                     Buffer tensor, Buffer block, uint64_t at, bool toBlock) {
  StridedCopy c;
  c.rows = slab.rows;
  c.rowBytes = static_cast<uint64_t>(length) * slab.inner;
  uint64_t pitch = slab.extent * slab.inner;
  uint64_t tensorOffset = static_cast<uint64_t>(offset) * slab.inner;
  if (toBlock) {
    c.src = tensor;
    c.srcOffset = tensorOffset;
    c.srcPitch = pitch;
    c.dst = block;
    c.dstOffset = at;
    c.dstPitch = c.rowBytes;
  } else {
    c.src = block;
    c.srcOffset = at;
    c.srcPitch = c.rowBytes;
    c.dst = tensor;
    c.dstOffset = tensorOffset;
    c.dstPitch = pitch;
  }
  return c;
}

} // namespace

CollectivePlan detail::planCollective(const CollectiveCommand &cmd,
                                      int64_t g) {
  CollectivePlan plan;
  size_t elem = dtypeSize(cmd.dtype);
  const std::vector<int64_t> &in = cmd.inputShape, &out = cmd.outputShape;
  switch (cmd.kind) {
  case CollectiveCommand::AllReduce: {
    // In place in the output, after copying the input there.
    plan.count = numElements(out);
    plan.send = plan.recv = Buffer::Output;
    if (plan.count) {
      StridedCopy c;
      c.src = Buffer::Input;
      c.dst = Buffer::Output;
      c.rows = 1;
      c.rowBytes = c.srcPitch = c.dstPitch = plan.count * elem;
      plan.pack.push_back(c);
    }
    return plan;
  }
  case CollectiveCommand::AllGather: {
    // Member i's piece lands at its offset along `dim` of the output; when
    // the dimensions before `dim` are all 1 the pieces are consecutive in
    // member order and the output receives them directly.
    int64_t d = cmd.dim;
    Slab slab(out, d, elem);
    plan.send = Buffer::Input;
    plan.recv = slab.rows == 1 ? Buffer::Output : Buffer::RecvStage;
    uint64_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      int64_t length = pieceSize(out[d], g, i);
      plan.recvCounts.push_back(slab.rows * length * slab.inner);
      if (plan.recv == Buffer::RecvStage && plan.recvCounts.back())
        plan.unpack.push_back(slabCopy(slab, pieceOffset(out[d], g, i), length,
                                       Buffer::Output, Buffer::RecvStage, at,
                                       /*toBlock=*/false));
      at += plan.recvCounts.back();
    }
    plan.recvStageBytes = plan.recv == Buffer::RecvStage ? at : 0;
    return plan;
  }
  case CollectiveCommand::ReduceScatter: {
    // Member i reduces the pieces at its offset along `dim` of everyone's
    // input; consecutive already when the dimensions before `dim` are 1.
    int64_t d = cmd.dim;
    Slab slab(in, d, elem);
    plan.send = slab.rows == 1 ? Buffer::Input : Buffer::SendStage;
    plan.recv = Buffer::Output;
    uint64_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      int64_t length = pieceSize(in[d], g, i);
      uint64_t bytes = slab.rows * length * slab.inner;
      if (plan.send == Buffer::SendStage && bytes)
        plan.pack.push_back(slabCopy(slab, pieceOffset(in[d], g, i), length,
                                     Buffer::Input, Buffer::SendStage, at,
                                     /*toBlock=*/true));
      plan.sendCounts.push_back(bytes / elem);
      at += bytes;
    }
    plan.recvCounts = plan.sendCounts;
    plan.sendStageBytes = plan.send == Buffer::SendStage ? at : 0;
    return plan;
  }
  case CollectiveCommand::AllToAll: {
    // Piece i of the input along `split_dim` goes to member i; what member
    // j sends lands at j's offset along `concat_dim` of the output.
    int64_t sd = cmd.splitDim, cd = cmd.concatDim;
    Slab split(in, sd, elem), concat(out, cd, elem);
    plan.send = split.rows == 1 ? Buffer::Input : Buffer::SendStage;
    plan.recv = concat.rows == 1 ? Buffer::Output : Buffer::RecvStage;
    uint64_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      int64_t length = pieceSize(in[sd], g, i);
      uint64_t bytes = split.rows * length * split.inner;
      if (plan.send == Buffer::SendStage && bytes)
        plan.pack.push_back(slabCopy(split, pieceOffset(in[sd], g, i), length,
                                     Buffer::Input, Buffer::SendStage, at,
                                     /*toBlock=*/true));
      plan.sendCounts.push_back(bytes);
      at += bytes;
    }
    plan.sendStageBytes = plan.send == Buffer::SendStage ? at : 0;
    at = 0;
    for (int64_t j = 0; j < g; ++j) {
      int64_t length = pieceSize(out[cd], g, j);
      uint64_t bytes = concat.rows * length * concat.inner;
      if (plan.recv == Buffer::RecvStage && bytes)
        plan.unpack.push_back(slabCopy(concat, pieceOffset(out[cd], g, j),
                                       length, Buffer::Output,
                                       Buffer::RecvStage, at,
                                       /*toBlock=*/false));
      plan.recvCounts.push_back(bytes);
      at += bytes;
    }
    plan.recvStageBytes = plan.recv == Buffer::RecvStage ? at : 0;
    return plan;
  }
  }
  return plan;
}

Status detail::runPrimitive(const CollectiveCommand &cmd,
                            const CollectivePlan &plan, Group &group,
                            const void *send, void *recv) {
  switch (cmd.kind) {
  case CollectiveCommand::AllReduce:
    return group.allReduce(recv, plan.count, cmd.dtype, cmd.reduction);
  case CollectiveCommand::AllGather:
    return group.allGather(send, recv, plan.recvCounts);
  case CollectiveCommand::ReduceScatter:
    return group.reduceScatter(send, recv, plan.sendCounts, cmd.dtype,
                               cmd.reduction);
  case CollectiveCommand::AllToAll:
    return group.allToAll(send, plan.sendCounts, recv, plan.recvCounts);
  }
  return Status::error("unknown collective");
}

Status detail::runCollective(const CollectiveCommand &cmd, Group &group,
                             const uint8_t *input, uint8_t *output) {
  CollectivePlan plan = planCollective(cmd, group.size());
  std::vector<uint8_t> sendStage(plan.sendStageBytes),
      recvStage(plan.recvStageBytes);
  auto address = [&](Buffer b) -> uint8_t * {
    switch (b) {
    case Buffer::Input:
      return const_cast<uint8_t *>(input);
    case Buffer::Output:
      return output;
    case Buffer::SendStage:
      return sendStage.data();
    case Buffer::RecvStage:
      return recvStage.data();
    }
    return nullptr;
  };
  auto copy = [&](const StridedCopy &c) {
    const uint8_t *src = address(c.src) + c.srcOffset;
    uint8_t *dst = address(c.dst) + c.dstOffset;
    if (src == dst && c.srcPitch == c.dstPitch)
      return;
    for (uint64_t r = 0; r < c.rows; ++r)
      std::memmove(dst + r * c.dstPitch, src + r * c.srcPitch, c.rowBytes);
  };
  for (const StridedCopy &c : plan.pack)
    copy(c);
  if (Status s = runPrimitive(cmd, plan, group, address(plan.send),
                              address(plan.recv));
      !s)
    return s;
  for (const StridedCopy &c : plan.unpack)
    copy(c);
  return Status::ok();
}

bool detail::asyncCollectivesEnabled() {
  const char *value = std::getenv("FLOW_ASYNC_COLLECTIVES");
  return !value || std::string(value) != "0";
}

struct detail::CollectiveQueue::Task {
  const CollectiveCommand *cmd;
  Group *group;
  const uint8_t *input;
  uint8_t *output;
  // Set by the communication thread.
  bool done = false;
  Status status = Status::ok();
  uint64_t bytes = 0;
};

struct detail::CollectiveQueue::State {
  std::mutex mutex;
  std::condition_variable wake, finished;
  /// Started and not yet waited for, in start order; `next` is the first
  /// the thread has not taken.
  std::deque<Task> tasks;
  size_t next = 0;
  bool failed = false, stop = false;
  std::thread thread;
};

detail::CollectiveQueue::CollectiveQueue() = default;

detail::CollectiveQueue::~CollectiveQueue() {
  if (!state)
    return;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->stop = true;
  }
  state->wake.notify_one();
  state->thread.join();
}

void detail::CollectiveQueue::work() {
  State &s = *state;
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    s.wake.wait(lock, [&] { return s.stop || s.next < s.tasks.size(); });
    if (s.next == s.tasks.size())
      return; // stopped with nothing left
    // Tasks are appended at the back and removed from the front only once
    // done, so the reference stays valid unlocked.
    Task &task = s.tasks[s.next++];
    bool skip = s.failed;
    lock.unlock();
    if (skip) {
      task.status = Status::error(
          "not run: a collective started before it failed");
    } else {
      uint64_t before = task.group->bytesPassed();
      task.status =
          runCollective(*task.cmd, *task.group, task.input, task.output);
      task.bytes = task.group->bytesPassed() - before;
    }
    lock.lock();
    task.done = true;
    s.failed |= !task.status;
    s.finished.notify_all();
  }
}

uint64_t detail::CollectiveQueue::start(const CollectiveCommand &cmd,
                                        Group &group, const uint8_t *input,
                                        uint8_t *output) {
  if (!state) {
    state = std::make_unique<State>();
    state->thread = std::thread([this] { work(); });
  }
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->tasks.push_back(Task{&cmd, &group, input, output});
  }
  state->wake.notify_one();
  return ++started;
}

Status detail::CollectiveQueue::wait(uint64_t ticket,
                                     std::vector<uint64_t> *bytes) {
  Status first = Status::ok();
  if (!state || ticket <= waited)
    return first;
  State &s = *state;
  std::unique_lock<std::mutex> lock(s.mutex);
  while (waited < ticket) {
    s.finished.wait(lock, [&] { return s.tasks.front().done; });
    Task &task = s.tasks.front();
    if (bytes)
      bytes->push_back(task.bytes);
    if (first && !task.status)
      first = task.status;
    s.tasks.pop_front();
    --s.next;
    ++waited;
  }
  // A failure spoils only the collectives started with it.
  if (s.tasks.empty())
    s.failed = false;
  return first;
}
