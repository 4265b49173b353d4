//===- ThreadPoolTest.cpp - Tests for the thread pool ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace flow::runtime;

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

TEST(ThreadPoolTest, RunsConcurrently) {
  // Every index waits until all have started: only possible when the four
  // run at the same time. The deadline keeps a broken pool from hanging.
  ThreadPool pool(4);
  std::atomic<int> started{0};
  std::atomic<bool> allMet{true};
  pool.parallelFor(4, [&](int64_t) {
    ++started;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 4)
      if (std::chrono::steady_clock::now() > deadline) {
        allMet = false;
        return;
      }
  });
  EXPECT_TRUE(allMet.load());
}

TEST(ThreadPoolTest, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int iteration = 0; iteration < 300; ++iteration) {
        std::atomic<int64_t> sum{0};
        pool.parallelFor(50, [&](int64_t i) { sum += i; });
        if (sum.load() != 50 * 49 / 2)
          ++failures;
      }
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPoolTest, NestedLoopsRunSerially) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> counts(16 * 16);
  pool.parallelFor(16, [&](int64_t i) {
    pool.parallelFor(16, [&](int64_t j) { ++counts[i * 16 + j]; });
  });
  for (const std::atomic<int> &count : counts)
    EXPECT_EQ(count.load(), 1);
}

TEST(ThreadPoolTest, CreateAndDestroyMany) {
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(1 + i % 5);
    if (i % 2)
      expectEachIndexOnce(pool, 10);
  }
}

} // namespace
