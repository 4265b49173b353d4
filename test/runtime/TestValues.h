//===- TestValues.h - Random tensors, bf16, thread counts -----*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TEST_RUNTIME_TESTVALUES_H
#define FLOW_TEST_RUNTIME_TESTVALUES_H

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

namespace flow {
namespace test {

/// \p n values uniform in [-1, 1), the same for the same \p seed.
inline std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// \p v rounded to bf16 (nearest, ties to even), as f32.
inline std::vector<float> roundedToBf16(std::vector<float> v) {
  for (float &x : v) {
    uint32_t word;
    std::memcpy(&word, &x, sizeof word);
    word = (word + 0x7fffu + ((word >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&x, &word, sizeof x);
  }
  return v;
}

/// The threads this process has now (-1 where /proc cannot say).
inline int threadCount() {
  std::error_code error;
  int count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end;
       !error && it != end; it.increment(error))
    ++count;
  return error ? -1 : count;
}

} // namespace test
} // namespace flow

#endif // FLOW_TEST_RUNTIME_TESTVALUES_H
