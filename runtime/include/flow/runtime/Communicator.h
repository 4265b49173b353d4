//===- Communicator.h - Devices talking to each other -----------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A Communicator connects the processes that run one mesh executable, one
// process per device (rank r runs mesh device r, row-major). The runtime
// cuts it into groups, one per set of mesh axes a collective runs over, and
// calls a group's byte-level primitives; packing tensor pieces is the
// runtime's job. Two implementations: a single process (every group has one
// member) and MPI (built when MPI is found; see MpiCommunicator below).
//
// Failures: a primitive that fails returns an error; a peer that dies
// makes MPI abort the job (Open MPI's default), so no rank waits forever.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_COMMUNICATOR_H
#define FLOW_RUNTIME_COMMUNICATOR_H

#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace flow {
namespace runtime {

enum class Reduction { Sum, Max };

/// Some ranks of a communicator, numbered 0..size()-1.
class Group {
public:
  virtual ~Group();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Element-wise reduction of `count` elements in place, result on all.
  virtual Status allReduce(void *data, size_t count, DType dtype,
                           Reduction op) = 0;
  /// Member i contributes `counts[i]` bytes; everyone gets them all,
  /// concatenated in member order, in `recv`.
  virtual Status allGather(const void *send, void *recv,
                           const std::vector<size_t> &counts) = 0;
  /// Reduces the members' `send` (the sum of `counts` elements) and gives
  /// member i its `counts[i]` elements, in order, in `recv`.
  virtual Status reduceScatter(const void *send, void *recv,
                               const std::vector<size_t> &counts, DType dtype,
                               Reduction op) = 0;
  /// Sends `sendCounts[i]` bytes (consecutive in `send`) to member i and
  /// receives `recvCounts[i]` bytes from it (consecutive in `recv`).
  virtual Status allToAll(const void *send,
                          const std::vector<size_t> &sendCounts, void *recv,
                          const std::vector<size_t> &recvCounts) = 0;
};

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Collective over all ranks: ranks with the same `color` form a group,
  /// ordered by `key`.
  virtual StatusOr<std::unique_ptr<Group>> split(int color, int key) = 0;
  /// Ends every process of the job with exit status `code` (after an
  /// error on this one, so that no other waits for it forever).
  [[noreturn]] virtual void abort(int code) = 0;
};

/// One process alone.
std::unique_ptr<Communicator> createSingleProcessCommunicator();

/// True when the runtime was built with MPI.
bool haveMpi();

/// The MPI world (initializing MPI if needed), or an error when the
/// runtime has no MPI.
StatusOr<std::shared_ptr<Communicator>> mpiWorld();

/// True when this process was started by an MPI launcher (mpirun).
bool launchedByMpi();

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_COMMUNICATOR_H
