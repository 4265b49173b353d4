//===- ThreadPool.cpp - A fixed pool of worker threads --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/ThreadPool.h"

#include <system_error>

#include <sched.h>

using namespace flow::runtime;

namespace {
/// The pool whose job this thread is running, to detect nested loops.
thread_local const ThreadPool *currentPool = nullptr;

/// Sets currentPool for the lifetime of the guard.
class CurrentPoolGuard {
public:
  explicit CurrentPoolGuard(const ThreadPool *pool) : saved(currentPool) {
    currentPool = pool;
  }
  ~CurrentPoolGuard() { currentPool = saved; }

private:
  const ThreadPool *saved;
};
} // namespace

int ThreadPool::hardwareThreads() {
  // The CPUs this process may run on (a container or taskset may allow fewer
  // than the machine has).
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0)
    threads = hardwareThreads();
  workers.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) {
    try {
      workers.emplace_back([this] { workerLoop(); });
    } catch (const std::system_error &) {
      break; // Run with the threads we got.
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeWorkers.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

void ThreadPool::parallelFor(int64_t n,
                             const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  if (workers.empty() || n == 1 || currentPool == this) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex);
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = &fn;
    jobSize = n;
    nextIndex.store(0, std::memory_order_relaxed);
    busyWorkers = workers.size();
    ++generation;
  }
  wakeWorkers.notify_all();
  work();
  std::unique_lock<std::mutex> lock(mutex);
  jobDone.wait(lock, [&] { return busyWorkers == 0; });
  job = nullptr;
}

void ThreadPool::work() {
  CurrentPoolGuard guard(this);
  for (int64_t i = nextIndex.fetch_add(1, std::memory_order_relaxed);
       i < jobSize; i = nextIndex.fetch_add(1, std::memory_order_relaxed))
    (*job)(i);
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    wakeWorkers.wait(lock, [&] { return stopping || generation != seen; });
    if (stopping)
      return;
    seen = generation;
    // job and jobSize were written under the mutex before generation changed,
    // and stay put until every worker has reported back.
    lock.unlock();
    work();
    lock.lock();
    if (--busyWorkers == 0)
      jobDone.notify_one();
  }
}
