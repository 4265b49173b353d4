//===- ThreadPool.h - A fixed pool of worker threads ------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime runs a dispatch's workgroups on a ThreadPool. The pool has
// one job at a time: parallelFor hands out indices from a shared counter to
// the workers and to the calling thread, and returns when every index is done.
// Between jobs a worker (and the caller waiting for the workers) spins for a
// short while before it sleeps: a model's commands follow each other within
// microseconds, and waking a sleeping thread costs tens of them
// (FLOW_SPIN_US, read when a pool is made: 100 by default, 0 sleeps at once).
// A job waits only for the workers that joined it before its last index was
// handed out: one that wakes later skips it.
// A pool with more threads than the process has hardware threads never
// spins.
//
// A pool may instead run its loops on the OpenMP team of the libgomp the
// process has loaded (a library that runs on OpenMP, oneDNN, brought it):
// then the threads that run the library's work run every other loop too,
// and no second set of threads waits for work beside the pool's. The team
// waits between loops as libgomp's settings say (GOMP_SPINCOUNT,
// OMP_WAIT_POLICY).
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_THREADPOOL_H
#define FLOW_RUNTIME_THREADPOOL_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace flow {
namespace runtime {

/// A fixed set of threads that run parallel loops. The destructor stops and
/// joins the workers.
class ThreadPool {
public:
  /// Creates a pool that runs loops on \p threads threads in all: the caller
  /// of parallelFor plus threads - 1 workers. 0 (or less) means
  /// hardwareThreads(). If the system refuses to start a worker, the pool runs
  /// with the threads it got. With \p openMpTeam, loops run on the calling
  /// thread's OpenMP team and no workers are started, if this process has
  /// loaded libgomp; if it has not, the pool starts its own workers.
  explicit ThreadPool(int threads = 0, bool openMpTeam = false);
  ~ThreadPool();

  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The number of threads that run a loop, the caller included (>= 1).
  int size() const {
    return team ? teamSize : static_cast<int>(workers.size()) + 1;
  }

  /// True when loops run on OpenMP's team.
  bool onOpenMpTeam() const { return team != nullptr; }

  /// Calls \p fn(i) exactly once for every i in [0, n), spread over the
  /// pool's threads, and returns when all calls have returned. \p fn must not
  /// throw. Calls from several threads are serialized; a call from inside
  /// \p fn (a nested loop on the same pool) runs serially on that thread.
  void parallelFor(int64_t n, const std::function<void(int64_t)> &fn);

  /// The number of hardware threads this process may use (at least 1).
  static int hardwareThreads();

  /// How long a pool's threads spin for the next job before they sleep,
  /// when the pool has no more threads than hardwareThreads():
  /// FLOW_SPIN_US microseconds (100 by default, at most 100000).
  static std::chrono::microseconds spinTime();

private:
  void workerLoop();
  /// Runs indices of the current job until none are left.
  void work();

  /// libgomp's GOMP_parallel when loops run on its team, else null.
  using TeamParallel = void (*)(void (*fn)(void *), void *data,
                                unsigned threads, unsigned flags);
  TeamParallel team = nullptr;
  int teamSize = 1;
  std::vector<std::thread> workers;
  /// How long a thread waiting for work, or for the workers, spins before
  /// it sleeps (0: it sleeps at once).
  std::chrono::microseconds spin{0};
  /// Serializes parallelFor calls.
  std::mutex callMutex;
  /// Guards the job fields below and the condition variables.
  std::mutex mutex;
  std::condition_variable wakeWorkers;
  std::condition_variable jobDone;
  const std::function<void(int64_t)> *job = nullptr;
  int64_t jobSize = 0;
  std::atomic<int64_t> nextIndex{0};
  /// Bumped (under the mutex) for every job; a worker runs each generation
  /// once. Read without the mutex by spinning workers.
  std::atomic<uint64_t> generation{0};
  /// Whether workers may still join the current job (guarded by the
  /// mutex): the caller closes it once every index has been handed out, so
  /// a worker that wakes late (its core busy with another thread) neither
  /// runs nor holds up a job the others have finished.
  bool open = false;
  /// Workers that joined the current job and have not yet finished it.
  std::atomic<size_t> busyWorkers{0};
  std::atomic<bool> stopping{false};
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_THREADPOOL_H
