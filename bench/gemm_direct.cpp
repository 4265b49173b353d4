//===- gemm_direct.cpp - cblas_sgemm called directly, for comparison ------===//
//
// Part of the Flow project.
//
// Times C = A x B (f32, row-major, n x n) through the same OpenBLAS the
// runtime links, with the same thread count: the baseline bench/matmul.py
// compares Flow's GEMM command against.
//
//   gemm_direct N THREADS ITERATIONS WARMUP  ->  prints the median ms
//
//===----------------------------------------------------------------------===//

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gemm_direct N THREADS ITERATIONS WARMUP\n");
    return 2;
  }
  int n = std::atoi(argv[1]), threads = std::atoi(argv[2]),
      iterations = std::atoi(argv[3]), warmup = std::atoi(argv[4]);
  openblas_set_num_threads(threads);
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f),
      c(size_t(n) * n);
  std::vector<double> times;
  for (int i = 0; i < warmup + iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    auto end = std::chrono::steady_clock::now();
    if (i >= warmup)
      times.push_back(std::chrono::duration<double, std::milli>(end - start)
                          .count());
  }
  std::sort(times.begin(), times.end());
  std::printf("%.6f\n", times[times.size() / 2]);
  return 0;
}
