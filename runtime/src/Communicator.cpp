//===- Communicator.cpp - Single-process and MPI communicators ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Communicator.h"

#include <cstdlib>
#include <cstring>
#include <numeric>

#ifdef FLOW_HAVE_MPI
// The C API only (Open MPI's mpi.h pulls in C++ bindings otherwise).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

using namespace flow::runtime;

Group::~Group() = default;
Communicator::~Communicator() = default;

namespace {

/// A group of one: every collective is a copy.
class SelfGroup : public Group {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allReduce(void *, size_t, DType, Reduction) override {
    return Status::ok();
  }
  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    if (counts[0] && send != recv)
      std::memmove(recv, send, counts[0]);
    return Status::ok();
  }
  Status reduceScatter(const void *send, void *recv,
                       const std::vector<size_t> &counts, DType dtype,
                       Reduction) override {
    size_t bytes = counts[0] * dtypeSize(dtype);
    if (bytes && send != recv)
      std::memmove(recv, send, bytes);
    return Status::ok();
  }
  Status allToAll(const void *send, const std::vector<size_t> &sendCounts,
                  void *recv, const std::vector<size_t> &) override {
    if (sendCounts[0] && send != recv)
      std::memmove(recv, send, sendCounts[0]);
    return Status::ok();
  }
};

class SingleProcess : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  StatusOr<std::unique_ptr<Group>> split(int, int) override {
    return std::unique_ptr<Group>(new SelfGroup());
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

} // namespace

std::unique_ptr<Communicator> flow::runtime::createSingleProcessCommunicator() {
  return std::make_unique<SingleProcess>();
}

bool flow::runtime::launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

#ifndef FLOW_HAVE_MPI

bool flow::runtime::haveMpi() { return false; }

StatusOr<std::shared_ptr<Communicator>> flow::runtime::mpiWorld() {
  return Status::error("this Flow runtime was built without MPI (install "
                       "libopenmpi-dev and rebuild)");
}

#else

namespace {

Status mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(std::string("MPI ") + what + " failed: " +
                       std::string(text, length));
}

bool mpiType(DType dtype, MPI_Datatype &out) {
  switch (dtype) {
  case DType::F32:
    out = MPI_FLOAT;
    return true;
  case DType::I64:
    out = MPI_INT64_T;
    return true;
  case DType::I32:
    out = MPI_INT32_T;
    return true;
  default:
    return false;
  }
}

Status reductionArgs(DType dtype, Reduction op, MPI_Datatype &type,
                     MPI_Op &mpiOp) {
  if (!mpiType(dtype, type))
    return Status::error(std::string("reductions over ") + dtypeName(dtype) +
                         " tensors are not supported yet (f32, i64, i32)");
  mpiOp = op == Reduction::Max ? MPI_MAX : MPI_SUM;
  return Status::ok();
}

std::vector<int> toInts(const std::vector<size_t> &counts,
                        std::vector<int> &displs) {
  std::vector<int> out(counts.size());
  displs.assign(counts.size(), 0);
  long long offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    out[i] = static_cast<int>(counts[i]);
    displs[i] = static_cast<int>(offset);
    offset += static_cast<long long>(counts[i]);
  }
  return out;
}

class MpiGroup : public Group {
public:
  explicit MpiGroup(MPI_Comm comm) : comm(comm) {
    MPI_Comm_rank(comm, &myRank);
    MPI_Comm_size(comm, &mySize);
  }
  ~MpiGroup() override {
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }

  Status allReduce(void *data, size_t count, DType dtype,
                   Reduction op) override {
    MPI_Datatype type;
    MPI_Op mpiOp;
    if (Status s = reductionArgs(dtype, op, type, mpiOp); !s)
      return s;
    int rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), type,
                           mpiOp, comm);
    return rc == MPI_SUCCESS ? Status::ok() : mpiError("all-reduce", rc);
  }
  Status allGather(const void *send, void *recv,
                   const std::vector<size_t> &counts) override {
    std::vector<int> displs;
    std::vector<int> c = toInts(counts, displs);
    int rc = MPI_Allgatherv(send, c[myRank], MPI_BYTE, recv, c.data(),
                            displs.data(), MPI_BYTE, comm);
    return rc == MPI_SUCCESS ? Status::ok() : mpiError("all-gather", rc);
  }
  Status reduceScatter(const void *send, void *recv,
                       const std::vector<size_t> &counts, DType dtype,
                       Reduction op) override {
    MPI_Datatype type;
    MPI_Op mpiOp;
    if (Status s = reductionArgs(dtype, op, type, mpiOp); !s)
      return s;
    std::vector<int> displs;
    std::vector<int> c = toInts(counts, displs);
    int rc = MPI_Reduce_scatter(send, recv, c.data(), type, mpiOp, comm);
    return rc == MPI_SUCCESS ? Status::ok() : mpiError("reduce-scatter", rc);
  }
  Status allToAll(const void *send, const std::vector<size_t> &sendCounts,
                  void *recv, const std::vector<size_t> &recvCounts) override {
    std::vector<int> sd, rd;
    std::vector<int> sc = toInts(sendCounts, sd), rc_ = toInts(recvCounts, rd);
    int rc = MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv,
                           rc_.data(), rd.data(), MPI_BYTE, comm);
    return rc == MPI_SUCCESS ? Status::ok() : mpiError("all-to-all", rc);
  }

private:
  MPI_Comm comm;
  int myRank = 0, mySize = 1;
};

class MpiWorld : public Communicator {
public:
  MpiWorld() {
    MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
    MPI_Comm_size(MPI_COMM_WORLD, &mySize);
  }
  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  StatusOr<std::unique_ptr<Group>> split(int color, int key) override {
    MPI_Comm comm;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm);
    if (rc != MPI_SUCCESS)
      return mpiError("communicator split", rc);
    return std::unique_ptr<Group>(new MpiGroup(comm));
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

private:
  int myRank = 0, mySize = 1;
};

void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

} // namespace

bool flow::runtime::haveMpi() { return true; }

StatusOr<std::shared_ptr<Communicator>> flow::runtime::mpiWorld() {
  static std::shared_ptr<Communicator> world;
  if (world)
    return world;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS)
      return mpiError("initialization", rc);
    // Errors come back as codes (reported as Flow errors), not aborts.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::atexit(finalizeMpi);
  }
  world = std::make_shared<MpiWorld>();
  return world;
}

#endif
