//===- Blas.cpp - Loading the BLAS and choosing its kernels ---------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Blas.h"
#include "Bf16.h"
#include "BlasCalls.h"
#include "Gemm.h"
#include "Convolution.h"
#include "flow/runtime/CpuFeatures.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <mutex>
#include <string>

#ifndef FLOW_HAVE_OPENBLAS
#include <cblas.h>
#endif

using namespace flow::runtime;

std::string flow::runtime::chooseOpenBlasCore(bool avx2, bool fma,
                                              bool avx512f, bool avx512bw,
                                              bool avx512vl, bool avx512dq,
                                              bool avx512bf16) {
  // OpenBLAS's SkylakeX kernels need AVX-512 F, BW, VL and DQ; Cooperlake
  // adds BF16 (the same SGEMM); Haswell needs AVX2 and FMA.
  bool skylakeX = avx512f && avx512bw && avx512vl && avx512dq && avx2 && fma;
  if (skylakeX && avx512bf16)
    return "Cooperlake";
  if (skylakeX)
    return "SkylakeX";
  if (avx2 && fma)
    return "Haswell";
  return "";
}

namespace {

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false,
       avx512vl = false, avx512dq = false, avx512bf16 = false;

  std::string names() const {
    std::string s;
    auto add = [&](bool on, const char *name) {
      if (on)
        s += s.empty() ? name : std::string(" ") + name;
    };
    add(avx2, "avx2");
    add(fma, "fma");
    add(avx512f, "avx512f");
    add(avx512bw, "avx512bw");
    add(avx512vl, "avx512vl");
    add(avx512dq, "avx512dq");
    add(avx512bf16, "avx512_bf16");
    return s.empty() ? "none of avx2, fma, avx512" : s;
  }
};

/// What the CPU and the OS (which must save the wider registers) support.
CpuFeatures detectCpu() {
  CpuFeatures f;
  f.avx2 = cpuHasFeature("avx2");
  f.fma = cpuHasFeature("fma");
  f.avx512f = cpuHasFeature("avx512f");
  f.avx512bw = cpuHasFeature("avx512bw");
  f.avx512vl = cpuHasFeature("avx512vl");
  f.avx512dq = cpuHasFeature("avx512dq");
  f.avx512bf16 = cpuHasFeature("avx512bf16");
  return f;
}

/// True if OpenBLAS kernel set `name` uses AVX-512 / AVX2.
bool isAvx512Core(const std::string &name) {
  return name == "SkylakeX" || name == "Cooperlake" ||
         name == "SapphireRapids";
}
bool isAvx2Core(const std::string &name) {
  return isAvx512Core(name) || name == "Haswell" || name == "Zen";
}

struct Loaded {
  Status status = Status::ok();
  BlasInfo info;
#ifdef FLOW_HAVE_OPENBLAS
  void (*sgemm)(int, int, int, int, int, int, float, const float *, int,
                const float *, int, float, float *, int) = nullptr;
  void (*sgemv)(int, int, int, int, float, const float *, int, const float *,
                int, float, float *, int) = nullptr;
  void (*setThreads)(int) = nullptr;
  /// oneDNN's SGEMM (row-major) and its OpenMP thread count, when oneDNN
  /// is the GEMM library.
  int (*dnnlSgemm)(char, char, int64_t, int64_t, int64_t, float,
                   const float *, int64_t, const float *, int64_t, float,
                   float *, int64_t) = nullptr;
  void (*ompSetThreads)(int) = nullptr;
  /// oneDNN's bf16 x bf16 -> f32 GEMM (row-major).
  int (*dnnlGemmBf16)(char, char, int64_t, int64_t, int64_t, float,
                      const uint16_t *, int64_t, const uint16_t *, int64_t,
                      float, float *, int64_t) = nullptr;
#endif
};

#ifdef FLOW_HAVE_OPENBLAS
/// oneDNN's name for its effective instruction set.
const char *isaName(int isa) {
  switch (isa) {
  case 0x7:
    return "avx2";
  case 0x407:
    return "avx2_vnni";
  case 0x27:
    return "avx512_core";
  case 0x67:
    return "avx512_core_vnni";
  case 0xe7:
    return "avx512_core_bf16";
  case 0x3e7:
    return "avx512_core_amx";
  default:
    return "sse41/avx";
  }
}

/// Makes oneDNN's JIT SGEMM the GEMM library when it is installed, unless
/// FLOW_GEMM=openblas: measured 1.1 to 1.6x faster than OpenBLAS 0.3.21's
/// best kernels on this project's machine for the shapes of BERT and
/// ResNet-50 (docs/compile-and-run.md). OpenBLAS keeps the matrix-vector
/// products (m = 1).
void loadOneDnn(Loaded &l) {
  const char *choice = std::getenv("FLOW_GEMM");
  if (choice && std::string(choice) == "openblas")
    return;
  void *handle = detail::openOneDnn();
  if (!handle) {
    if (choice && std::string(choice) == "onednn")
      std::fprintf(stderr,
                   "flow: warning: FLOW_GEMM=onednn but libdnnl.so.2 "
                   "cannot be loaded; GEMMs run on OpenBLAS\n");
    return;
  }
  auto sgemm = reinterpret_cast<decltype(l.dnnlSgemm)>(
      ::dlsym(handle, "dnnl_sgemm"));
  auto omp = reinterpret_cast<void (*)(int)>(
      ::dlsym(handle, "omp_set_num_threads"));
  struct Version {
    int major, minor, patch;
    const char *hash;
    unsigned cpuRuntime, gpuRuntime;
  };
  auto version = reinterpret_cast<const Version *(*)()>(
      ::dlsym(handle, "dnnl_version"));
  auto isa = reinterpret_cast<int (*)()>(
      ::dlsym(handle, "dnnl_get_effective_cpu_isa"));
  if (!sgemm || !version || !isa)
    return;
  l.dnnlSgemm = sgemm;
  l.ompSetThreads = omp;
  l.dnnlGemmBf16 = reinterpret_cast<decltype(l.dnnlGemmBf16)>(
      ::dlsym(handle, "dnnl_gemm_bf16bf16f32"));
  // oneDNN answers dnnl_unimplemented on CPUs it has no bf16 GEMM for
  // (without AVX-512): asked once, on a 1x1x1 product, on one thread.
  if (l.dnnlGemmBf16) {
    if (omp)
      omp(1);
    const uint16_t one = 0x3f80; // 1.0 in bf16
    float product = 0.0f;
    if (l.dnnlGemmBf16('N', 'N', 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f,
                       &product, 1) != 0 /* dnnl_success */ ||
        product != 1.0f)
      l.dnnlGemmBf16 = nullptr;
  }
  const Version *v = version();
  char text[64];
  std::snprintf(text, sizeof(text), "oneDNN %d.%d.%d", v->major, v->minor,
                v->patch);
  l.info.gemmLibrary = text;
  l.info.gemmKernels = std::string(isaName(isa())) + " JIT";
  l.info.bf16Gemm = l.dnnlGemmBf16
                        ? std::string(text) + " gemm_bf16bf16f32"
                        : "operands widened to f32 for the f32 GEMM (" +
                              std::string(text) +
                              " has no bf16 GEMM for this CPU)";
}

Loaded load() {
  Loaded l;
  CpuFeatures cpu = detectCpu();
  const char *user = std::getenv("OPENBLAS_CORETYPE");
  std::string chosen;
  if (user && *user) {
    l.info.chosenBy = std::string("OPENBLAS_CORETYPE=") + user;
  } else {
    chosen = chooseOpenBlasCore(cpu.avx2, cpu.fma, cpu.avx512f, cpu.avx512bw,
                                cpu.avx512vl, cpu.avx512dq, cpu.avx512bf16);
    l.info.chosenBy = chosen.empty()
                          ? "OpenBLAS's own choice (the CPU has " +
                                cpu.names() + ")"
                          : "chosen by Flow from the CPU's features (" +
                                cpu.names() + ")";
    // For this load only: the process's environment is left as it was.
    if (!chosen.empty())
      ::setenv("OPENBLAS_CORETYPE", chosen.c_str(), 1);
  }
  void *handle = nullptr;
  std::string errors;
  for (const char *name : {"libopenblas.so.0", FLOW_OPENBLAS_PATH}) {
    handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    const char *e = ::dlerror();
    errors += std::string("\n  ") + (e ? e : name);
  }
  if (!chosen.empty())
    ::unsetenv("OPENBLAS_CORETYPE");
  if (!handle) {
    l.status = Status::error("cannot load OpenBLAS for the GEMMs (install "
                             "libopenblas0):" +
                             errors);
    return l;
  }
  auto sym = [&](const char *name) { return ::dlsym(handle, name); };
  l.sgemm = reinterpret_cast<decltype(l.sgemm)>(sym("cblas_sgemm"));
  l.sgemv = reinterpret_cast<decltype(l.sgemv)>(sym("cblas_sgemv"));
  l.setThreads =
      reinterpret_cast<decltype(l.setThreads)>(sym("openblas_set_num_threads"));
  auto corename = reinterpret_cast<char *(*)()>(sym("openblas_get_corename"));
  auto config = reinterpret_cast<char *(*)()>(sym("openblas_get_config"));
  if (!l.sgemm || !l.sgemv || !l.setThreads || !corename || !config) {
    l.status = Status::error("the OpenBLAS library that was loaded lacks "
                             "cblas_sgemm, cblas_sgemv or its OpenBLAS "
                             "functions");
    return l;
  }
  // Flow's thread pool runs GEMMs in pieces, each on one thread: OpenBLAS
  // runs on the calling thread only.
  l.setThreads(1);
  l.info.library = config();
  l.info.bf16Gemm = "operands widened to f32 for the f32 GEMM";
  l.info.kernels = corename();
  l.info.gemmLibrary = l.info.library;
  l.info.gemmKernels = l.info.kernels;
  if (l.info.kernels.empty())
    l.info.kernels = "unknown";
  bool avx512 = cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq;
  if ((avx512 && !isAvx512Core(l.info.kernels)) ||
      (cpu.avx2 && cpu.fma && !isAvx2Core(l.info.kernels)))
    l.info.warning = "OpenBLAS runs its " + l.info.kernels +
                     " kernels, slower than this CPU allows (" + cpu.names() +
                     ")" +
                     (user && *user ? "; unset OPENBLAS_CORETYPE to let Flow "
                                      "choose"
                                    : "");
  // Never silently slow: say it once per process.
  if (!l.info.warning.empty())
    std::fprintf(stderr, "flow: warning: %s\n", l.info.warning.c_str());
  loadOneDnn(l);
  return l;
}
#else
Loaded load() {
  Loaded l;
  l.info.library = "a CBLAS linked at build time (not OpenBLAS)";
  l.info.kernels = "unknown";
  l.info.gemmLibrary = l.info.library;
  l.info.gemmKernels = l.info.kernels;
  l.info.bf16Gemm = "operands widened to f32 for the f32 GEMM";
  l.info.chosenBy = "the library";
  return l;
}
#endif

const Loaded &loaded() {
  static const Loaded l = load();
  return l;
}

} // namespace

StatusOr<BlasInfo> flow::runtime::loadBlas() {
  const Loaded &l = loaded();
  if (!l.status)
    return l.status;
  BlasInfo info = l.info;
  info.convLibrary = detail::convLibrary();
  info.flowGemm = detail::flowGemmInfo();
  return info;
}

namespace flow {
namespace runtime {
namespace detail {

#ifdef FLOW_HAVE_OPENBLAS
/// oneDNN runs on OpenMP: one thread per calling thread (the setting is the
/// calling thread's own), so only Flow's pool uses the cores.
static void oneDnnOnThisThreadOnly() {
  static thread_local bool single = false;
  if (!single && loaded().ompSetThreads) {
    loaded().ompSetThreads(1);
    single = true;
  }
}
#endif

void blasSgemm(bool transA, bool transB, int m, int n, int k, const float *a,
               int lda, const float *b, int ldb, float *c, int ldc) {
  // CBLAS's enum values: row-major 101, no-transpose 111, transpose 112.
#ifdef FLOW_HAVE_OPENBLAS
  if (loaded().dnnlSgemm) {
    oneDnnOnThisThreadOnly();
    loaded().dnnlSgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f,
                       a, lda, b, ldb, 0.0f, c, ldc);
    return;
  }
  loaded().sgemm(101, transA ? 112 : 111, transB ? 112 : 111, m, n, k, 1.0f,
                 a, lda, b, ldb, 0.0f, c, ldc);
#else
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, 0.0f, c, ldc);
#endif
}

void blasGemmBf16(bool transA, bool transB, int m, int n, int k,
                  const uint16_t *a, int lda, const uint16_t *b, int ldb,
                  float *c, int ldc) {
#ifdef FLOW_HAVE_OPENBLAS
  // The load asked oneDNN whether it has a bf16 GEMM for this CPU; a call
  // it still refuses (leaving c as it was) widens the operands below.
  if (loaded().dnnlGemmBf16) {
    oneDnnOnThisThreadOnly();
    if (loaded().dnnlGemmBf16(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n,
                              k, 1.0f, a, lda, b, ldb, 0.0f, c,
                              ldc) == 0 /* dnnl_success */)
      return;
  }
#endif
  // Without oneDNN: widen the operands (as stored: rows x cols with their
  // leading dimension) and run the f32 GEMM.
  auto widen = [](const uint16_t *src, int rows, int cols, int ld) {
    std::vector<float> out(size_t(rows) * cols);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < cols; ++j)
        out[size_t(r) * cols + j] = widenBf16(src[size_t(r) * ld + j]);
    return out;
  };
  std::vector<float> fa = transA ? widen(a, k, m, lda) : widen(a, m, k, lda);
  std::vector<float> fb = transB ? widen(b, n, k, ldb) : widen(b, k, n, ldb);
  blasSgemm(transA, transB, m, n, k, fa.data(), transA ? m : k, fb.data(),
            transB ? k : n, c, ldc);
}

void blasSgemv(bool trans, int m, int n, const float *a, int lda,
               const float *x, float *y) {
#ifdef FLOW_HAVE_OPENBLAS
  loaded().sgemv(101, trans ? 112 : 111, m, n, 1.0f, a, lda, x, 1, 0.0f, y,
                 1);
#else
  cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, m, n, 1.0f, a,
              lda, x, 1, 0.0f, y, 1);
#endif
}

} // namespace detail
} // namespace runtime
} // namespace flow
