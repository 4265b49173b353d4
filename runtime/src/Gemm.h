//===- Gemm.h - Flow's own f32 GEMM micro-kernels ---------------*- C++ -*-===//
//
// Part of the Flow project.
//
// C = op(A) op(B), summed in f32, row-major, in the BLIS structure: op(B)
// packed in panels (once per session when B is a constant), op(A) read in
// place (copied per block when transposed), and a register-blocked
// micro-kernel over them. Three kernel sets: AVX2 and FMA (f32, 6 x 16,
// twelve ymm accumulators), AVX-512 (f32, 8 x 48, twenty-four zmm
// accumulators) and AVX-512 BF16 (bf16 A and B, f32 C, 8 x 48: each
// vdpbf16ps adds the products of two consecutive k to 16 columns); the
// panel width is the kernel's. Single-threaded: the session cuts a GEMM
// into pieces on its own pool (runGemm in Session.cpp), each a call here.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_GEMM_H
#define FLOW_RUNTIME_SRC_GEMM_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace flow {
namespace runtime {
namespace detail {

/// The instruction sets Flow's kernels are written for. Avx512Bf16's
/// kernels read bf16 A and B (as their bits); the others f32.
enum class GemmIsa { Avx2, Avx512, Avx512Bf16 };

/// Whether this CPU (and its OS) runs \p isa's kernels: AVX2 and FMA,
/// AVX-512F, or AVX-512F with AVX512_BF16.
bool cpuRunsGemmIsa(GemmIsa isa);
/// Whether \p isa's kernels read bf16 operands (else f32).
inline bool gemmIsaReadsBf16(GemmIsa isa) { return isa == GemmIsa::Avx512Bf16; }
/// Columns per packed panel of B for \p isa's kernels (a piece of a split
/// GEMM starts at a multiple of this): 16 or 48.
int gemmPanelColumns(GemmIsa isa);
/// "avx2+fma 6x16", "avx512f 8x48" or "avx512bf16 8x48": the instruction
/// set and register block.
const char *gemmKernelName(GemmIsa isa);

/// The kernels Flow runs (some) GEMMs with f32 operands on here (with
/// \p bf16: bf16 operands), or null when the library runs them all: f32 on
/// AVX-512 where present, else AVX2 and FMA; bf16 on AVX-512 BF16 (each
/// measured faster than the library for constant B and few rows of C,
/// docs/compile-and-run.md). FLOW_GEMM=onednn or openblas turns them off;
/// FLOW_GEMM=flow keeps them on.
const GemmIsa *flowGemmIsa(bool bf16 = false);
/// Flow's f32 kernels run GEMMs whose C has at most this many rows (in all
/// batches); the library runs larger ones. Measured at BERT-base b8's 1024
/// rows: on AVX2 the library was 13% faster; on AVX-512 (Zen 5) the two
/// were level, and the packed copy of B is memory the library does not
/// take. The bf16 kernels have no bound: at 1024 rows they were 5% faster
/// than oneDNN 2.6.3's bf16 GEMM (BERT-base b8 on the same Zen 5).
constexpr int64_t kFlowGemmMaxRows = 256;
/// What runs on Flow's kernels, or why nothing does (for the stats).
std::string flowGemmInfo();

/// Bytes of op(B) (k x n) packed for \p isa: ceil(n / panel) panels (the
/// last one's missing columns zero) for each block of k (for bf16, k
/// rounded up to pairs, the missing row zero).
size_t packedBBytes(GemmIsa isa, int64_t k, int64_t n);
/// Packs op(B) (k x n; B is n x k when transposed; f32, or bf16 bits for a
/// bf16 kernel set) for \p isa into \p out (64-byte aligned,
/// packedBBytes(isa, k, n) bytes): blocks of the GEMM's k-block rows, each
/// holding every panel's rows of that block, so that the panels one piece
/// of C reads in a block are one contiguous stream. bf16 panels hold rows
/// in pairs, interleaved: B[p][j], B[p + 1][j] side by side.
void packB(GemmIsa isa, bool transB, int64_t k, int64_t n, const void *b,
           int64_t ldb, void *out);

/// op(B) as packB wrote it for \p isa.
struct PackedB {
  const void *data;
  int64_t k, n;
  GemmIsa isa;
};

/// C[m x n] (f32) = op(A) (m x k; f32, or bf16 bits for a bf16 kernel set)
/// times columns [firstColumn, firstColumn + n) of \p b (firstColumn a
/// multiple of gemmPanelColumns(b.isa)), on b.isa's kernels.
void gemmPacked(bool transA, int64_t m, int64_t n, int64_t k, const void *a,
                int64_t lda, const PackedB &b, int64_t firstColumn, float *c,
                int64_t ldc);

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_GEMM_H
