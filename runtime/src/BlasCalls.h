//===- BlasCalls.h - The BLAS routines the session calls --------*- C++ -*-===//
//
// Part of the Flow project.
//
// Row-major, alpha 1 and beta 0. Call only after loadBlas() succeeded.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_BLASCALLS_H
#define FLOW_RUNTIME_SRC_BLASCALLS_H

#include <cstdint>

namespace flow {
namespace runtime {
namespace detail {

/// C[m x n] = op(A) op(B) for bf16 A and B (raw 16-bit words), summed and
/// written in f32: oneDNN's bf16 GEMM, or (without oneDNN) the operands
/// widened to f32 for the f32 GEMM.
void blasGemmBf16(bool transA, bool transB, int m, int n, int k,
                  const uint16_t *a, int lda, const uint16_t *b, int ldb,
                  float *c, int ldc);
/// C[m x n] = op(A) op(B).
void blasSgemm(bool transA, bool transB, int m, int n, int k, const float *a,
               int lda, const float *b, int ldb, float *c, int ldc);
/// y = op(A) x, A of m x n.
void blasSgemv(bool trans, int m, int n, const float *a, int lda,
               const float *x, float *y);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_BLASCALLS_H
