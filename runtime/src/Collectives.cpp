//===- Collectives.cpp - Tensor collectives over a group ------------------===//
//
// Part of the Flow project.
//
// Pieces along a dimension are packed into contiguous blocks in member
// order, exchanged with the group's byte-level primitives, and unpacked.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include <cstring>

using namespace flow::runtime;
using namespace flow::runtime::detail;

int64_t detail::pieceSize(int64_t n, int64_t g, int64_t i) {
  return n / g + (i < n % g ? 1 : 0);
}

int64_t detail::pieceOffset(int64_t n, int64_t g, int64_t i) {
  return i * (n / g) + std::min(i, n % g);
}

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

std::vector<int64_t> zeros(size_t rank) { return std::vector<int64_t>(rank, 0); }

} // namespace

Status detail::runCollective(const CollectiveCommand &cmd, Group &group,
                             const uint8_t *input, uint8_t *output,
                             uint64_t *bytes) {
  uint64_t ignored;
  uint64_t &moved = bytes ? *bytes : ignored;
  size_t elem = dtypeSize(cmd.dtype);
  int64_t g = group.size(), me = group.rank();
  const std::vector<int64_t> &in = cmd.inputShape, &out = cmd.outputShape;
  switch (cmd.kind) {
  case CollectiveCommand::AllReduce: {
    size_t count = numElements(out);
    if (input != output && count)
      std::memmove(output, input, count * elem);
    moved = count * elem;
    return group.allReduce(output, count, cmd.dtype, cmd.reduction);
  }
  case CollectiveCommand::AllGather: {
    int64_t d = cmd.dim;
    std::vector<size_t> counts(g);
    std::vector<std::vector<int64_t>> shapes(g, in);
    size_t total = 0;
    for (int64_t i = 0; i < g; ++i) {
      shapes[i][d] = pieceSize(out[d], g, i);
      counts[i] = numElements(shapes[i]) * elem;
      total += counts[i];
    }
    std::vector<uint8_t> blocks(total);
    moved = total;
    if (Status s = group.allGather(input, blocks.data(), counts); !s)
      return s;
    size_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      std::vector<int64_t> offset = zeros(out.size());
      offset[d] = pieceOffset(out[d], g, i);
      copyBox(blocks.data() + at, shapes[i], zeros(in.size()), output, out,
              offset, shapes[i], elem);
      at += counts[i];
    }
    return Status::ok();
  }
  case CollectiveCommand::ReduceScatter: {
    int64_t d = cmd.dim;
    std::vector<size_t> counts(g);
    std::vector<uint8_t> blocks(numElements(in) * elem);
    size_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      std::vector<int64_t> box = in, offset = zeros(in.size());
      box[d] = pieceSize(in[d], g, i);
      offset[d] = pieceOffset(in[d], g, i);
      copyBox(input, in, offset, blocks.data() + at, box, zeros(in.size()),
              box, elem);
      counts[i] = numElements(box);
      at += counts[i] * elem;
    }
    moved = at;
    return group.reduceScatter(blocks.data(), output, counts, cmd.dtype,
                               cmd.reduction);
  }
  case CollectiveCommand::AllToAll: {
    int64_t sd = cmd.splitDim, cd = cmd.concatDim;
    std::vector<size_t> sendCounts(g), recvCounts(g);
    std::vector<uint8_t> send(numElements(in) * elem);
    size_t at = 0;
    for (int64_t i = 0; i < g; ++i) {
      std::vector<int64_t> box = in, offset = zeros(in.size());
      box[sd] = pieceSize(in[sd], g, i);
      offset[sd] = pieceOffset(in[sd], g, i);
      copyBox(input, in, offset, send.data() + at, box, zeros(in.size()), box,
              elem);
      sendCounts[i] = numElements(box) * elem;
      at += sendCounts[i];
    }
    std::vector<std::vector<int64_t>> shapes(g);
    size_t total = 0;
    for (int64_t j = 0; j < g; ++j) {
      shapes[j] = in;
      shapes[j][sd] = pieceSize(in[sd], g, me);
      shapes[j][cd] = pieceSize(out[cd], g, j);
      recvCounts[j] = numElements(shapes[j]) * elem;
      total += recvCounts[j];
    }
    std::vector<uint8_t> recv(total);
    moved = total;
    if (Status s = group.allToAll(send.data(), sendCounts, recv.data(),
                                  recvCounts);
        !s)
      return s;
    at = 0;
    for (int64_t j = 0; j < g; ++j) {
      std::vector<int64_t> offset = zeros(out.size());
      offset[cd] = pieceOffset(out[cd], g, j);
      copyBox(recv.data() + at, shapes[j], zeros(in.size()), output, out,
              offset, shapes[j], elem);
      at += recvCounts[j];
    }
    return Status::ok();
  }
  }
  return Status::error("unknown collective");
}
