//===- Nccl.h - NCCL groups of GPUs, loaded at run time ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA device's collectives run on NCCL, opened with dlopen when a mesh
// executable with collectives is loaded on a CUDA device: $FLOW_NCCL, else
// libnccl.so.<major> on the library path or in the toolkit's lib64.
//
// An NCCL group has the members of a host group (the MPI communicator's, one
// process per GPU) in the same order: member 0 makes the NCCL unique id and
// the host group's all-gather gives it to the others, then every member
// joins with ncclCommInitRank. Its primitives (the Group interface) take
// device addresses and are enqueued on the device's stream, in order with
// its kernels and GEMMs; they return once enqueued.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_CUDA_NCCL_H
#define FLOW_RUNTIME_SRC_CUDA_NCCL_H

#include "flow/runtime/Communicator.h"
#include "flow/runtime/Status.h"

#include <cuda.h>
#include <memory>
#include <nccl.h>
#include <optional>
#include <string>

namespace flow {
namespace runtime {
namespace cuda {

#define FLOW_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetVersion)                                                            \
  X(ncclGetErrorString)                                                        \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRankConfig)                                                    \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclCommAbort)                                                             \
  X(ncclCommDestroy)                                                           \
  X(ncclAllReduce)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclReduce)                                                                \
  X(ncclSend)                                                                  \
  X(ncclRecv)                                                                  \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)

struct Nccl {
#define FLOW_NCCL_DECLARE(name) decltype(&::name) name = nullptr;
  FLOW_NCCL_FUNCTIONS(FLOW_NCCL_DECLARE)
#undef FLOW_NCCL_DECLARE
  /// The file it was loaded from.
  std::string path;

  /// An error "<what>: <NCCL's message>" or ok.
  Status check(ncclResult_t result, const std::string &what) const;
};

/// NCCL, loaded once per process (the outcome is kept).
StatusOr<const Nccl *> loadNccl();

/// NCCL's type for reducing elements of `dtype`; none for the types NCCL
/// cannot reduce (i16, u16, i1). Gathers and all-to-alls move bytes and
/// take every type.
std::optional<ncclDataType_t> ncclReductionType(DType dtype);

/// A group of the GPUs of `host`'s members (this process's is the current
/// context's), on `stream`. Collective over `host`. The communicator is
/// non-blocking: joining it, and every call that NCCL answers "in
/// progress", waits at most the collective timeout
/// (FLOW_COLLECTIVE_TIMEOUT) and then aborts the communicator (a peer that
/// stopped ends the job instead of hanging it). The group reports NCCL's
/// asynchronous errors (Group::asyncError) and aborts on Group::abort.
StatusOr<std::unique_ptr<Group>> createNcclGroup(Group &host, CUstream stream);

} // namespace cuda
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_CUDA_NCCL_H
