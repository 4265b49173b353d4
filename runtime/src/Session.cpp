//===- Session.cpp - Running an executable's functions --------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Everything a command touches was checked at load time: each BufferRef lies
// inside its buffer and each gemm operand's extent inside its BufferRef. A
// call only checks the caller's buffers against the signature.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Session.h"
#include "BlasCalls.h"
#include "Collectives.h"
#include "Convolution.h"

#include "ExecutableImpl.h"
#include "Gemm.h"
#include "Pooling.h"
#include "flow/runtime/Blas.h"
#include "flow/runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <variant>


using namespace flow::runtime;
using detail::BufferRef;

namespace {

/// Dispatches estimated to touch fewer elements run as one workgroup.
constexpr uint64_t kParallelWork = 32768;

/// True if \p f runs a GEMM.
/// The first NaN or infinity among \p bytes bytes of \p dtype at \p data:
/// its element index and value as text; nullopt when all are finite (and
/// for non-float types).
std::optional<std::pair<uint64_t, std::string>>
firstNonFinite(const uint8_t *data, uint64_t bytes, DType dtype) {
  auto describe = [](bool nan, bool negative) {
    return std::string(nan ? "nan" : negative ? "-inf" : "inf");
  };
  if (!data)
    return std::nullopt;
  if (dtype == DType::F64) {
    uint64_t n = bytes / 8;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t bits;
      std::memcpy(&bits, data + 8 * i, 8);
      if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull)
        return std::make_pair(
            i, describe(bits & 0xfffffffffffffull, bits >> 63));
    }
  } else if (dtype == DType::F32) {
    uint64_t n = bytes / 4;
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + 4 * i, 4);
      if ((bits & 0x7f800000u) == 0x7f800000u)
        return std::make_pair(i, describe(bits & 0x7fffffu, bits >> 31));
    }
  } else if (dtype == DType::F16 || dtype == DType::BF16) {
    uint16_t expMask = dtype == DType::F16 ? 0x7c00 : 0x7f80;
    uint16_t fracMask = dtype == DType::F16 ? 0x03ff : 0x007f;
    uint64_t n = bytes / 2;
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      if ((bits & expMask) == expMask)
        return std::make_pair(i, describe(bits & fracMask, bits >> 15));
    }
  }
  return std::nullopt;
}

/// True if \p f runs a GEMM or a convolution (both need the BLAS).
bool runsGemm(const detail::Function &f) {
  for (const detail::Command &c : f.commands)
    if (std::holds_alternative<detail::GemmCommand>(c) ||
        std::holds_alternative<detail::ConvCommand>(c))
      return true;
  return false;
}

/// "conv 1x64x56x56 * 256x64x1x1 + residual, relu".
std::string describeConv(const detail::ConvCommand &c) {
  auto dims = [](std::initializer_list<int64_t> d) {
    std::string s;
    for (int64_t x : d)
      s += (s.empty() ? "" : "x") + std::to_string(x);
    return s;
  };
  std::string s = dims({c.n, c.c, c.h, c.w}) + " * " +
                  dims({c.o, c.c / c.groups, c.kh, c.kw});
  if (c.groups > 1)
    s += " in " + std::to_string(c.groups) + " groups";
  if (c.hasResidual)
    s += " + residual";
  if (c.relu)
    s += ", relu";
  return s;
}

/// "max_pool" or "avg_pool".
const char *poolKind(const detail::PoolCommand &c) {
  return c.average ? "avg_pool" : "max_pool";
}

/// "1x64x112x112, 3x3 / 2".
std::string describePool(const detail::PoolCommand &c) {
  std::string s = std::to_string(c.n) + "x" + std::to_string(c.c) + "x" +
                  std::to_string(c.h) + "x" + std::to_string(c.w) + ", " +
                  std::to_string(c.kh) + "x" + std::to_string(c.kw);
  if (c.strideH != 1 || c.strideW != 1)
    s += " / " + (c.strideH == c.strideW
                      ? std::to_string(c.strideH)
                      : std::to_string(c.strideH) + "x" +
                            std::to_string(c.strideW));
  return s;
}

/// The buffers of one call.
struct Frame {
  const std::vector<ConstBuffer> &inputs;
  const std::vector<MutableBuffer> &outputs;
  uint8_t *arena;
  const std::vector<detail::Constant> &constants;

  /// The address of \p ref's first byte (null for an empty buffer).
  uint8_t *pointer(const BufferRef &ref) const {
    uint8_t *base = nullptr;
    switch (ref.space) {
    case detail::Space::Input:
      // Kernels take non-const pointers; the verifier keeps gemm and copy
      // results out of inputs.
      base = static_cast<uint8_t *>(const_cast<void *>(inputs[ref.index].data));
      break;
    case detail::Space::Output:
      base = static_cast<uint8_t *>(outputs[ref.index].data);
      break;
    case detail::Space::Arena:
      base = arena;
      break;
    case detail::Space::Constant:
      base = const_cast<uint8_t *>(constants[ref.index].data);
      break;
    }
    return base ? base + ref.offset : nullptr;
  }
};

/// With check-numerics: the first NaN or infinity command \p index of
/// \p function wrote, as an error naming the command and its kernel.
Status checkCommand(const Executable::Impl &impl, const std::string &function,
                    size_t index, const detail::Command &command,
                    const Frame &frame) {
  std::string where =
      "check-numerics: function '" + function + "' command " +
      std::to_string(index);
  auto check = [&](const BufferRef &ref, DType dtype,
                   const std::string &what) -> Status {
    if (auto bad = firstNonFinite(frame.pointer(ref), ref.size, dtype))
      return Status::error(where + " (" + what + ") wrote " + bad->second +
                           " at element " + std::to_string(bad->first));
    return Status::ok();
  };
  if (const auto *d = std::get_if<detail::DispatchCommand>(&command)) {
    const Executable::Impl::KernelMeta &meta = impl.kernelMeta[d->kernel];
    if (meta.bindingDtypes.empty())
      return Status::ok(); // an executable without element types
    std::string what = "dispatch of " + impl.kernelNames[d->kernel];
    if (!meta.description.empty())
      what += ": " + meta.description;
    size_t first = d->bindings.size() - meta.numOutputs;
    for (size_t b = first; b < d->bindings.size(); ++b)
      if (Status s = check(d->bindings[b], meta.bindingDtypes[b],
                           what + "; its output " +
                               std::to_string(b - first));
          !s)
        return s;
  } else if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
    return check(g->c, DType::F32,
                 "gemm " + std::to_string(g->batchCount) + " x " +
                     std::to_string(g->m) + "x" + std::to_string(g->n) + "x" +
                     std::to_string(g->k));
  } else if (const auto *c =
                 std::get_if<detail::CollectiveCommand>(&command)) {
    return check(c->output, c->dtype, "collective");
  } else if (const auto *c = std::get_if<detail::ConvCommand>(&command)) {
    // Layout does not matter: any non-finite element is reported (its
    // index is in the buffer's layout).
    return check(c->output, c->outputBf16 ? DType::BF16 : DType::F32,
                 "conv " + describeConv(*c));
  } else if (const auto *p = std::get_if<detail::PoolCommand>(&command)) {
    return check(p->output, p->outputBf16 ? DType::BF16 : DType::F32,
                 std::string(poolKind(*p)) + " " + describePool(*p));
  }
  return Status::ok();
}


/// GEMMs with fewer multiply-adds than this run on the calling thread.
constexpr int64_t kParallelGemm = int64_t(1) << 18;
/// Pieces of a split GEMM span a multiple of this many rows or columns
/// (of the panel width when Flow's kernels cut C's columns).
constexpr int64_t kGemmBlock = 16;
/// Flow's kernels cut a GEMM into up to this many pieces per thread, of
/// at least kGemmPieceMacs multiply-adds: the pool hands them out as
/// threads come free, so one thread held up (by the OS, or another VM on
/// the host) no longer holds up the GEMM by half its length.
constexpr int64_t kGemmPiecesPerThread = 4;
constexpr int64_t kGemmPieceMacs = int64_t(1) << 20;

/// Runs a GEMM command on the session's thread pool: the library runs
/// single-threaded inside each piece, so Flow's pool is the only one using
/// the cores. Batches are spread over the threads; when there are fewer
/// batches than threads, each matrix is cut into blocks of C's rows (or of
/// its columns, when C is wider than tall or a single row).
/// An epilogue kernel run tile by tile after a GEMM's pieces: workgroup t
/// of `tiles` covers the rows t * m / tiles up to (t + 1) * m / tiles, the
/// same rows as GEMM piece t.
struct Epilogue {
  detail::KernelFn fn = nullptr;
  void **args = nullptr;
};

/// Returns true if it also ran `epilogue` (false: the caller runs it).
/// \p packedB: B packed for Flow's kernels (packB), when B is a constant.
bool runGemm(const detail::GemmCommand &cmd, const Frame &frame,
             ThreadPool &pool, const Epilogue *epilogue = nullptr,
             const detail::PackedB *packedB = nullptr) {
  if (cmd.m == 0 || cmd.n == 0 || cmd.batchCount == 0)
    return false;
  // A and B as bytes: f32 or bf16 elements.
  const bool bf16 = cmd.abDtype == DType::BF16;
  const int64_t es = bf16 ? 2 : 4;
  const uint8_t *a = frame.pointer(cmd.a);
  const uint8_t *b = frame.pointer(cmd.b);
  auto *c = reinterpret_cast<float *>(frame.pointer(cmd.c));
  int lda = std::max(1, cmd.transposeA ? cmd.m : cmd.k);
  int ldb = std::max(1, cmd.transposeB ? cmd.k : cmd.n);
  int64_t matrixC = int64_t(cmd.m) * cmd.n;
  if (cmd.k == 0) {
    // Empty products: C is zeros, and A and B (empty, so their batch strides
    // were never checked against a buffer) are not touched.
    std::memset(c, 0, cmd.batchCount * matrixC * sizeof(float));
    return false;
  }
  const bool flowKernels = packedB != nullptr;
  int64_t threads = pool.size();
  int64_t macs = matrixC * cmd.k * cmd.batchCount;
  bool parallel = threads > 1 && macs >= kParallelGemm;
  bool splitRows = cmd.m > 1 && (cmd.m >= cmd.n || epilogue);
  int64_t extent = splitRows ? cmd.m : cmd.n;
  const int64_t block = flowKernels && !splitRows
                            ? detail::gemmPanelColumns(packedB->isa)
                            : kGemmBlock;
  int64_t tiles = 1;
  if (parallel && cmd.batchCount < threads) {
    tiles = std::min((threads + cmd.batchCount - 1) / cmd.batchCount,
                     std::max<int64_t>(1, extent / block));
    // Flow's kernels: more, smaller pieces, as long as they stay large.
    int64_t more = std::min({threads * kGemmPiecesPerThread,
                             extent / block, macs / kGemmPieceMacs});
    if (flowKernels && cmd.batchCount == 1)
      tiles = std::max(tiles, more);
  }
  int64_t step = (extent + tiles - 1) / tiles;
  step = (step + block - 1) / block * block;
  tiles = (extent + step - 1) / step;
  // With an epilogue the pieces are the epilogue's workgroups' rows.
  if (epilogue)
    tiles = std::min<int64_t>(threads, cmd.m);

  auto piece = [&](int64_t index) {
    int64_t batch = index / tiles, tile = index % tiles;
    int64_t begin = tile * step, end = std::min(extent, begin + step);
    if (epilogue) {
      begin = tile * extent / tiles;
      end = (tile + 1) * extent / tiles;
    }
    // Operand offsets of this batch index (row-major over batchShape, whose
    // dimensions are >= 1 here).
    int64_t aOffset = 0, bOffset = 0, rest = batch;
    for (size_t d = cmd.batchShape.size(); d-- > 0;) {
      int64_t i = rest % cmd.batchShape[d];
      rest /= cmd.batchShape[d];
      aOffset += i * cmd.aBatchStrides[d];
      bOffset += i * cmd.bBatchStrides[d];
    }
    int64_t aAt = aOffset, bAt = bOffset;
    float *pc = c + batch * matrixC;
    int m = cmd.m, n = cmd.n;
    if (splitRows) {
      aAt += cmd.transposeA ? begin : begin * lda;
      pc += begin * cmd.n;
      m = static_cast<int>(end - begin);
    } else {
      bAt += cmd.transposeB ? begin * ldb : begin;
      pc += begin;
      n = static_cast<int>(end - begin);
    }
    if (packedB) {
      // B packed once; a piece of C's columns starts at a panel.
      detail::gemmPacked(cmd.transposeA, m, n, cmd.k, a + aAt * es, lda,
                         *packedB, splitRows ? 0 : begin, pc, cmd.n);
    } else if (bf16) {
      detail::blasGemmBf16(cmd.transposeA, cmd.transposeB, m, n, cmd.k,
                           reinterpret_cast<const uint16_t *>(a + aAt * es),
                           lda,
                           reinterpret_cast<const uint16_t *>(b + bAt * es),
                           ldb, pc, cmd.n);
    } else if (const auto *pa = reinterpret_cast<const float *>(a + aAt * es),
                          *pb = reinterpret_cast<const float *>(b + bAt * es);
               m == 1) {
      // A single row (batch-1 inference): a matrix-vector product. op(A) is
      // contiguous either way (a 1 x k row or a k x 1 column), and
      // c = op(B)^T a. OpenBLAS's GEMV is several times faster here than
      // its GEMM with m = 1.
      detail::blasSgemv(!cmd.transposeB, cmd.transposeB ? n : cmd.k,
                        cmd.transposeB ? cmd.k : n, pb, ldb, pa, pc);
    } else {
      detail::blasSgemm(cmd.transposeA, cmd.transposeB, m, n, cmd.k, pa, lda,
                        pb, ldb, pc, cmd.n);
    }
    if (epilogue)
      epilogue->fn(epilogue->args, tile, tiles);
  };
  int64_t count = cmd.batchCount * tiles;
  if (!parallel || count == 1) {
    if (epilogue) // the caller runs the epilogue whole
      return runGemm(cmd, frame, pool, nullptr, packedB);
    for (int64_t i = 0; i < count; ++i)
      piece(i);
    return false;
  }
  pool.parallelFor(count, piece);
  return epilogue != nullptr;
}

/// Runs a kernel's workgroups: one if the dispatch is small, else as many
/// as the kernel allows and the pool has threads.
Status runDispatch(const detail::DispatchCommand &cmd, detail::KernelFn fn,
                   const Frame &frame, ThreadPool &pool) {
  // Kernels read at most a handful of bindings; keep them on the stack.
  constexpr size_t kInline = 32;
  void *inlineArgs[kInline];
  std::unique_ptr<void *[]> heapArgs;
  void **args = inlineArgs;
  size_t count = cmd.bindings.size();
  if (count > kInline) {
    heapArgs.reset(new (std::nothrow) void *[count]);
    if (!heapArgs)
      return Status::error("out of memory for dispatch bindings");
    args = heapArgs.get();
  }
  for (size_t i = 0; i < count; ++i)
    args[i] = frame.pointer(cmd.bindings[i]);

  int64_t workgroups = cmd.work < kParallelWork
                           ? 1
                           : std::min<int64_t>(cmd.maxWorkgroups, pool.size());
  if (workgroups == 1) {
    fn(args, 0, 1);
    return Status::ok();
  }
  struct Call {
    detail::KernelFn fn;
    void **args;
    int64_t workgroups;
  } call{fn, args, workgroups};
  // Capturing one pointer keeps the std::function off the heap.
  pool.parallelFor(workgroups, [c = &call](int64_t workgroup) {
    c->fn(c->args, workgroup, c->workgroups);
  });
  return Status::ok();
}

/// Checks caller buffer \p i of \p specs (inputs or outputs).
Status checkBuffer(const char *kind, const std::vector<TensorSpec> &specs,
                   size_t i, const void *data, size_t size) {
  size_t expected = specs[i].byteSize();
  if (size != expected)
    return Status::error(std::string(kind) + " " + std::to_string(i) + ": " +
                         specs[i].str() + " needs " + std::to_string(expected) +
                         " bytes, got " + std::to_string(size));
  if (size > 0 && !data)
    return Status::error(std::string(kind) + " " + std::to_string(i) +
                         ": data pointer is null");
  return Status::ok();
}

/// Checks that each input and output of the device program \p sig is the
/// piece of its global placement that the device at \p coords holds.
Status checkPieces(const FunctionSignature &sig,
                   const std::vector<int64_t> &mesh,
                   const std::vector<int64_t> &coords, int64_t rank) {
  auto check = [&](const char *kind, const std::vector<TensorSpec> &local,
                   const std::vector<Placement> &global) -> Status {
    if (local.size() != global.size())
      return Status::error("function '" + sig.name + "' has " +
                           std::to_string(local.size()) + " " + kind +
                           "s but its global signature " +
                           std::to_string(global.size()));
    for (size_t i = 0; i < local.size(); ++i) {
      TensorSpec piece{global[i].spec.dtype, {}};
      std::vector<int64_t> offset;
      localPiece(global[i].spec.shape, global[i].sbp, mesh, coords,
                 piece.shape, offset);
      if (piece.dtype != local[i].dtype || piece.shape != local[i].shape)
        return Status::error(
            "function '" + sig.name + "': " + kind + " " + std::to_string(i) +
            " is " + local[i].str() + " but device " + std::to_string(rank) +
            "'s piece of the global " + global[i].spec.str() + " is " +
            piece.str() + " (the executable is corrupt)");
    }
    return Status::ok();
  };
  if (Status s = check("input", sig.inputs, sig.globalInputs); !s)
    return s;
  return check("output", sig.outputs, sig.globalOutputs);
}

} // namespace

struct Session::Arena {
  AlignedBuffer memory;
  bool allocated = false;
};

/// The constant B of each GEMM command that runs on Flow's kernels, packed
/// at the command's first run.
struct Session::PackedWeights {
  struct Packed {
    AlignedBuffer memory;
    detail::PackedB b;
  };
  std::unordered_map<const detail::GemmCommand *, Packed> byCommand;

  /// \p cmd's B packed for Flow's kernels, or null when the library runs
  /// it. Flow's kernels take a constant B (one matrix for every batch), f32
  /// or bf16, where they are chosen for its element type; f32 when C has
  /// few rows (kFlowGemmMaxRows), and one f32 row stays a matrix-vector
  /// product. No memory for the packing stays on the library.
  const detail::PackedB *get(const detail::GemmCommand &cmd,
                             const Frame &frame) {
    const bool bf16 = cmd.abDtype == DType::BF16;
    const detail::GemmIsa *isa = detail::flowGemmIsa(bf16);
    if (!isa || cmd.b.space != detail::Space::Constant ||
        (!bf16 && cmd.abDtype != DType::F32) || cmd.m <= 1 || cmd.k <= 0 ||
        cmd.n <= 0 ||
        (!bf16 && cmd.m * cmd.batchCount > detail::kFlowGemmMaxRows) ||
        !std::all_of(cmd.bBatchStrides.begin(), cmd.bBatchStrides.end(),
                     [](int64_t s) { return s == 0; }))
      return nullptr;
    auto it = byCommand.find(&cmd);
    if (it == byCommand.end()) {
      Packed packed;
      packed.b = {nullptr, cmd.k, cmd.n, *isa};
      if (packed.memory.allocate(
              detail::packedBBytes(*isa, cmd.k, cmd.n))) {
        packed.b.data = packed.memory.data();
        detail::packB(*isa, cmd.transposeB, cmd.k, cmd.n,
                      frame.pointer(cmd.b),
                      std::max(1, cmd.transposeB ? cmd.k : cmd.n),
                      packed.memory.data());
      }
      it = byCommand.emplace(&cmd, std::move(packed)).first;
    }
    // Out of memory for the packing: the library runs it.
    return it->second.b.data ? &it->second.b : nullptr;
  }
};

namespace {
/// True when \p exe has a convolution command and a session made now runs
/// them on a library that runs on OpenMP: the session's loops then run on
/// OpenMP's team too, so that one set of threads owns the cores.
bool convolutionsOnOpenMp(const Executable::Impl &exe) {
  for (const detail::Function &f : exe.functions)
    for (const detail::Command &command : f.commands)
      if (std::holds_alternative<detail::ConvCommand>(command))
        return detail::convolutionsOnOpenMp();
  return false;
}
} // namespace

Session::Session(std::shared_ptr<const Executable> executable, int threads)
    : exe(std::move(executable)),
      pool(std::make_unique<ThreadPool>(threads,
                                        convolutionsOnOpenMp(*exe->impl))),
      convs(std::make_unique<detail::ConvRunner>(pool->size())),
      packedWeights(std::make_unique<PackedWeights>()) {
  for (size_t i = 0; i < exe->functions().size(); ++i)
    arenas.push_back(std::make_unique<Arena>());
}

Session::~Session() = default;

StatusOr<std::unique_ptr<Session>>
Session::create(std::shared_ptr<const Executable> executable,
                RuntimeOptions options) {
  if (!executable)
    return Status::error("cannot create a session without an executable");
  if (options.threads < 0)
    return Status::error("thread count must be >= 0 (0 means one per "
                         "hardware thread), got " +
                         std::to_string(options.threads));
  // GEMMs need the BLAS: load it now, so that a missing library is an
  // error here rather than at the first call.
  for (const detail::Function &f : executable->impl->functions)
    if (runsGemm(f)) {
      if (StatusOr<BlasInfo> blas = loadBlas(); !blas)
        return blas.status();
      break;
    }
  std::unique_ptr<Session> session(
      new Session(std::move(executable), options.threads));
  const std::vector<int64_t> &mesh = session->exe->mesh();
  if (!mesh.empty()) {
    int64_t devices = 1;
    for (int64_t d : mesh)
      devices *= d;
    session->comm = options.communicator
                        ? options.communicator
                        : std::shared_ptr<Communicator>(
                              createSingleProcessCommunicator());
    if (session->comm->size() != devices)
      return Status::error(
          "the executable runs on a mesh of " + std::to_string(devices) +
          " devices but " + std::to_string(session->comm->size()) +
          (session->comm->size() == 1 ? " process is" : " processes are") +
          " running it (start it with mpirun -np " + std::to_string(devices) +
          ")");
    session->deviceRank = session->comm->rank();
    session->coords.assign(mesh.size(), 0);
    for (int64_t r = session->deviceRank, a = mesh.size() - 1; a >= 0; --a) {
      session->coords[a] = r % mesh[a];
      r /= mesh[a];
    }
    if (Status s = session->makeGroups(); !s)
      return s;
  }
  return session;
}

Status Session::makeGroups() {
  // Every process splits the world the same way in the same order: one
  // group per single mesh axis (for assembling outputs) and per axis set
  // a collective uses.
  const std::vector<int64_t> &mesh = exe->mesh();
  std::set<std::vector<int64_t>> sets;
  for (size_t a = 0; a < mesh.size(); ++a)
    sets.insert({static_cast<int64_t>(a)});
  for (const detail::Function &f : exe->impl->functions)
    for (const detail::Command &c : f.commands)
      if (const auto *col = std::get_if<detail::CollectiveCommand>(&c))
        sets.insert(col->meshAxes);
  for (const std::vector<int64_t> &axes : sets) {
    // Devices agreeing on every other axis share a group, ordered by
    // their coordinates on the group's axes (in the collective's order).
    int64_t color = 0, key = 0;
    for (size_t a = 0; a < mesh.size(); ++a)
      if (std::find(axes.begin(), axes.end(), (int64_t)a) == axes.end())
        color = color * mesh[a] + coords[a];
    for (int64_t a : axes)
      key = key * mesh[a] + coords[a];
    StatusOr<std::unique_ptr<Group>> g = comm->split(static_cast<int>(color),
                                                     static_cast<int>(key));
    if (!g)
      return g.status();
    groups[axes] = std::move(*g);
  }
  return Status::ok();
}

StatusOr<Group *> Session::group(const std::vector<int64_t> &axes) {
  auto it = groups.find(axes);
  if (it == groups.end())
    return Status::error("no group for these mesh axes");
  return it->second.get();
}

int Session::threads() const { return pool->size(); }

void Session::setProfiling(bool on) {
  std::lock_guard<std::mutex> lock(runMutex);
  profiling = on;
  if (on)
    commandTimes.clear();
}

std::vector<Session::CommandProfile> Session::profile() const {
  const Executable::Impl &impl = *exe->impl;
  std::vector<CommandProfile> out;
  for (size_t f = 0; f < commandTimes.size(); ++f)
    for (size_t i = 0; i < commandTimes[f].size(); ++i) {
      const detail::Command &command = impl.functions[f].commands[i];
      CommandProfile p;
      p.function = impl.signatures[f].name;
      p.seconds = commandTimes[f][i].first;
      p.calls = commandTimes[f][i].second;
      if (const auto *d = std::get_if<detail::DispatchCommand>(&command)) {
        p.kind = "dispatch";
        p.what = impl.kernelNames[d->kernel];
      } else if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
        p.kind = "gemm";
        p.what = std::to_string(g->batchCount) + " x " + std::to_string(g->m) +
                 "x" + std::to_string(g->n) + "x" + std::to_string(g->k);
      } else if (const auto *c = std::get_if<detail::ConvCommand>(&command)) {
        p.kind = "conv";
        p.what = describeConv(*c) + " [" + convs->kernel(*c) + "]";
      } else if (const auto *m =
                     std::get_if<detail::PoolCommand>(&command)) {
        p.kind = poolKind(*m);
        p.what = describePool(*m);
      } else if (const auto *c = std::get_if<detail::CopyCommand>(&command)) {
        p.kind = "copy";
        p.what = std::to_string(c->src.size) + " bytes";
      } else {
        p.kind = "collective";
        p.what = std::to_string(
            std::get<detail::CollectiveCommand>(command).kind);
      }
      if (p.calls)
        out.push_back(std::move(p));
    }
  return out;
}

StatusOr<std::vector<HostTensor>>
Session::run(const std::string &function,
             const std::vector<HostTensor> &inputs) {
  StatusOr<size_t> index = exe->findFunction(function);
  if (!index)
    return index.status();
  const FunctionSignature &sig = exe->functions()[*index];
  if (inputs.size() != sig.inputs.size())
    return Status::error("function '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
  std::vector<ConstBuffer> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &tensor = inputs[i];
    const TensorSpec &spec = sig.inputs[i];
    TensorSpec given{tensor.dtype, tensor.shape};
    if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           spec.str() + ", got " + given.str());
    if (tensor.data.size() != spec.byteSize())
      return Status::error("input " + std::to_string(i) + ": " + spec.str() +
                           " needs " + std::to_string(spec.byteSize()) +
                           " data bytes, the tensor has " +
                           std::to_string(tensor.data.size()));
    in.push_back({tensor.data.data(), tensor.data.size()});
  }
  std::vector<HostTensor> outputs(sig.outputs.size());
  std::vector<MutableBuffer> out;
  try {
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].dtype = sig.outputs[i].dtype;
      outputs[i].shape = sig.outputs[i].shape;
      outputs[i].data.resize(sig.outputs[i].byteSize());
      out.push_back({outputs[i].data.data(), outputs[i].data.size()});
    }
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory allocating the outputs of '" +
                         sig.name + "'");
  }
  if (Status s = run(*index, in, out); !s)
    return s;
  return outputs;
}

Status Session::run(size_t function, const std::vector<ConstBuffer> &inputs,
                    const std::vector<MutableBuffer> &outputs) {
  const Executable::Impl &impl = *exe->impl;
  if (function >= impl.functions.size())
    return Status::error("no function number " + std::to_string(function) +
                         " (the executable has " +
                         std::to_string(impl.functions.size()) + ")");
  const FunctionSignature &sig = impl.signatures[function];
  if (inputs.size() != sig.inputs.size() ||
      outputs.size() != sig.outputs.size())
    return Status::error("function '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) + " inputs and " +
                         std::to_string(sig.outputs.size()) + " outputs, got " +
                         std::to_string(inputs.size()) + " and " +
                         std::to_string(outputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Status s =
            checkBuffer("input", sig.inputs, i, inputs[i].data, inputs[i].size);
        !s)
      return s;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (Status s = checkBuffer("output", sig.outputs, i, outputs[i].data,
                               outputs[i].size);
        !s)
      return s;

  std::lock_guard<std::mutex> lock(runMutex);
  Arena &arena = *arenas[function];
  if (!arena.allocated) {
    if (!arena.memory.allocate(sig.arenaSize))
      return Status::error("out of memory allocating the " +
                           std::to_string(sig.arenaSize) + "-byte arena of '" +
                           sig.name + "'");
    arena.allocated = true;
  }
  Frame frame{inputs, outputs, arena.memory.data(), impl.constants};
  lastCollectiveBytes.clear();
  const std::vector<detail::Command> &commands =
      impl.functions[function].commands;
  std::vector<std::pair<double, uint64_t>> *times = nullptr;
  if (profiling) {
    if (commandTimes.size() < impl.functions.size())
      commandTimes.resize(impl.functions.size());
    times = &commandTimes[function];
    times->resize(commands.size());
  }
  if (checkNumerics)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (auto bad = firstNonFinite(
              static_cast<const uint8_t *>(inputs[i].data), inputs[i].size,
              sig.inputs[i].dtype))
        return Status::error("check-numerics: function '" + sig.name +
                             "': input " + std::to_string(i) + " (" +
                             sig.inputs[i].str() + ") holds " + bad->second +
                             " at element " + std::to_string(bad->first));
  using Clock = std::chrono::steady_clock;
  Clock::time_point last = times ? Clock::now() : Clock::time_point();
  bool skipEpilogue = false;
  for (size_t index = 0; index < commands.size(); ++index) {
    const detail::Command &command = commands[index];
    if (times && index > 0) {
      Clock::time_point now = Clock::now();
      (*times)[index - 1].first +=
          std::chrono::duration<double>(now - last).count();
      ++(*times)[index - 1].second;
      last = now;
    }
    if (const auto *dispatch = std::get_if<detail::DispatchCommand>(&command)) {
      if (skipEpilogue) { // it ran with the GEMM before it
        skipEpilogue = false;
        continue;
      }
      if (Status s = runDispatch(*dispatch, impl.kernels[dispatch->kernel],
                                 frame, *pool);
          !s)
        return s;
    } else if (const auto *gemm = std::get_if<detail::GemmCommand>(&command)) {
      // A GEMM epilogue next runs tile by tile with the GEMM's pieces, when
      // its workgroups are the GEMM's rows.
      const auto *next =
          index + 1 < commands.size()
              ? std::get_if<detail::DispatchCommand>(&commands[index + 1])
              : nullptr;
      const detail::PackedB *packed = packedWeights->get(*gemm, frame);
      constexpr size_t kInline = 32;
      if (next && next->gemmEpilogue && !checkNumerics &&
          gemm->batchCount == 1 &&
          next->maxWorkgroups == static_cast<uint32_t>(gemm->m) &&
          next->bindings.size() <= kInline) {
        void *args[kInline];
        for (size_t i = 0; i < next->bindings.size(); ++i)
          args[i] = frame.pointer(next->bindings[i]);
        Epilogue epilogue{impl.kernels[next->kernel], args};
        skipEpilogue = runGemm(*gemm, frame, *pool, &epilogue, packed);
      } else {
        runGemm(*gemm, frame, *pool, nullptr, packed);
      }
    } else if (const auto *conv = std::get_if<detail::ConvCommand>(&command)) {
      auto address = [&](const BufferRef &ref) {
        return static_cast<void *>(frame.pointer(ref));
      };
      auto floats = [&](const BufferRef &ref) {
        return reinterpret_cast<const float *>(frame.pointer(ref));
      };
      detail::ConvBuffers buffers{
          address(conv->input), floats(conv->filter),
          conv->hasBias ? floats(conv->bias) : nullptr,
          conv->hasResidual ? address(conv->residual) : nullptr,
          address(conv->output)};
      if (Status s = convs->run(*conv, buffers,
                                conv->filter.space == detail::Space::Constant);
          !s)
        return Status::error("function '" + sig.name + "': " + s.message());
    } else if (const auto *mp =
                   std::get_if<detail::PoolCommand>(&command)) {
      // The convolutions' layout matters (and is settled) only for a
      // blocked buffer.
      int block = mp->blockedInput || mp->blockedOutput ? convs->layoutBlock()
                                                        : 16;
      detail::runPool(*mp, frame.pointer(mp->input),
                         frame.pointer(mp->output), block, *pool);
    } else if (const auto *col =
                   std::get_if<detail::CollectiveCommand>(&command)) {
      StatusOr<Group *> g = group(col->meshAxes);
      if (!g)
        return g.status();
      uint64_t bytes = 0;
      Status s = detail::runCollective(
          *col, **g, static_cast<const uint8_t *>(frame.pointer(col->input)),
          static_cast<uint8_t *>(frame.pointer(col->output)), &bytes);
      lastCollectiveBytes.push_back(bytes);
      if (!s)
        return Status::error("function '" + sig.name + "': " + s.message());
    } else {
      const auto &copy = std::get<detail::CopyCommand>(command);
      if (copy.src.size > 0)
        std::memmove(frame.pointer(copy.dst), frame.pointer(copy.src),
                     copy.src.size);
    }
    if (checkNumerics)
      if (Status s = checkCommand(impl, sig.name, index, command, frame); !s)
        return s;
  }
  if (times && !commands.empty()) {
    (*times)[commands.size() - 1].first +=
        std::chrono::duration<double>(Clock::now() - last).count();
    ++(*times)[commands.size() - 1].second;
  }
  return Status::ok();
}

StatusOr<std::vector<HostTensor>>
Session::runGlobal(const std::string &function,
                   const std::vector<HostTensor> &inputs) {
  // Pieces and assembled outputs are allocated here: a failed allocation
  // is an error, not an exception.
  try {
    return runGlobalUnchecked(function, inputs);
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory running '" + function + "'");
  }
}

StatusOr<std::vector<HostTensor>>
Session::runGlobalUnchecked(const std::string &function,
                            const std::vector<HostTensor> &inputs) {
  const std::vector<int64_t> &mesh = exe->mesh();
  if (mesh.empty())
    return run(function, inputs);
  StatusOr<size_t> index = exe->findFunction(function, deviceRank);
  if (!index)
    return index.status();
  const FunctionSignature &sig = exe->functions()[*index];
  if (sig.ranks.empty())
    return run(function, inputs);
  // Splitting the inputs and assembling the outputs trust that this
  // device's signature holds the pieces its global placements give it.
  if (Status s = checkPieces(sig, mesh, coords, deviceRank); !s)
    return s;
  if (inputs.size() != sig.globalInputs.size())
    return Status::error("function '" + function + "' takes " +
                         std::to_string(sig.globalInputs.size()) +
                         " inputs, got " + std::to_string(inputs.size()));
  // This device's piece of every input.
  std::vector<HostTensor> local(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Placement &p = sig.globalInputs[i];
    if (inputs[i].dtype != p.spec.dtype || inputs[i].shape != p.spec.shape)
      return Status::error("input " + std::to_string(i) + ": expected " +
                           p.spec.str() + ", got " +
                           TensorSpec{inputs[i].dtype, inputs[i].shape}.str());
    std::vector<int64_t> shape, offset;
    localPiece(p.spec.shape, p.sbp, mesh, coords, shape, offset);
    HostTensor &t = local[i];
    t.dtype = p.spec.dtype;
    t.shape = shape;
    t.data.assign(TensorSpec{t.dtype, shape}.byteSize(), 0);
    // A partial input is the value on each axis' first device, zeros on
    // the others (their sum is the value).
    bool keep = true;
    for (size_t a = 0; a < p.sbp.size(); ++a)
      if (p.sbp[a].kind == SbpEntry::PartialSum && coords[a] != 0)
        keep = false;
    if (keep)
      detail::copyBox(inputs[i].data.data(), p.spec.shape, offset,
                      t.data.data(), shape,
                      std::vector<int64_t>(shape.size(), 0), shape,
                      dtypeSize(t.dtype));
  }
  std::vector<ConstBuffer> in;
  for (const HostTensor &t : local)
    in.push_back({t.data.data(), t.data.size()});
  std::vector<HostTensor> pieces(sig.outputs.size());
  std::vector<MutableBuffer> out;
  for (size_t i = 0; i < sig.outputs.size(); ++i) {
    pieces[i].dtype = sig.outputs[i].dtype;
    pieces[i].shape = sig.outputs[i].shape;
    pieces[i].data.assign(sig.outputs[i].byteSize(), 0);
    out.push_back({pieces[i].data.data(), pieces[i].data.size()});
  }
  if (Status s = run(*index, in, out); !s)
    return s;
  // Whole outputs: undo each axis' layout, innermost first.
  std::vector<HostTensor> results;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Placement &p = sig.globalOutputs[i];
    HostTensor current = std::move(pieces[i]);
    std::vector<SbpEntry> sbp = p.sbp;
    for (size_t a = sbp.size(); a-- > 0;) {
      if (sbp[a].kind == SbpEntry::Broadcast)
        continue;
      detail::CollectiveCommand cmd;
      cmd.dtype = current.dtype;
      cmd.inputShape = current.shape;
      cmd.meshAxes = {static_cast<int64_t>(a)};
      std::vector<SbpEntry> next = sbp;
      next[a].kind = SbpEntry::Broadcast;
      std::vector<int64_t> shape, offset;
      localPiece(p.spec.shape, next, mesh, coords, shape, offset);
      cmd.outputShape = shape;
      if (sbp[a].kind == SbpEntry::Split) {
        cmd.kind = detail::CollectiveCommand::AllGather;
        cmd.dim = sbp[a].dim;
      } else {
        cmd.kind = detail::CollectiveCommand::AllReduce;
        cmd.reduction = sbp[a].kind == SbpEntry::PartialMax ? Reduction::Max
                                                            : Reduction::Sum;
      }
      HostTensor whole;
      whole.dtype = current.dtype;
      whole.shape = shape;
      whole.data.assign(TensorSpec{whole.dtype, shape}.byteSize(), 0);
      StatusOr<Group *> g = group(cmd.meshAxes);
      if (!g)
        return g.status();
      if (Status s = detail::runCollective(cmd, **g, current.data.data(),
                                           whole.data.data());
          !s)
        return Status::error("assembling output " + std::to_string(i) + ": " +
                             s.message());
      current = std::move(whole);
      sbp = next;
    }
    results.push_back(std::move(current));
  }
  return results;
}
