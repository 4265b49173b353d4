//===- Nccl.cpp - NCCL groups of GPUs, loaded at run time -----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "Nccl.h"
#include "CudaDriver.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <thread>
#include <vector>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

#define FLOW_NCCL_STRINGIFY(x) #x
#define FLOW_NCCL_SYMBOL(x) FLOW_NCCL_STRINGIFY(x)

Status Nccl::check(ncclResult_t result, const std::string &what) const {
  if (result == ncclSuccess)
    return Status::ok();
  const char *text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  return Status::error(what + ": " +
                       (text ? text
                             : "NCCL result " + std::to_string(int(result))));
}

static StatusOr<const Nccl *> load() {
  static Nccl nccl;
  StatusOr<void *> handle = openCudaLibrary(
      "FLOW_NCCL", "libnccl.so." + std::to_string(NCCL_MAJOR), nccl.path);
  if (!handle)
    return Status::error("cannot load NCCL, which runs the collectives on "
                         "CUDA (" +
                         handle.status().message() +
                         "); install NCCL or set FLOW_NCCL to libnccl.so's "
                         "path");
#define FLOW_NCCL_LOAD(name)                                                   \
  nccl.name = reinterpret_cast<decltype(nccl.name)>(                           \
      dlsym(*handle, FLOW_NCCL_SYMBOL(name)));                                 \
  if (!nccl.name)                                                              \
    return Status::error(nccl.path + " has no " + FLOW_NCCL_SYMBOL(name) +     \
                         " (not NCCL " + std::to_string(NCCL_MAJOR) + ")");
  FLOW_NCCL_FUNCTIONS(FLOW_NCCL_LOAD)
#undef FLOW_NCCL_LOAD
  return &nccl;
}

StatusOr<const Nccl *> cuda::loadNccl() {
  static std::once_flag once;
  static StatusOr<const Nccl *> loaded = Status::error("NCCL was not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

std::optional<ncclDataType_t> cuda::ncclReductionType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F64:
    return ncclFloat64;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I8:
    return ncclInt8;
  case DType::U8:
    return ncclUint8;
  case DType::U32:
    return ncclUint32;
  case DType::U64:
    return ncclUint64;
  case DType::I16:
  case DType::U16:
  case DType::I1:
    return std::nullopt;
  }
  return std::nullopt;
}

namespace {

/// Waits for a non-blocking communicator's call that NCCL answered
/// `result` ("in progress": NCCL finishes it in the background) to finish,
/// at most `timeout` seconds (0: forever); aborts the communicator when it
/// fails or times out.
Status settle(const Nccl &nccl, ncclComm_t comm, ncclResult_t result,
              double timeout, const std::string &what, bool &aborted) {
  auto start = std::chrono::steady_clock::now();
  while (result == ncclInProgress) {
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeout > 0 && waited > timeout) {
      nccl.ncclCommAbort(comm);
      aborted = true;
      return Status::error(what + ": waited " +
                           std::to_string(static_cast<int>(waited)) +
                           " s for the other GPUs' processes "
                           "(FLOW_COLLECTIVE_TIMEOUT); a peer has stopped, "
                           "the NCCL communicator was aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (ncclResult_t r = nccl.ncclCommGetAsyncError(comm, &result);
        r != ncclSuccess)
      result = r;
  }
  if (result != ncclSuccess && comm && !aborted) {
    nccl.ncclCommAbort(comm);
    aborted = true;
  }
  return nccl.check(result, what);
}

class NcclGroup final : public Group {
public:
  NcclGroup(const Nccl &nccl, ncclComm_t comm, int rank, int size,
            CUstream stream, double timeout)
      : nccl(nccl), comm(comm), me(rank), members(size),
        stream(reinterpret_cast<cudaStream_t>(stream)), timeout(timeout) {}
  ~NcclGroup() override {
    // An aborted communicator is gone already; destroying one with a
    // failed peer would wait for it.
    if (!aborted)
      nccl.ncclCommDestroy(comm);
  }

  Status asyncError() override {
    if (aborted)
      return Status::error("the NCCL communicator was aborted");
    ncclResult_t state = ncclSuccess;
    if (Status s = nccl.check(nccl.ncclCommGetAsyncError(comm, &state),
                              "asking NCCL for errors");
        !s)
      return s;
    if (state == ncclSuccess || state == ncclInProgress)
      return Status::ok();
    return nccl.check(state, "NCCL (a collective failed after it was "
                             "queued)");
  }

  void abort() override {
    if (!aborted)
      nccl.ncclCommAbort(comm);
    aborted = true;
  }

  int rank() const override { return me; }
  int size() const override { return members; }

  Status allReduce(void *data, size_t count, DType dtype,
                   Reduction op) override {
    if (aborted)
      return abortedError();
    std::optional<ncclDataType_t> type = ncclReductionType(dtype);
    if (!type)
      return unsupported(dtype);
    countBytes(count * dtypeSize(dtype));
    return call(
        nccl.ncclAllReduce(data, data, count, *type, redOp(op), comm, stream),
        "NCCL all-reduce");
  }

  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    if (aborted)
      return abortedError();
    countBytes(offset(counts, members));
    if (equal(counts))
      return call(
          nccl.ncclAllGather(send, recv, counts[me], ncclUint8, comm, stream),
          "NCCL all-gather");
    // Uneven pieces: every member sends its piece to every other.
    return exchange(
        [&](int) { return std::pair{send, counts[me]}; },
        [&](int peer) {
          return std::pair{static_cast<uint8_t *>(recv) + offset(counts, peer),
                           counts[peer]};
        },
        "NCCL all-gather");
  }

  Status reduceScatter(const void *send, void *recv,
                       const std::vector<size_t> &counts, DType dtype,
                       Reduction op) override {
    if (aborted)
      return abortedError();
    std::optional<ncclDataType_t> type = ncclReductionType(dtype);
    if (!type)
      return unsupported(dtype);
    countBytes(offset(counts, members) * dtypeSize(dtype));
    if (equal(counts))
      return call(nccl.ncclReduceScatter(send, recv, counts[me], *type,
                                         redOp(op), comm, stream),
                  "NCCL reduce-scatter");
    // Uneven pieces: member i is the root of the reduction of its piece.
    size_t element = dtypeSize(dtype);
    if (Status s = call(nccl.ncclGroupStart(), "NCCL reduce-scatter"); !s)
      return s;
    for (int i = 0; i < members; ++i) {
      const void *piece =
          static_cast<const uint8_t *>(send) + offset(counts, i) * element;
      ncclResult_t r = nccl.ncclReduce(piece, i == me ? recv : nullptr,
                                       counts[i], *type, redOp(op), i, comm,
                                       stream);
      if (r != ncclSuccess && r != ncclInProgress) {
        nccl.ncclGroupEnd();
        return call(r, "NCCL reduce-scatter");
      }
    }
    return call(nccl.ncclGroupEnd(), "NCCL reduce-scatter");
  }

  Status allToAll(const void *send, const std::vector<size_t> &sendCounts,
                  void *recv, const std::vector<size_t> &recvCounts) override {
    if (aborted)
      return abortedError();
    countBytes(offset(sendCounts, members));
    return exchange(
        [&](int peer) {
          return std::pair{static_cast<const void *>(
                               static_cast<const uint8_t *>(send) +
                               offset(sendCounts, peer)),
                           sendCounts[peer]};
        },
        [&](int peer) {
          return std::pair{static_cast<uint8_t *>(recv) +
                               offset(recvCounts, peer),
                           recvCounts[peer]};
        },
        "NCCL all-to-all");
  }

private:
  static ncclRedOp_t redOp(Reduction op) {
    return op == Reduction::Max ? ncclMax : ncclSum;
  }
  static bool equal(const std::vector<size_t> &counts) {
    for (size_t c : counts)
      if (c != counts.front())
        return false;
    return true;
  }
  static size_t offset(const std::vector<size_t> &counts, int member) {
    size_t at = 0;
    for (int i = 0; i < member; ++i)
      at += counts[i];
    return at;
  }
  static Status unsupported(DType dtype) {
    return Status::error(std::string("NCCL cannot reduce ") +
                         dtypeName(dtype) + " elements");
  }
  /// Point-to-point sends and receives with every member (itself
  /// included) in one NCCL group call: `to(peer)` and `from(peer)` give the
  /// bytes sent to and received from each.
  template <typename To, typename From>
  Status exchange(To to, From from, const char *what) {
    if (Status s = call(nccl.ncclGroupStart(), what); !s)
      return s;
    for (int peer = 0; peer < members; ++peer) {
      auto [sendAt, sendBytes] = to(peer);
      auto [recvAt, recvBytes] = from(peer);
      ncclResult_t r = ncclSuccess;
      if (sendBytes)
        r = nccl.ncclSend(sendAt, sendBytes, ncclUint8, peer, comm, stream);
      if ((r == ncclSuccess || r == ncclInProgress) && recvBytes)
        r = nccl.ncclRecv(recvAt, recvBytes, ncclUint8, peer, comm, stream);
      if (r != ncclSuccess && r != ncclInProgress) {
        nccl.ncclGroupEnd();
        return call(r, what);
      }
    }
    return call(nccl.ncclGroupEnd(), what);
  }

  /// A call's result, waited for while NCCL answers "in progress".
  Status call(ncclResult_t result, const std::string &what) {
    return settle(nccl, comm, result, timeout, what, aborted);
  }
  static Status abortedError() {
    return Status::error("the NCCL communicator was aborted after an "
                         "earlier failure or timeout");
  }

  const Nccl &nccl;
  ncclComm_t comm;
  int me, members;
  cudaStream_t stream;
  double timeout;
  bool aborted = false;
};

} // namespace

StatusOr<std::unique_ptr<Group>> cuda::createNcclGroup(Group &host,
                                                      CUstream stream) {
  StatusOr<const Nccl *> loaded = loadNccl();
  if (!loaded)
    return loaded.status();
  const Nccl &nccl = **loaded;
  int rank = host.rank(), size = host.size();
  // Member 0's unique id, to everyone over the host group, with a flag
  // saying whether member 0 made one: every member takes part either way,
  // so a failure there ends the group's making everywhere, not after the
  // others' timeout.
  struct Bootstrap {
    uint8_t ok = 0;
    ncclUniqueId id;
  } mine, received;
  std::memset(&mine.id, 0, sizeof mine.id);
  Status made = Status::ok();
  if (rank == 0) {
    made = nccl.check(nccl.ncclGetUniqueId(&mine.id),
                      "cannot make an NCCL unique id");
    mine.ok = made ? 1 : 0;
  }
  std::vector<size_t> counts(size, 0);
  counts[0] = sizeof(Bootstrap);
  if (Status s = host.allGather(rank == 0 ? &mine : nullptr, &received, counts);
      !s)
    return Status::error("sending the NCCL unique id: " + s.message());
  if (!made)
    return made;
  if (!received.ok)
    return Status::error("member 0 of the group could not make an NCCL "
                         "unique id (its error says why)");
  StatusOr<double> timeout = collectiveTimeoutFromEnvironment();
  if (!timeout)
    return timeout.status();
  // Non-blocking: a member that never joins is waited for at most the
  // collective timeout.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  std::string what = "cannot join an NCCL group of " + std::to_string(size) +
                     " GPUs as member " + std::to_string(rank);
  ncclResult_t result =
      nccl.ncclCommInitRankConfig(&comm, size, received.id, rank, &config);
  bool aborted = false;
  if (!comm)
    return nccl.check(result == ncclSuccess ? ncclInternalError : result, what);
  if (Status s = settle(nccl, comm, result, *timeout, what, aborted); !s)
    return s;
  return std::unique_ptr<Group>(
      std::make_unique<NcclGroup>(nccl, comm, rank, size, stream, *timeout));
}
