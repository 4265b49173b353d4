//===- FakeNccl.cpp - NCCL for tests without GPUs -------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A shared library with the NCCL entry points Flow's runtime opens by
// dlopen ($FLOW_NCCL), for groups of one GPU on Flow's fake CUDA driver
// (FakeCudaDriver.cpp, $FLOW_CUDA_DRIVER). A group's data moves by the fake
// driver's stream-ordered device copies, so collectives stay in order with
// the kernels around them. What it checks and models:
//
//   - communicators made non-blocking (ncclCommInitRankConfig with
//     blocking = 0), so that a peer that never joins cannot hang the join;
//   - joining that never finishes (init=hang: the communicator stays "in
//     progress"), and an asynchronous error that appears after a number of
//     polls (async-error=N: ncclCommGetAsyncError answers ncclRemoteError
//     from its N-th call on);
//   - rules: no call on an aborted or destroyed communicator, no
//     ncclCommDestroy of a communicator with an asynchronous error (it would
//     wait for the failed peer; ncclCommAbort is the way out).
//
// Control: flow_fake_nccl_configure("key=value;...") with init=hang,
// async-error=N, reset=1; flow_fake_nccl_report() gives the violations and
// counts (joins, aborts, destroys, calls).
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// ncclComm_t points at this.
struct ncclComm {
  int size = 1, rank = 0;
  bool joined = false;
  ncclResult_t asyncError = ncclSuccess;
  long polls = 0;
};

namespace {

struct State {
  std::mutex mutex;
  bool hangJoin = false;
  long asyncErrorAfter = 0; // 0: never
  std::vector<std::string> violations;
  std::map<std::string, int> calls;
  std::set<ncclComm *> comms;
  int joins = 0, aborts = 0, destroys = 0;
};

State &state() {
  static State *s = new State;
  return *s;
}

void violation(const std::string &what) { state().violations.push_back(what); }

bool live(const char *entry, ncclComm_t comm) {
  if (!state().comms.count(comm)) {
    violation(std::string(entry) +
              ": the communicator is aborted, destroyed or unknown");
    return false;
  }
  return true;
}

/// The fake CUDA driver's stream-ordered device copy.
CUresult copyOnStream(void *dst, const void *src, size_t bytes,
                      cudaStream_t stream) {
  using Copy = CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  static Copy copy = [] {
    const char *path = std::getenv("FLOW_CUDA_DRIVER");
    void *driver = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    return driver
               ? reinterpret_cast<Copy>(dlsym(driver, "cuMemcpyDtoDAsync_v2"))
               : nullptr;
  }();
  if (!copy) {
    violation("no fake CUDA driver ($FLOW_CUDA_DRIVER) to move data with");
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  if (dst == src || bytes == 0)
    return CUDA_SUCCESS;
  return copy(CUdeviceptr(uintptr_t(dst)), CUdeviceptr(uintptr_t(src)), bytes,
              reinterpret_cast<CUstream>(stream));
}

size_t typeBytes(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  default:
    return 8;
  }
}

#define FAKE_ENTER(name)                                                       \
  std::lock_guard<std::mutex> lock(state().mutex);                             \
  ++state().calls[name]

} // namespace

extern "C" {

__attribute__((visibility("default"))) void
flow_fake_nccl_configure(const char *spec) {
  std::lock_guard<std::mutex> lock(state().mutex);
  State &s = state();
  std::stringstream in(spec ? spec : "");
  std::string item;
  while (std::getline(in, item, ';')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      continue;
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "init")
      s.hangJoin = value == "hang";
    else if (key == "async-error")
      s.asyncErrorAfter = std::atol(value.c_str());
    else if (key == "reset") {
      s.hangJoin = false;
      s.asyncErrorAfter = 0;
      s.violations.clear();
      s.calls.clear();
      s.joins = s.aborts = s.destroys = 0;
    } else
      violation("unknown fake NCCL configuration key '" + key + "'");
  }
}

__attribute__((visibility("default"))) const char *flow_fake_nccl_report() {
  std::lock_guard<std::mutex> lock(state().mutex);
  State &s = state();
  std::ostringstream out;
  out << "violations " << s.violations.size() << "\n";
  for (const std::string &v : s.violations)
    out << "violation: " << v << "\n";
  out << "joins " << s.joins << "\naborts " << s.aborts << "\ndestroys "
      << s.destroys << "\nlive communicators " << s.comms.size() << "\n";
  for (auto &[name, n] : s.calls)
    out << "calls " << name << " " << n << "\n";
  static std::string text;
  text = out.str();
  return text.c_str();
}

ncclResult_t ncclGetVersion(int *version) {
  FAKE_ENTER("ncclGetVersion");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  case ncclInvalidUsage:
    return "invalid usage";
  default:
    return "fake NCCL error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  FAKE_ENTER("ncclGetUniqueId");
  std::memset(id, 0, sizeof *id);
  std::strcpy(id->internal, "flow-fake-nccl");
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int size, ncclUniqueId id,
                                    int rank, ncclConfig_t *config) {
  FAKE_ENTER("ncclCommInitRankConfig");
  State &s = state();
  if (std::strcmp(id.internal, "flow-fake-nccl") != 0)
    violation("ncclCommInitRankConfig: the unique id did not come from "
              "ncclGetUniqueId");
  if (!config || config->blocking != 0)
    violation("ncclCommInitRankConfig: a blocking communicator (a peer that "
              "never joins hangs the join)");
  if (size != 1 || rank != 0) {
    violation("ncclCommInitRankConfig: the fake has groups of one GPU");
    return ncclInvalidUsage;
  }
  auto *c = new ncclComm;
  c->joined = !s.hangJoin;
  s.comms.insert(c);
  ++s.joins;
  *comm = c;
  return ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *result) {
  FAKE_ENTER("ncclCommGetAsyncError");
  State &s = state();
  if (!live("ncclCommGetAsyncError", comm))
    return ncclInvalidArgument;
  if (!comm->joined) {
    *result = ncclInProgress;
    return ncclSuccess;
  }
  ++comm->polls;
  if (s.asyncErrorAfter > 0 && comm->polls >= s.asyncErrorAfter)
    comm->asyncError = ncclRemoteError;
  *result = comm->asyncError;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  FAKE_ENTER("ncclCommAbort");
  State &s = state();
  if (!live("ncclCommAbort", comm))
    return ncclInvalidArgument;
  s.comms.erase(comm);
  delete comm;
  ++s.aborts;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  FAKE_ENTER("ncclCommDestroy");
  State &s = state();
  if (!live("ncclCommDestroy", comm))
    return ncclInvalidArgument;
  if (comm->asyncError != ncclSuccess || !comm->joined)
    violation("ncclCommDestroy of a communicator that failed or never "
              "joined (it waits for the peer; abort it instead)");
  s.comms.erase(comm);
  delete comm;
  ++s.destroys;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t, ncclComm_t comm,
                           cudaStream_t stream) {
  FAKE_ENTER("ncclAllReduce");
  if (!live("ncclAllReduce", comm))
    return ncclInvalidArgument;
  // One member: the reduction is its own data.
  return copyOnStream(recv, send, count * typeBytes(type), stream) ==
                 CUDA_SUCCESS
             ? ncclSuccess
             : ncclUnhandledCudaError;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  FAKE_ENTER("ncclAllGather");
  if (!live("ncclAllGather", comm))
    return ncclInvalidArgument;
  return copyOnStream(recv, send, count * typeBytes(type), stream) ==
                 CUDA_SUCCESS
             ? ncclSuccess
             : ncclUnhandledCudaError;
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t,
                               ncclComm_t comm, cudaStream_t stream) {
  FAKE_ENTER("ncclReduceScatter");
  if (!live("ncclReduceScatter", comm))
    return ncclInvalidArgument;
  return copyOnStream(recv, send, count * typeBytes(type), stream) ==
                 CUDA_SUCCESS
             ? ncclSuccess
             : ncclUnhandledCudaError;
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                        ncclDataType_t type, ncclRedOp_t, int, ncclComm_t comm,
                        cudaStream_t stream) {
  FAKE_ENTER("ncclReduce");
  if (!live("ncclReduce", comm))
    return ncclInvalidArgument;
  return copyOnStream(recv, send, count * typeBytes(type), stream) ==
                 CUDA_SUCCESS
             ? ncclSuccess
             : ncclUnhandledCudaError;
}

ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int,
                      ncclComm_t comm, cudaStream_t) {
  FAKE_ENTER("ncclSend");
  violation("ncclSend: the fake has no peers to send to");
  return live("ncclSend", comm) ? ncclInvalidUsage : ncclInvalidArgument;
}

ncclResult_t ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t comm,
                      cudaStream_t) {
  FAKE_ENTER("ncclRecv");
  violation("ncclRecv: the fake has no peers to receive from");
  return live("ncclRecv", comm) ? ncclInvalidUsage : ncclInvalidArgument;
}

ncclResult_t ncclGroupStart() {
  FAKE_ENTER("ncclGroupStart");
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  FAKE_ENTER("ncclGroupEnd");
  return ncclSuccess;
}

} // extern "C"
