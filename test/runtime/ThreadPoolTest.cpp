//===- ThreadPoolTest.cpp - Tests for the thread pool ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/ThreadPool.h"

#include "TestValues.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace flow::runtime;
using flow::test::threadCount;

namespace {

/// Runs parallelFor(n) and checks that every index ran exactly once.
void expectEachIndexOnce(ThreadPool &pool, int64_t n) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  pool.parallelFor(n, [&](int64_t i) {
    counts[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  });
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += counts[static_cast<size_t>(i)].load() != 1;
  EXPECT_EQ(wrong, 0) << "n = " << n << ", threads = " << pool.size();
}

TEST(ThreadPoolTest, Size) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_EQ(ThreadPool(0).size(), ThreadPool::hardwareThreads());
  EXPECT_EQ(ThreadPool(-5).size(), ThreadPool::hardwareThreads());
  EXPECT_GE(ThreadPool::hardwareThreads(), 1);
}

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8, 33}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 64, 1000, 100000})
      expectEachIndexOnce(pool, n);
  }
}

TEST(ThreadPoolTest, ManyIterations) {
  ThreadPool pool(4);
  std::mt19937 rng(42);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    int64_t n = std::uniform_int_distribution<int64_t>(0, 40)(rng);
    std::atomic<int64_t> sum{0};
    pool.parallelFor(n, [&](int64_t i) { sum += i + 1; });
    ASSERT_EQ(sum.load(), n * (n + 1) / 2) << "iteration " << iteration;
  }
}

// Jobs far apart: the workers have stopped spinning and sleep, and each job
// wakes them. Jobs back to back: they find the next job while spinning.
// Both with as many threads as hardware threads (spinning) and with more
// (never spinning).
TEST(ThreadPoolTest, JobsAfterSleepAndBackToBack) {
  for (int threads : {ThreadPool::hardwareThreads(),
                      2 * ThreadPool::hardwareThreads() + 1}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 5; ++round) {
      expectEachIndexOnce(pool, 97);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      for (int burst = 0; burst < 200; ++burst)
        expectEachIndexOnce(pool, 5);
    }
  }
}

TEST(ThreadPoolTest, NegativeCountRunsNothing) {
  ThreadPool pool(2);
  bool ran = false;
  pool.parallelFor(-3, [&](int64_t) { ran = true; });
  EXPECT_FALSE(ran);
}

/// Checks that \p pool runs its size() indices at the same time: every
/// index waits until all have started. The deadline keeps a broken pool
/// from hanging.
void expectRunsConcurrently(ThreadPool &pool) {
  const int n = pool.size();
  std::atomic<int> started{0};
  std::atomic<bool> allMet{true};
  pool.parallelFor(n, [&](int64_t) {
    ++started;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < n)
      if (std::chrono::steady_clock::now() > deadline) {
        allMet = false;
        return;
      }
  });
  EXPECT_TRUE(allMet.load());
}

/// Calls \p pool's loops from \p callers threads at once, and checks
/// every loop's result.
void expectConcurrentCallersSerialized(ThreadPool &pool, int callers) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < callers; ++t)
    threads.emplace_back([&] {
      for (int iteration = 0; iteration < 300; ++iteration) {
        std::atomic<int64_t> sum{0};
        pool.parallelFor(50, [&](int64_t i) { sum += i; });
        if (sum.load() != 50 * 49 / 2)
          ++failures;
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

/// Checks that a loop inside one of \p pool's loops runs every index once.
void expectNestedLoopsRunSerially(ThreadPool &pool) {
  std::vector<std::atomic<int>> counts(16 * 16);
  pool.parallelFor(16, [&](int64_t i) {
    pool.parallelFor(16, [&](int64_t j) { ++counts[i * 16 + j]; });
  });
  for (const std::atomic<int> &count : counts)
    EXPECT_EQ(count.load(), 1);
}

TEST(ThreadPoolTest, RunsConcurrently) {
  ThreadPool pool(4);
  expectRunsConcurrently(pool);
}

TEST(ThreadPoolTest, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  expectConcurrentCallersSerialized(pool, 4);
}

TEST(ThreadPoolTest, NestedLoopsRunSerially) {
  ThreadPool pool(4);
  expectNestedLoopsRunSerially(pool);
}

TEST(ThreadPoolTest, CreateAndDestroyMany) {
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(1 + i % 5);
    if (i % 2)
      expectEachIndexOnce(pool, 10);
  }
}

/// Loads libgomp into this process (false on a machine without it).
bool loadOpenMp() {
  return ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
}

TEST(ThreadPoolTest, OwnThreadsUntilOpenMpIsLoaded) {
  if (::dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD))
    GTEST_SKIP() << "libgomp was loaded before the test";
  ThreadPool own(2, /*openMpTeam=*/true);
  EXPECT_FALSE(own.onOpenMpTeam());
  EXPECT_EQ(own.size(), 2);
  expectEachIndexOnce(own, 100);
  if (!loadOpenMp())
    GTEST_SKIP() << "no libgomp on this machine";
  ThreadPool team(2, /*openMpTeam=*/true);
  EXPECT_TRUE(team.onOpenMpTeam());
  ThreadPool stillOwn(2);
  EXPECT_FALSE(stillOwn.onOpenMpTeam());
}

TEST(ThreadPoolTest, OnOpenMpTeam) {
  if (!loadOpenMp())
    GTEST_SKIP() << "no libgomp on this machine";
  int before = threadCount();
  ThreadPool pool(4, /*openMpTeam=*/true);
  ASSERT_TRUE(pool.onOpenMpTeam());
  EXPECT_EQ(pool.size(), 4);
  EXPECT_EQ(threadCount(), before) << "a pool on the team starts no workers";
  for (int64_t n : {1, 2, 3, 4, 7, 1000})
    expectEachIndexOnce(pool, n);
  expectRunsConcurrently(pool);
  expectNestedLoopsRunSerially(pool);
  expectConcurrentCallersSerialized(pool, 3);
}

} // namespace
