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
// makes MPI abort the job (Open MPI's default). A peer that stops (a
// SIGSTOP, a deadlock, an endless loop) is caught by a timeout: the MPI
// collectives are non-blocking requests polled against a deadline (so
// are barriers at the start and end of the job and before communicator
// splits), and when time runs out the waiting ranks ask each other over a
// side channel who is still there; the lowest live one prints a line
// naming the rank(s) that did not answer and aborts the job (MPI_Abort).
// A watchdog thread ends a process whose MPI_Init (or another blocking
// MPI call) outlives the timeout. So no rank waits forever.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_COMMUNICATOR_H
#define FLOW_RUNTIME_COMMUNICATOR_H

#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <cstddef>
#include <memory>
#include <string>
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

  /// Whether the primitives may be called from a thread other than the
  /// one that made the group (one thread at a time): then the runtime runs
  /// asynchronous collectives on a communication thread while the next
  /// commands compute; otherwise where they start. MPI allows it at
  /// MPI_THREAD_SERIALIZED or above.
  virtual bool callableFromAnyThread() const { return false; }

  /// An error the transport found after a call had returned (NCCL's
  /// asynchronous errors: a peer that failed, a broken connection); ok
  /// where there is none or the transport reports errors only as calls
  /// return.
  virtual Status asyncError() { return Status::ok(); }
  /// Ends the group's queued work after a failure or a timeout, so that no
  /// member waits on it forever (ncclCommAbort); the group is unusable
  /// after. Nothing where a call's work never outlives its return.
  virtual void abort() {}

  /// The bytes of tensor data this member has handed to its transport
  /// (MPI, NCCL, a copy for a group of one) in collectives so far, counted
  /// by the implementation at each call it makes, rounds of a large
  /// collective included: an all-reduce's buffer, what an all-gather
  /// receives, what a reduce-scatter or an all-to-all sends. Control
  /// messages (an all-to-all's agreement on its rounds) are not data.
  uint64_t bytesPassed() const { return passed; }

protected:
  void countBytes(uint64_t bytes) { passed += bytes; }

private:
  uint64_t passed = 0;
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

/// Seconds a collective (or the start of an MPI job) waits for its peers
/// unless told otherwise. Long enough for any step of a real model and
/// for a slow start on a loaded machine (a false alarm ends a healthy job),
/// short enough that a stuck job gives its nodes back within minutes.
constexpr double kDefaultCollectiveTimeout = 300;

/// The environment variable that sets the timeout (seconds, 0: none).
constexpr const char *kCollectiveTimeoutVariable = "FLOW_COLLECTIVE_TIMEOUT";

/// Parses a timeout: a non-negative number of seconds (0: wait forever).
StatusOr<double> parseCollectiveTimeout(const std::string &text);

/// The timeout FLOW_COLLECTIVE_TIMEOUT sets, or kDefaultCollectiveTimeout
/// when it is unset; an error when it is not a valid timeout.
StatusOr<double> collectiveTimeoutFromEnvironment();

struct MpiOptions {
  /// Seconds every collective, the start of the job and its end may wait
  /// for the peers before the job is ended with an error; 0 waits
  /// forever; negative: FLOW_COLLECTIVE_TIMEOUT, or the default.
  double timeout = -1;
  /// Starts the line printed when the timeout passes ("flow-run").
  std::string programName = "flow";
};

/// The MPI world (initializing MPI if needed), or an error when the
/// runtime has no MPI. Every call sets the world's timeout and program
/// name from `options`.
StatusOr<std::shared_ptr<Communicator>>
mpiWorld(const MpiOptions &options = {});

/// True when this process was started by an MPI launcher (mpirun).
bool launchedByMpi();

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_COMMUNICATOR_H
