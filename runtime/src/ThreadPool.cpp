//===- ThreadPool.cpp - A fixed pool of worker threads --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <system_error>

#include <dlfcn.h>
#include <sched.h>

using namespace flow::runtime;

namespace {
/// The pool whose job this thread is running, to detect nested loops.
thread_local const ThreadPool *currentPool = nullptr;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until \p done() holds or \p time has passed; returns done().
template <typename Done>
bool spinUntil(std::chrono::microseconds time, Done done) {
  if (time.count() == 0)
    return done();
  auto deadline = std::chrono::steady_clock::now() + time;
  for (unsigned i = 1;; ++i) {
    if (done())
      return true;
    relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline)
        return done();
      // Hands the core to a thread of another process that is waiting
      // for it (a busy machine); returns at once on an idle one.
      sched_yield();
    }
  }
}

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

/// FLOW_SPIN_US: 0 on a machine shared with other busy processes (a
/// sleeping thread is woken ahead of them, a spinning one waits its turn).
/// Never when the pool has more threads than the process has hardware
/// threads: a spinning thread would hold a core that a thread with work is
/// waiting for.
std::chrono::microseconds ThreadPool::spinTime() {
  const char *value = std::getenv("FLOW_SPIN_US");
  char *end = nullptr;
  long us = value ? std::strtol(value, &end, 10) : 100;
  if (value && (end == value || *end != '\0' || us < 0))
    us = 100; // not a count of microseconds: the default
  return std::chrono::microseconds(std::min(us, 100000L));
}

int ThreadPool::hardwareThreads() {
  // The CPUs this process may run on (a container or taskset may allow fewer
  // than the machine has).
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

namespace {
/// libgomp's GOMP_parallel (what `#pragma omp parallel num_threads(n)`
/// compiles to: GCC's OpenMP ABI, GOMP_4.0 and later) when this process
/// has loaded libgomp, else null.
void (*loadedOpenMpParallel())(void (*)(void *), void *, unsigned, unsigned) {
  using Parallel = void (*)(void (*)(void *), void *, unsigned, unsigned);
  // Asked again until found: libgomp may be loaded later (with oneDNN).
  static std::atomic<Parallel> parallel{nullptr};
  if (Parallel found = parallel.load())
    return found;
  // Only a copy already loaded: the pool shares its team with the library
  // that brought it (kept loaded: the handle is never closed).
  void *handle = ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return nullptr;
  auto found = reinterpret_cast<Parallel>(::dlsym(handle, "GOMP_parallel"));
  parallel.store(found);
  return found;
}

/// One loop on OpenMP's team: every team thread takes indices from `next`.
struct TeamJob {
  const ThreadPool *pool;
  const std::function<void(int64_t)> *fn;
  int64_t size;
  std::atomic<int64_t> next{0};
};

void runTeamJob(void *data) {
  auto *job = static_cast<TeamJob *>(data);
  CurrentPoolGuard guard(job->pool);
  for (int64_t i = job->next.fetch_add(1, std::memory_order_relaxed);
       i < job->size; i = job->next.fetch_add(1, std::memory_order_relaxed))
    (*job->fn)(i);
}
} // namespace

ThreadPool::ThreadPool(int threads, bool openMpTeam) {
  if (threads <= 0)
    threads = hardwareThreads();
  if (openMpTeam)
    team = loadedOpenMpParallel();
  if (team) {
    teamSize = threads;
    return;
  }
  if (threads <= hardwareThreads())
    spin = spinTime();
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
    stopping.store(true);
  }
  wakeWorkers.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

void ThreadPool::parallelFor(int64_t n,
                             const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  if (size() == 1 || n == 1 || currentPool == this) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> call(callMutex);
  if (team) {
    TeamJob job{this, &fn, n};
    team(&runTeamJob, &job,
         static_cast<unsigned>(std::min<int64_t>(n, teamSize)), 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = &fn;
    jobSize = n;
    nextIndex.store(0, std::memory_order_relaxed);
    busyWorkers.store(0);
    open = true;
    // Publishes the job to spinning workers (they read it after seeing the
    // new generation) and to sleeping ones (under the mutex).
    generation.fetch_add(1);
  }
  wakeWorkers.notify_all();
  work();
  {
    // Every index is handed out: workers that have not joined yet never
    // will; the ones that did may still be running theirs.
    std::lock_guard<std::mutex> lock(mutex);
    open = false;
  }
  if (!spinUntil(spin, [&] { return busyWorkers.load() == 0; })) {
    std::unique_lock<std::mutex> lock(mutex);
    jobDone.wait(lock, [&] { return busyWorkers.load() == 0; });
  }
  std::lock_guard<std::mutex> lock(mutex);
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
  auto ready = [&] { return stopping.load() || generation.load() != seen; };
  while (true) {
    if (!spinUntil(spin, ready)) {
      std::unique_lock<std::mutex> lock(mutex);
      wakeWorkers.wait(lock, ready);
    }
    if (stopping.load())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      seen = generation.load();
      // The caller ran the job to its end without this worker.
      if (!open)
        continue;
      busyWorkers.fetch_add(1);
    }
    // job and jobSize were written before generation changed, and stay put
    // until every worker that joined has reported back.
    work();
    if (busyWorkers.fetch_sub(1) == 1) {
      // Under the mutex, so that a caller between its check and its wait
      // cannot miss the notification.
      std::lock_guard<std::mutex> lock(mutex);
      jobDone.notify_one();
    }
  }
}
