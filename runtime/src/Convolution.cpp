//===- Convolution.cpp - Convolution commands on a library ----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "Convolution.h"
#include "Bf16.h"
#include "BlasCalls.h"
#include "flow/runtime/ThreadPool.h"

#include <cstdint>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

// oneDNN is loaded at run time; its 2.x C header gives the types. Without
// the header (or with another major version) only the reference path is
// built.
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#if DNNL_VERSION_MAJOR == 2
#define FLOW_HAVE_DNNL 1
#endif
#endif

using namespace flow::runtime;
using namespace flow::runtime::detail;

namespace {

/// Rounds \p bytes up to a multiple of 64.
size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

/// "nhwc", "nChw16c".
std::string layoutName(int block) {
  return block == 0 ? "nhwc" : "nChw" + std::to_string(block) + "c";
}


} // namespace

namespace {
/// libgomp's spins (a `pause` and a load each) in \p time on this CPU,
/// measured: a pause takes from a few to ~40 ns depending on the CPU.
long spinsIn(std::chrono::microseconds time) {
  if (time.count() == 0)
    return 0;
  constexpr int kSpins = 4096;
  volatile int flag = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSpins && !flag; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  double ns = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              kSpins;
  return std::max(1L, static_cast<long>(time.count() * 1000.0 /
                                        std::max(ns, 0.5)));
}
} // namespace

void *detail::openOneDnn() {
  void *openmp = ::dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (openmp)
    ::dlclose(openmp); // only asked whether it was loaded
  // OpenMP's threads (the team that runs a session's loops when it runs
  // convolutions) wait for the next loop as Flow's own pool waits for its
  // next job: spinning as long (ThreadPool::spinTime, 100 us by default),
  // then sleeping. Sleeping at once (OMP_WAIT_POLICY=PASSIVE) made every
  // convolution wake its threads: ResNet-50 b1 was 25% slower. libgomp
  // reads its settings when it loads, and counts spins, not time.
  bool spin = !openmp && !std::getenv("OMP_WAIT_POLICY") &&
              !std::getenv("GOMP_SPINCOUNT");
  if (spin)
    ::setenv("GOMP_SPINCOUNT",
             std::to_string(spinsIn(ThreadPool::spinTime())).c_str(), 0);
  void *handle = ::dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  // For this load only: the process's environment is left as it was.
  if (spin)
    ::unsetenv("GOMP_SPINCOUNT");
  return handle;
}

namespace {

#ifdef FLOW_HAVE_DNNL
/// The oneDNN functions Flow calls, from the libdnnl.so.2 it loaded.
struct Dnnl {
#define FLOW_DNNL_FUNCTIONS(X)                                                 \
  X(dnnl_engine_create)                                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_destroy)                                                       \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_post_ops_append_eltwise)                                              \
  X(dnnl_post_ops_append_binary)                                               \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_destroy)                                                       \
  X(dnnl_memory_set_data_handle)                                               \
  X(dnnl_version)                                                              \
  X(dnnl_get_effective_cpu_isa)
#define FLOW_DNNL_MEMBER(name) decltype(&::name) name = nullptr;
  FLOW_DNNL_FUNCTIONS(FLOW_DNNL_MEMBER)
#undef FLOW_DNNL_MEMBER
  void (*ompSetNumThreads)(int) = nullptr;
  int (*ompGetMaxThreads)() = nullptr;
  dnnl_engine_t engine = nullptr;
  std::string name;
  /// The layout oneDNN's direct convolutions prefer: channels innermost
  /// in blocks of `block`, 0 meaning all of them (NHWC).
  int block = 16;
  /// Whether oneDNN has a Winograd kernel for f32 3x3 convolutions on this
  /// CPU (its avx512_core one; it reads nChw16c).
  bool winograd = false;
};

/// A typical 3x3 convolution (64 channels, 56x56, stride 1, padding 1)
/// with \p algorithm on \p layout (format_tag_any: oneDNN's choice) and
/// the weights in oneDNN's choice; null when oneDNN refuses it.
dnnl_primitive_desc_t probe(const Dnnl &d, dnnl_alg_kind_t algorithm,
                            dnnl_format_tag_t layout) {
  dnnl_memory_desc_t src, weights, dst;
  int64_t srcDims[4] = {1, 64, 56, 56}, wDims[4] = {64, 64, 3, 3};
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  dnnl_convolution_desc_t desc;
  dnnl_primitive_desc_t pd = nullptr;
  if (d.dnnl_memory_desc_init_by_tag(&src, 4, srcDims, dnnl_f32, layout) !=
          dnnl_success ||
      d.dnnl_memory_desc_init_by_tag(&weights, 4, wDims, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
      d.dnnl_memory_desc_init_by_tag(&dst, 4, srcDims, dnnl_f32, layout) !=
          dnnl_success ||
      d.dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, algorithm, &src, &weights, nullptr,
          &dst, one, zero, one, one) != dnnl_success ||
      d.dnnl_primitive_desc_create(&pd, &desc, nullptr, d.engine, nullptr) !=
          dnnl_success)
    return nullptr;
  return pd;
}

/// The name of the kernel \p pd runs ("jit:avx512_core").
std::string implName(const Dnnl &d, const_dnnl_primitive_desc_t pd) {
  const char *impl = nullptr;
  d.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl ? impl : "unknown";
}

/// True for oneDNN's reference kernels: far slower than Flow's reference
/// path.
bool isReferenceKernel(const std::string &impl) {
  return impl.rfind("ref", 0) == 0;
}

/// The activation layout oneDNN's own choice of convolution prefers on
/// this CPU: asked of a typical 3x3 convolution (64 channels, 56x56) with
/// every layout left to oneDNN. NHWC (0) where its brgemm kernels run
/// (AVX-512), nChw16c or nChw8c for its older direct kernels.
int preferredBlock(const Dnnl &d) {
  dnnl_primitive_desc_t pd =
      probe(d, dnnl_convolution_direct, dnnl_format_tag_any);
  if (!pd)
    return 16;
  const dnnl_memory_desc_t *chosen =
      d.dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  int block = 16;
  if (chosen && chosen->format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t &b = chosen->format_desc.blocking;
    if (b.inner_nblks == 0 && b.strides[1] == 1)
      block = 0;
    else if (b.inner_nblks == 1 && b.inner_idxs[0] == 1 &&
             (b.inner_blks[0] == 8 || b.inner_blks[0] == 16))
      block = static_cast<int>(b.inner_blks[0]);
  }
  d.dnnl_primitive_desc_destroy(pd);
  return block;
}

/// oneDNN, loaded once per process; null when absent or unusable.
const Dnnl *dnnl() {
  static const Dnnl *loaded = []() -> const Dnnl * {
    void *handle = openOneDnn();
    if (!handle)
      return nullptr;
    auto *d = new Dnnl;
    bool complete = true;
#define FLOW_DNNL_LOAD(name)                                                   \
  d->name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));      \
  complete = complete && d->name;
    FLOW_DNNL_FUNCTIONS(FLOW_DNNL_LOAD)
#undef FLOW_DNNL_LOAD
    d->ompSetNumThreads =
        reinterpret_cast<void (*)(int)>(::dlsym(handle, "omp_set_num_threads"));
    d->ompGetMaxThreads =
        reinterpret_cast<int (*)()>(::dlsym(handle, "omp_get_max_threads"));
    const dnnl_version_t *v = complete ? d->dnnl_version() : nullptr;
    if (!v || v->major != 2 ||
        d->dnnl_engine_create(&d->engine, dnnl_cpu, 0) != dnnl_success) {
      delete d;
      return nullptr;
    }
    d->block = preferredBlock(*d);
    if (dnnl_primitive_desc_t pd =
            probe(*d, dnnl_convolution_winograd, dnnl_nChw16c)) {
      d->winograd = !isReferenceKernel(implName(*d, pd));
      d->dnnl_primitive_desc_destroy(pd);
    }
    char text[32];
    std::snprintf(text, sizeof(text), "oneDNN %d.%d.%d", v->major, v->minor,
                  v->patch);
    d->name = text;
    return d;
  }();
  return loaded;
}
#endif

/// FLOW_CONV's value, empty when unset: "library" (the default),
/// "direct" (the library without Winograd) or "reference" (Flow's
/// reference path).
std::string convChoice() {
  const char *choice = std::getenv("FLOW_CONV");
  return choice ? choice : "";
}

} // namespace

namespace {
/// How a session started now runs its convolutions: on the library or
/// Flow's reference path, with or without Winograd, and the layout of its
/// blocked buffers.
struct ConvSetup {
  bool library = false;
  bool winograd = false;
  /// Channels per block (16 or 8; 0: all of them, NHWC).
  int block = 16;
};

/// The setup for FLOW_CONV=\p choice (read when a session starts); a
/// session asks at its first convolution, so that creating one probes no
/// convolution kernels.
ConvSetup convSetup(const std::string &choice) {
  ConvSetup setup;
  if (!choice.empty() && choice != "library" && choice != "direct" &&
      choice != "reference") {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr,
                   "flow: warning: FLOW_CONV=%s is not library, direct or "
                   "reference; convolutions run on the library\n",
                   choice.c_str());
    });
  }
  setup.library = choice != "reference";
#ifdef FLOW_HAVE_DNNL
  if (const Dnnl *d = dnnl()) {
    // Winograd reads nChw16c; with it, every blocked buffer has that
    // layout. Measured on ResNet-50 (AVX-512): oneDNN's direct kernels
    // on nChw16c are level with its NHWC ones at batch 8 and up to 10%
    // slower at batch 1, less than Winograd gains.
    setup.winograd = setup.library && choice != "direct" && d->winograd;
    setup.block = setup.winograd ? 16 : d->block;
  }
#endif
  return setup;
}

/// An f32 tensor, or a bf16 one (as its bits).
struct Elements {
  const void *data;
  bool bf16;
  float operator[](int64_t i) const {
    return bf16 ? widenBf16(static_cast<const uint16_t *>(data)[i])
                : static_cast<const float *>(data)[i];
  }
};

/// Calls \p visit(plain, blocked) with the index of every element of an
/// [n, c, hw] tensor in NCHW and in the blocked layout (channels a multiple
/// of \p block; 0: NHWC).
template <typename Visit>
void forEachElement(int64_t n, int64_t c, int64_t hw, int block,
                    Visit visit) {
  if (block == 0)
    block = static_cast<int>(c);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t plain = (b * c + ch) * hw;
      int64_t blocked =
          ((b * (c / block) + ch / block) * hw) * block + ch % block;
      for (int64_t i = 0; i < hw; ++i)
        visit(plain + i, blocked + i * block);
    }
}

/// Copies the blocked tensor \p src into NCHW f32 \p dst.
void toPlain(Elements src, float *dst, int64_t n, int64_t c, int64_t hw,
             int block) {
  forEachElement(n, c, hw, block, [&](int64_t plain, int64_t blocked) {
    dst[plain] = src[blocked];
  });
}

/// Copies NCHW f32 \p src into the blocked tensor \p dst, rounded to bf16
/// when it holds bf16.
void toBlocked(const float *src, void *dst, bool bf16, int64_t n, int64_t c,
               int64_t hw, int block) {
  forEachElement(n, c, hw, block, [&](int64_t plain, int64_t blocked) {
    if (bf16)
      static_cast<uint16_t *>(dst)[blocked] = roundToBf16(src[plain]);
    else
      static_cast<float *>(dst)[blocked] = src[plain];
  });
}

/// Rounds \p count floats of \p src to bf16 (and back to f32) into \p dst.
void roundedToBf16(const float *src, float *dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dst[i] = widenBf16(roundToBf16(src[i]));
}
} // namespace

bool detail::convolutionsOnOpenMp() {
#ifdef FLOW_HAVE_DNNL
  return convSetup(convChoice()).library && dnnl();
#else
  return false;
#endif
}

std::string detail::convLibrary() {
  ConvSetup setup = convSetup(convChoice());
#ifdef FLOW_HAVE_DNNL
  if (const Dnnl *d = dnnl(); d && setup.library)
    return d->name + ", " + layoutName(setup.block) +
           (setup.winograd ? ", Winograd for f32 3x3 stride-1 "
                             "convolutions"
                           : "");
#endif
  return "Flow reference (im2col + GEMM, one thread), " +
         layoutName(setup.block);
}

/// One command's primitives and memory objects (oneDNN), or the mark that
/// it runs on the reference path.
struct ConvRunner::Plan {
  std::string kernel = "reference";
  bool reference = true;
#ifdef FLOW_HAVE_DNNL
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_t conv = nullptr;
  /// Reorders into the primitive's layouts (null where the buffer already
  /// has it) and out of its destination layout.
  dnnl_primitive_t srcReorder = nullptr, weightsReorder = nullptr,
                   residualReorder = nullptr, dstReorder = nullptr;
  /// Memory objects: the buffers as Flow holds them (user) and as the
  /// primitive reads them; handles are set per call.
  dnnl_memory_t src = nullptr, srcUser = nullptr, weights = nullptr,
                weightsUser = nullptr, bias = nullptr, residual = nullptr,
                residualUser = nullptr, dst = nullptr, dstUser = nullptr,
                pad = nullptr;
  /// Scratch bytes: reordered source, residual and destination, then the
  /// primitive's scratchpad, each 64-byte aligned, one after another.
  size_t srcBytes = 0, residualBytes = 0, dstBytes = 0, padBytes = 0;
  /// The residual is added by a sum post-op: the destination holds it.
  bool sum = false;
  /// Weights in the primitive's layout: kept when they are a constant.
  AlignedBuffer reorderedWeights;
  bool weightsReady = false;
  const Dnnl *lib = nullptr;

  ~Plan() {
    if (!lib)
      return;
    for (dnnl_primitive_t p :
         {conv, srcReorder, weightsReorder, residualReorder, dstReorder})
      if (p)
        lib->dnnl_primitive_destroy(p);
    for (dnnl_memory_t m : {src, srcUser, weights, weightsUser, bias, residual,
                            residualUser, dst, dstUser, pad})
      if (m)
        lib->dnnl_memory_destroy(m);
    if (stream)
      lib->dnnl_stream_destroy(stream);
  }
#endif
};

ConvRunner::ConvRunner(int threads)
    : threads(std::max(1, threads)), choice(convChoice()) {}

void ConvRunner::configure() {
  if (configured)
    return;
  ConvSetup setup = convSetup(choice);
  library = setup.library;
  winograd = setup.winograd;
  block = setup.block;
  configured = true;
}
ConvRunner::~ConvRunner() = default;

float *ConvRunner::scratch(size_t bytes) {
  if (bytes > scratchBytes) {
    if (!scratchMemory.allocate(bytes))
      return nullptr;
    scratchBytes = bytes;
  }
  return reinterpret_cast<float *>(scratchMemory.data());
}

std::string ConvRunner::kernel(const ConvCommand &cmd) const {
  auto it = plans.lower_bound({&cmd, INT64_MIN});
  return it == plans.end() || it->first.first != &cmd ? std::string()
                                                      : it->second->kernel;
}

#ifdef FLOW_HAVE_DNNL
namespace {

/// Sets OpenMP's thread count for oneDNN on this thread while in scope,
/// and back to what it was after (one once the GEMM pieces have run here:
/// they run oneDNN single-threaded).
struct OmpThreads {
  const Dnnl &d;
  int saved = 0;
  OmpThreads(const Dnnl &d, int n) : d(d) {
    if (!d.ompSetNumThreads || !d.ompGetMaxThreads)
      return;
    saved = d.ompGetMaxThreads();
    d.ompSetNumThreads(n);
  }
  ~OmpThreads() {
    if (saved > 0)
      d.ompSetNumThreads(saved);
  }
};

/// True when \p cmd may run on oneDNN's Winograd kernel: f32, 3x3, stride
/// 1, not dilated, not grouped, input and output channels multiples of 16
/// (the blocks Winograd reads: fewer would be padded to 16, and there the
/// transforms' rounding weighs more against the few products: with 4
/// channels it reached 1e-4 of a small output, where the direct algorithm
/// stays within 1e-5); oneDNN still has the last word.
bool winogradShape(const ConvCommand &cmd) {
  return !cmd.bf16 && cmd.kh == 3 && cmd.kw == 3 && cmd.strideH == 1 &&
         cmd.strideW == 1 && cmd.dilationH == 1 && cmd.dilationW == 1 &&
         cmd.groups == 1 && cmd.c % 16 == 0 && cmd.o % 16 == 0;
}

/// Builds the primitives of \p cmd into \p plan, its blocked buffers
/// in blocks of \p block channels, on Winograd where \p winograd allows
/// and oneDNN has it; false when oneDNN refuses (the command then runs on
/// the reference path).
bool buildPlan(const Dnnl &d, const ConvCommand &cmd, int block,
               bool winograd, ConvRunner::Plan &plan) {
  plan.lib = &d;
  if (d.dnnl_stream_create(&plan.stream, d.engine,
                           dnnl_stream_default_flags) != dnnl_success)
    return false;
  auto tagged = [&](std::vector<int64_t> dims, dnnl_format_tag_t tag,
                    dnnl_data_type_t type = dnnl_f32) {
    dnnl_memory_desc_t md;
    if (d.dnnl_memory_desc_init_by_tag(&md, static_cast<int>(dims.size()),
                                       dims.data(), type,
                                       tag) != dnnl_success)
      std::memset(&md, 0, sizeof md);
    return md;
  };
  // What the primitive reads its input and filter as, and what each
  // tensor holds.
  auto held = [](bool bf16) { return bf16 ? dnnl_bf16 : dnnl_f32; };
  dnnl_data_type_t reads = held(cmd.bf16);
  dnnl_format_tag_t blocked = block == 0    ? dnnl_nhwc
                              : block == 16 ? dnnl_nChw16c
                                            : dnnl_nChw8c;
  std::vector<int64_t> srcDims = {cmd.n, cmd.c, cmd.h, cmd.w};
  std::vector<int64_t> dstDims = {cmd.n, cmd.o, cmd.oh, cmd.ow};
  std::vector<int64_t> weightDims =
      cmd.groups == 1
          ? std::vector<int64_t>{cmd.o, cmd.c, cmd.kh, cmd.kw}
          : std::vector<int64_t>{cmd.groups, cmd.o / cmd.groups,
                                 cmd.c / cmd.groups, cmd.kh, cmd.kw};
  dnnl_memory_desc_t srcUser =
      tagged(srcDims, cmd.blockedInput ? blocked : dnnl_nchw,
             held(cmd.inputBf16));
  dnnl_memory_desc_t dstUser =
      tagged(dstDims, cmd.blockedOutput ? blocked : dnnl_nchw,
             held(cmd.outputBf16));
  dnnl_memory_desc_t residualUser =
      tagged(dstDims, cmd.blockedResidual ? blocked : dnnl_nchw,
             held(cmd.residualBf16));
  dnnl_memory_desc_t weightsUser =
      tagged(weightDims, cmd.groups == 1 ? dnnl_oihw : dnnl_goihw);
  dnnl_memory_desc_t biasMd = tagged({cmd.o}, dnnl_a);
  // Blocked buffers are given as they are; plain ones let the primitive
  // choose (a reorder is cheaper than a convolution on plain layouts). A
  // bf16 convolution reads its input as bf16 (converted by the reorder
  // into its layout, where the buffer holds f32) and writes the type the
  // output holds.
  dnnl_memory_desc_t srcAny =
      tagged(srcDims, cmd.blockedInput ? blocked : dnnl_format_tag_any, reads);
  dnnl_memory_desc_t dstAny = cmd.blockedOutput
                                  ? dstUser
                                  : tagged(dstDims, dnnl_format_tag_any);
  dnnl_memory_desc_t weightsAny =
      tagged(weightDims, dnnl_format_tag_any, reads);
  int64_t strides[2] = {cmd.strideH, cmd.strideW};
  int64_t dilates[2] = {cmd.dilationH - 1, cmd.dilationW - 1};
  int64_t padL[2] = {cmd.padTop, cmd.padLeft};
  int64_t padR[2] = {cmd.padBottom, cmd.padRight};

  // Made twice when there is a residual and the destination's layout is
  // the primitive's choice: first to learn that layout, then with the
  // residual (a post-op operand) in it, or, when the residual is the
  // destination's buffer in the destination's layout, with a sum post-op
  // that adds what the destination holds. Winograd is asked first where
  // the shape allows; the direct algorithm where oneDNN refuses it.
  bool sum = false;
  auto createWith = [&](dnnl_alg_kind_t algorithm,
                        const dnnl_memory_desc_t *residualMd,
                        dnnl_primitive_desc_t &pd) {
    dnnl_convolution_desc_t desc;
    if (d.dnnl_dilated_convolution_forward_desc_init(
            &desc, dnnl_forward_inference, algorithm, &srcAny,
            &weightsAny, cmd.hasBias ? &biasMd : nullptr, &dstAny, strides,
            dilates, padL, padR) != dnnl_success)
      return false;
    dnnl_primitive_attr_t attr;
    if (d.dnnl_primitive_attr_create(&attr) != dnnl_success)
      return false;
    dnnl_post_ops_t ops;
    bool ok = d.dnnl_post_ops_create(&ops) == dnnl_success;
    if (ok && residualMd)
      ok = (sum ? d.dnnl_post_ops_append_sum(ops, 1.0f)
                : d.dnnl_post_ops_append_binary(ops, dnnl_binary_add,
                                                residualMd)) == dnnl_success;
    if (ok && cmd.relu)
      ok = d.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f,
                                          0.0f) == dnnl_success;
    ok = ok && d.dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success &&
         d.dnnl_primitive_attr_set_scratchpad_mode(
             attr, dnnl_scratchpad_mode_user) == dnnl_success &&
         d.dnnl_primitive_desc_create(&pd, &desc, attr, d.engine, nullptr) ==
             dnnl_success;
    d.dnnl_post_ops_destroy(ops);
    d.dnnl_primitive_attr_destroy(attr);
    if (ok && isReferenceKernel(implName(d, pd))) {
      d.dnnl_primitive_desc_destroy(pd);
      pd = nullptr;
      ok = false;
    }
    return ok;
  };
  const bool tryWinograd = winograd && winogradShape(cmd);
  auto create = [&](const dnnl_memory_desc_t *residualMd,
                    dnnl_primitive_desc_t &pd) {
    return (tryWinograd &&
            createWith(dnnl_convolution_winograd, residualMd, pd)) ||
           createWith(dnnl_convolution_direct, residualMd, pd);
  };
  dnnl_primitive_desc_t pd = nullptr;
  if (!create(nullptr, pd))
    return false;
  dnnl_memory_desc_t dstMd =
      *d.dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  if (cmd.hasResidual) {
    // The destination keeps the layout chosen above (left open, oneDNN
    // 2.6 may fall back to its reference kernel once a post-op operand
    // is fixed).
    srcAny = *d.dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dstAny = dstMd;
    d.dnnl_primitive_desc_destroy(pd);
    pd = nullptr;
    sum = cmd.residualInPlace && d.dnnl_memory_desc_equal(&dstMd, &dstUser);
    if (!create(&dstMd, pd))
      return false;
  }
  plan.sum = sum;
  dnnl_memory_desc_t srcMd =
      *d.dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  dnnl_memory_desc_t weightsMd =
      *d.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_desc_t padMd =
      *d.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  plan.kernel = implName(d, pd);
  bool ok = d.dnnl_primitive_create(&plan.conv, pd) == dnnl_success;
  d.dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return false;

  auto memory = [&](const dnnl_memory_desc_t &md, dnnl_memory_t &m) {
    return d.dnnl_memory_create(&m, &md, d.engine, DNNL_MEMORY_NONE) ==
           dnnl_success;
  };
  // A reorder from \p from to \p to, unless they are the same layout.
  auto reorder = [&](const dnnl_memory_desc_t &from,
                     const dnnl_memory_desc_t &to, dnnl_primitive_t &prim,
                     dnnl_memory_t &user) {
    if (d.dnnl_memory_desc_equal(&from, &to))
      return true;
    dnnl_primitive_desc_t rpd;
    if (d.dnnl_reorder_primitive_desc_create(&rpd, &from, d.engine, &to,
                                             d.engine,
                                             nullptr) != dnnl_success)
      return false;
    bool made = d.dnnl_primitive_create(&prim, rpd) == dnnl_success;
    d.dnnl_primitive_desc_destroy(rpd);
    return made && memory(from, user);
  };
  ok = memory(srcMd, plan.src) && memory(weightsMd, plan.weights) &&
       memory(dstMd, plan.dst) && memory(padMd, plan.pad) &&
       (!cmd.hasBias || memory(biasMd, plan.bias)) &&
       reorder(srcUser, srcMd, plan.srcReorder, plan.srcUser) &&
       reorder(weightsUser, weightsMd, plan.weightsReorder,
               plan.weightsUser) &&
       reorder(dstMd, dstUser, plan.dstReorder, plan.dstUser);
  if (ok && cmd.hasResidual && !sum)
    ok = memory(dstMd, plan.residual) &&
         reorder(residualUser, dstMd, plan.residualReorder,
                 plan.residualUser);
  if (!ok)
    return false;
  if (plan.srcReorder)
    plan.srcBytes = align64(d.dnnl_memory_desc_get_size(&srcMd));
  if (plan.residualReorder)
    plan.residualBytes = align64(d.dnnl_memory_desc_get_size(&dstMd));
  if (plan.dstReorder)
    plan.dstBytes = align64(d.dnnl_memory_desc_get_size(&dstMd));
  plan.padBytes = align64(d.dnnl_memory_desc_get_size(&padMd));
  if (plan.weightsReorder &&
      !plan.reorderedWeights.allocate(d.dnnl_memory_desc_get_size(&weightsMd)))
    return false;
  plan.reference = false;
  return true;
}

/// Runs \p prim with \p args on \p plan's stream; false on failure.
bool execute(const ConvRunner::Plan &plan, dnnl_primitive_t prim,
             std::vector<dnnl_exec_arg_t> args) {
  return plan.lib->dnnl_primitive_execute(prim, plan.stream,
                                          static_cast<int>(args.size()),
                                          args.data()) == dnnl_success;
}

} // namespace
#endif

Status ConvRunner::run(const ConvCommand &cmd, const ConvBuffers &buffers,
                       bool filterIsConstant, const ConvCommand *key) {
  configure();
  std::unique_ptr<Plan> &slot = plans[{key ? key : &cmd, cmd.n}];
  if (!slot) {
    slot = std::make_unique<Plan>();
#ifdef FLOW_HAVE_DNNL
    if (const Dnnl *d = library ? dnnl() : nullptr) {
      OmpThreads omp(*d, threads);
      if (!buildPlan(*d, cmd, block, winograd, *slot)) {
        slot = std::make_unique<Plan>();
        static std::once_flag warned;
        std::call_once(warned, [] {
          std::fprintf(stderr, "flow: warning: oneDNN refused a convolution; "
                               "it runs on Flow's reference path\n");
        });
      }
    }
#endif
  }
  Plan &plan = *slot;
  if (plan.reference)
    return runReference(cmd, buffers);
#ifdef FLOW_HAVE_DNNL
  const Dnnl &d = *plan.lib;
  size_t total =
      plan.srcBytes + plan.residualBytes + plan.dstBytes + plan.padBytes;
  auto *base = reinterpret_cast<uint8_t *>(scratch(total));
  if (!base && total)
    return Status::error("out of memory for a convolution's " +
                         std::to_string(total) + " scratch bytes");
  uint8_t *srcScratch = base, *residualScratch = srcScratch + plan.srcBytes,
          *dstScratch = residualScratch + plan.residualBytes,
          *padScratch = dstScratch + plan.dstBytes;
  auto set = [&](dnnl_memory_t m, const void *p) {
    d.dnnl_memory_set_data_handle(m, const_cast<void *>(p));
  };
  OmpThreads omp(d, threads);
  bool ok = true;
  if (plan.srcReorder) {
    set(plan.srcUser, buffers.input);
    set(plan.src, srcScratch);
    ok = execute(plan, plan.srcReorder,
                 {{DNNL_ARG_FROM, plan.srcUser}, {DNNL_ARG_TO, plan.src}});
  } else {
    set(plan.src, buffers.input);
  }
  if (plan.weightsReorder) {
    set(plan.weights, plan.reorderedWeights.data());
    if (!plan.weightsReady) {
      set(plan.weightsUser, buffers.filter);
      ok = ok && execute(plan, plan.weightsReorder,
                         {{DNNL_ARG_FROM, plan.weightsUser},
                          {DNNL_ARG_TO, plan.weights}});
      plan.weightsReady = filterIsConstant;
    }
  } else {
    set(plan.weights, buffers.filter);
  }
  if (cmd.hasResidual && !plan.sum) {
    if (plan.residualReorder) {
      set(plan.residualUser, buffers.residual);
      set(plan.residual, residualScratch);
      ok = ok && execute(plan, plan.residualReorder,
                         {{DNNL_ARG_FROM, plan.residualUser},
                          {DNNL_ARG_TO, plan.residual}});
    } else {
      set(plan.residual, buffers.residual);
    }
  }
  set(plan.dst, plan.dstReorder ? static_cast<void *>(dstScratch)
                                : static_cast<void *>(buffers.output));
  set(plan.pad, padScratch);
  std::vector<dnnl_exec_arg_t> args = {{DNNL_ARG_SRC, plan.src},
                                       {DNNL_ARG_WEIGHTS, plan.weights},
                                       {DNNL_ARG_DST, plan.dst},
                                       {DNNL_ARG_SCRATCHPAD, plan.pad}};
  if (cmd.hasBias) {
    set(plan.bias, buffers.bias);
    args.push_back({DNNL_ARG_BIAS, plan.bias});
  }
  if (cmd.hasResidual && !plan.sum)
    args.push_back(
        {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, plan.residual});
  ok = ok && execute(plan, plan.conv, args);
  if (ok && plan.dstReorder) {
    set(plan.dstUser, buffers.output);
    ok = execute(plan, plan.dstReorder,
                 {{DNNL_ARG_FROM, plan.dst}, {DNNL_ARG_TO, plan.dstUser}});
  }
  if (!ok)
    return Status::error("oneDNN failed to run a convolution (" +
                         plan.kernel + ")");
#endif
  return Status::ok();
}

Status ConvRunner::runReference(const ConvCommand &cmd,
                                const ConvBuffers &buffers) {
  const int64_t hw = cmd.h * cmd.w, ohw = cmd.oh * cmd.ow;
  const int64_t cg = cmd.c / cmd.groups, og = cmd.o / cmd.groups;
  const int64_t rows = cg * cmd.kh * cmd.kw;
  // The columns of a block of output positions at a time, at most about
  // 4 MiB of them (at least one position: then the filter's size).
  const int64_t chunk =
      std::max<int64_t>(1, std::min<int64_t>(ohw, (int64_t(1) << 20) / rows));
  const size_t inBytes = align64(cmd.n * cmd.c * hw * sizeof(float));
  const size_t outBytes = align64(cmd.n * cmd.o * ohw * sizeof(float));
  const size_t filterBytes =
      cmd.bf16 ? align64(cmd.o * rows * sizeof(float)) : 0;
  const size_t colBytes = align64(rows * chunk * sizeof(float));
  auto *base = reinterpret_cast<uint8_t *>(
      scratch(inBytes + 2 * outBytes + filterBytes + colBytes));
  if (!base)
    return Status::error("out of memory for a convolution's scratch memory");
  auto *plainIn = reinterpret_cast<float *>(base);
  auto *plainOut = reinterpret_cast<float *>(base + inBytes);
  auto *plainResidual = reinterpret_cast<float *>(base + inBytes + outBytes);
  auto *roundedFilter =
      reinterpret_cast<float *>(base + inBytes + 2 * outBytes);
  auto *columns = reinterpret_cast<float *>(base + inBytes + 2 * outBytes +
                                            filterBytes);

  // The input and filter as f32 (rounded to bf16 for a bf16 command) and
  // NCHW.
  const float *in = static_cast<const float *>(buffers.input);
  if (cmd.blockedInput) {
    toPlain({buffers.input, cmd.inputBf16}, plainIn, cmd.n, cmd.c, hw, block);
    in = plainIn;
  }
  const float *filter = buffers.filter;
  if (cmd.bf16) {
    roundedToBf16(in, plainIn, cmd.n * cmd.c * hw);
    in = plainIn;
    roundedToBf16(filter, roundedFilter, cmd.o * rows);
    filter = roundedFilter;
  }
  // A plain residual that is the output's buffer is read before the
  // products overwrite it.
  const float *residual = static_cast<const float *>(buffers.residual);
  if (cmd.hasResidual && !cmd.blockedResidual &&
      buffers.residual == buffers.output) {
    std::memcpy(plainResidual, residual, cmd.n * cmd.o * ohw * sizeof(float));
    residual = plainResidual;
  }
  float *out =
      cmd.blockedOutput ? plainOut : static_cast<float *>(buffers.output);
  for (int64_t b = 0; b < cmd.n; ++b)
    for (int64_t g = 0; g < cmd.groups; ++g) {
      const float *image = in + (b * cmd.c + g * cg) * hw;
      for (int64_t first = 0; first < ohw; first += chunk) {
        int64_t count = std::min(chunk, ohw - first);
        // columns[(ci, ky, kx), p] = the input under that tap for output
        // position first + p.
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t ky = 0; ky < cmd.kh; ++ky)
            for (int64_t kx = 0; kx < cmd.kw; ++kx) {
              float *col =
                  columns + ((ci * cmd.kh + ky) * cmd.kw + kx) * count;
              for (int64_t p = 0; p < count; ++p) {
                int64_t y = (first + p) / cmd.ow, x = (first + p) % cmd.ow;
                int64_t iy = y * cmd.strideH - cmd.padTop + ky * cmd.dilationH;
                int64_t ix = x * cmd.strideW - cmd.padLeft + kx * cmd.dilationW;
                col[p] = iy >= 0 && iy < cmd.h && ix >= 0 && ix < cmd.w
                             ? image[(ci * cmd.h + iy) * cmd.w + ix]
                             : 0.0f;
              }
            }
        blasSgemm(false, false, static_cast<int>(og), static_cast<int>(count),
                  static_cast<int>(rows), filter + g * og * rows,
                  static_cast<int>(rows), columns, static_cast<int>(count),
                  out + (b * cmd.o + g * og) * ohw + first,
                  static_cast<int>(ohw));
      }
    }
  // The residual is added as it is held (f32, or bf16).
  if (cmd.hasResidual && cmd.blockedResidual) {
    toPlain({buffers.residual, cmd.residualBf16}, plainResidual, cmd.n, cmd.o,
            ohw, block);
    residual = plainResidual;
  }
  for (int64_t b = 0; b < cmd.n; ++b)
    for (int64_t oc = 0; oc < cmd.o; ++oc) {
      float *row = out + (b * cmd.o + oc) * ohw;
      const float *res =
          cmd.hasResidual ? residual + (b * cmd.o + oc) * ohw : nullptr;
      float bias = cmd.hasBias ? buffers.bias[oc] : 0.0f;
      for (int64_t i = 0; i < ohw; ++i) {
        float v = row[i] + bias;
        if (res)
          v += res[i];
        row[i] = cmd.relu ? std::max(v, 0.0f) : v;
      }
    }
  if (cmd.blockedOutput)
    toBlocked(plainOut, buffers.output, cmd.outputBf16, cmd.n, cmd.o, ohw,
              block);
  return Status::ok();
}
