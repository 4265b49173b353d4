//===- CpuExecutor.cpp - Running functions on the CPU ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The CPU device: memory is host memory, kernels are the ELF library's entry
// points called once per workgroup on the thread pool, GEMMs run on Flow's
// kernels or the BLAS (with their epilogues tile by tile), convolutions and
// pools on the convolution library, collectives on the communicator.
//
// Everything a command touches was checked at load time: each BufferRef lies
// inside its buffer and each gemm operand's extent inside its BufferRef.
//
//===----------------------------------------------------------------------===//

#include "AlignedBuffer.h"
#include "Attention.h"
#include "Bf16.h"
#include "BlasCalls.h"
#include "Collectives.h"
#include "CommandLoop.h"
#include "Convolution.h"
#include "Executor.h"
#include "Gemm.h"
#include "Pooling.h"
#include "flow/runtime/Blas.h"
#include "flow/runtime/Device.h"
#include "flow/runtime/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <unordered_map>
#include <variant>

using namespace flow::runtime;
using detail::BufferRef;
using detail::firstNonFinite;

namespace {

/// Dispatches estimated to touch fewer elements run as one workgroup.
constexpr uint64_t kParallelWork = 32768;

/// True if \p f runs a GEMM or a convolution (both need the BLAS).
bool runsGemm(const detail::Function &f) {
  for (const detail::Command &c : f.commands)
    if (std::holds_alternative<detail::GemmCommand>(c) ||
        std::holds_alternative<detail::ConvCommand>(c) ||
        std::holds_alternative<detail::AttentionCommand>(c))
      return true;
  return false;
}

/// The buffers of one call.
struct Frame {
  const std::vector<ConstBuffer> &inputs;
  const std::vector<MutableBuffer> &outputs;
  uint8_t *arena;
  const std::vector<detail::Constant> &constants;
  /// This call's values of the function's size symbols (null without).
  const int64_t *symbols = nullptr;

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
    case detail::Space::Symbols:
      base = reinterpret_cast<uint8_t *>(const_cast<int64_t *>(symbols));
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
  } else {
    std::string kind, what;
    detail::describeCommand(impl, command, kind, what);
    what = what.empty() ? kind : kind + " " + what;
    if (const auto *g = std::get_if<detail::GemmCommand>(&command))
      return check(g->c, g->cDtype, what);
    if (const auto *c = std::get_if<detail::CollectiveCommand>(&command))
      return check(c->output, c->dtype, "collective");
    // Layout does not matter: any non-finite element is reported (its
    // index is in the buffer's layout).
    if (const auto *c = std::get_if<detail::ConvCommand>(&command))
      return check(c->output, c->outputBf16 ? DType::BF16 : DType::F32, what);
    if (const auto *p = std::get_if<detail::PoolCommand>(&command))
      return check(p->output, p->outputBf16 ? DType::BF16 : DType::F32, what);
    if (const auto *a = std::get_if<detail::AttentionCommand>(&command))
      return check(a->output, a->dtype, what);
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

/// Where a GEMM reads and writes: A and B as bytes (f32, or bf16 elements
/// where `bf16`), C as f32.
struct GemmOperands {
  const uint8_t *a = nullptr, *b = nullptr;
  float *c = nullptr;
  bool bf16 = false;
};

/// The operands of a plain command (GemmCommand::isPlain) in \p frame.
GemmOperands plainOperands(const detail::GemmCommand &cmd,
                           const Frame &frame) {
  return {frame.pointer(cmd.a), frame.pointer(cmd.b),
          reinterpret_cast<float *>(frame.pointer(cmd.c)),
          cmd.abDtype == DType::BF16};
}

/// Runs \p cmd's products on \p ops. Returns true if it also ran
/// `epilogue` (false: the caller runs it). \p packedB: B packed for Flow's
/// kernels (packB), when B is a constant.
bool runGemm(const detail::GemmCommand &cmd, const GemmOperands &ops,
             ThreadPool &pool, const Epilogue *epilogue = nullptr,
             const detail::PackedB *packedB = nullptr) {
  if (cmd.m == 0 || cmd.n == 0 || cmd.batchCount == 0)
    return false;
  const bool bf16 = ops.bf16;
  const int64_t es = bf16 ? 2 : 4;
  const uint8_t *a = ops.a;
  const uint8_t *b = ops.b;
  float *c = ops.c;
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
      return runGemm(cmd, ops, pool, nullptr, packedB);
    for (int64_t i = 0; i < count; ++i)
      piece(i);
    return false;
  }
  pool.parallelFor(count, piece);
  return epilogue != nullptr;
}

/// The library epilogue of \p cmd on its result C: the bias added to every
/// row, then the activation (as cuBLASLt's epilogues compute them).
/// \p c: C in f32; \p bias: the bias in f32 (null without one).
void applyGemmEpilogue(const detail::GemmCommand &cmd, float *c,
                       const float *bias, ThreadPool &pool) {
  if (!cmd.hasEpilogue() || cmd.m == 0 || cmd.n == 0)
    return;
  const int64_t rows = cmd.batchCount * cmd.m, n = cmd.n;
  auto range = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *row = c + r * n;
      for (int64_t j = 0; j < n; ++j) {
        float v = row[j] + (bias ? bias[j] : 0.0f);
        if (cmd.activation == detail::GemmCommand::Relu)
          v = std::isnan(v) || v > 0.0f ? v : 0.0f; // as flow.relu: NaN stays
        else if (cmd.activation == detail::GemmCommand::GeluTanh)
          v = 0.5f * v *
              (1.0f + std::tanh(0.7978845608028654f *
                                (v + 0.044715f * v * v * v)));
        row[j] = v;
      }
    }
  };
  int64_t pieces = std::min<int64_t>(pool.size(), rows);
  if (pieces <= 1 || rows * n < int64_t(kParallelWork)) {
    range(0, rows);
    return;
  }
  pool.parallelFor(pieces, [&](int64_t p) {
    range(p * rows / pieces, (p + 1) * rows / pieces);
  });
}

/// Runs a command that is not plain (GemmCommand::isPlain) as the GPU's
/// library does: f16 or bf16 operands widened to f32 (f32 ones rounded to
/// TF32 where allowed), products summed in f32, the epilogue applied in
/// f32, and C rounded to its type once at the end.
Status runWidenedGemm(const detail::GemmCommand &cmd, const Frame &frame,
                      ThreadPool &pool) {
  // (TF32 rounds the products' operands only: never the bias.)
  auto widen = [&](const BufferRef &ref, DType dtype, bool tf32,
                   AlignedBuffer &out, const float *&result) {
    size_t count = ref.size / dtypeSize(dtype);
    if (dtype == DType::F32 && !tf32) {
      result = reinterpret_cast<const float *>(frame.pointer(ref));
      return true;
    }
    if (!out.allocate(count * sizeof(float)))
      return false;
    auto *to = reinterpret_cast<float *>(out.data());
    const uint8_t *from = frame.pointer(ref);
    for (size_t i = 0; i < count; ++i) {
      if (dtype == DType::F32) {
        float v;
        std::memcpy(&v, from + 4 * i, sizeof v);
        to[i] = detail::roundToTf32(v);
        continue;
      }
      uint16_t bits;
      std::memcpy(&bits, from + 2 * i, sizeof bits);
      to[i] = dtype == DType::F16 ? detail::widenF16(bits)
                                  : detail::widenBf16(bits);
    }
    result = to;
    return true;
  };
  AlignedBuffer wideA, wideB, wideBias, wideC;
  const float *a = nullptr, *b = nullptr, *bias = nullptr;
  const size_t cCount = cmd.c.size / dtypeSize(cmd.cDtype);
  bool ok = widen(cmd.a, cmd.abDtype, cmd.allowTf32, wideA, a) &&
            widen(cmd.b, cmd.abDtype, cmd.allowTf32, wideB, b) &&
            (!cmd.hasBias ||
             widen(cmd.bias, cmd.cDtype, false, wideBias, bias));
  float *c = reinterpret_cast<float *>(frame.pointer(cmd.c));
  if (ok && cmd.cDtype != DType::F32) {
    ok = wideC.allocate(cCount * sizeof(float));
    c = reinterpret_cast<float *>(wideC.data());
  }
  if (!ok)
    return Status::error("out of memory widening a GEMM's operands to f32");
  GemmOperands ops{reinterpret_cast<const uint8_t *>(a),
                   reinterpret_cast<const uint8_t *>(b), c, false};
  runGemm(cmd, ops, pool);
  applyGemmEpilogue(cmd, c, bias, pool);
  if (cmd.cDtype != DType::F32) {
    uint8_t *to = frame.pointer(cmd.c);
    for (size_t i = 0; i < cCount; ++i) {
      uint16_t bits = cmd.cDtype == DType::F16 ? detail::roundToF16(c[i])
                                               : detail::roundToBf16(c[i]);
      std::memcpy(to + 2 * i, &bits, sizeof bits);
    }
  }
  return Status::ok();
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


/// True when \p exe has a convolution command and a session made now runs
/// them on a library that runs on OpenMP: the session's loops then run on
/// OpenMP's team too, so that one set of threads owns the cores.
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

/// The constant B of each GEMM command that runs on Flow's kernels, packed
/// at the command's first run.
struct PackedWeights {
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


class CpuExecutor final : public detail::Executor {
public:
  CpuExecutor(std::shared_ptr<const Executable> exe, Device &device,
              int threads)
      : exe(std::move(exe)), device(device),
        pool(threads, convolutionsOnOpenMp(this->exe->implementation())),
        convs(pool.size()),
        arenas(this->exe->functions().size()) {}

  int threads() const override { return pool.size(); }

  std::string libraryKernel(const detail::Command &command) const override {
    if (const auto *c = std::get_if<detail::ConvCommand>(&command))
      return convs.kernel(*c);
    return "";
  }

  Status run(size_t function, const std::vector<ConstBuffer> &inputs,
             const std::vector<MutableBuffer> &outputs,
             const detail::CallHooks &hooks) override;

private:
  std::shared_ptr<const Executable> exe;
  Device &device;
  ThreadPool pool;
  /// The convolution commands' library state.
  mutable detail::ConvRunner convs;
  /// One arena per function, allocated at its first call.
  std::vector<DeviceMemory> arenas;
  /// Constant GEMM operands packed for Flow's kernels, by command.
  PackedWeights packedWeights;
  /// Collectives in flight (async ones, and the collectives started after
  /// them, which queue behind them).
  detail::CollectiveQueue collectives;
  class CpuCommands;
};

/// The CPU's way with each command: kernels and libraries on the caller's
/// buffers, on the executor's thread pool.
class CpuExecutor::CpuCommands final : public detail::CommandSink {
public:
  CpuCommands(CpuExecutor &executor, const Executable::Impl &impl,
              const FunctionSignature &sig, const Frame &frame,
              const std::vector<detail::Command> &commands,
              const detail::CallHooks &hooks, std::vector<uint64_t> *bytes)
      : x(executor), impl(impl), sig(sig), frame(frame), commands(commands),
        hooks(hooks), bytes(bytes),
        asyncAllowed(detail::asyncCollectivesEnabled()),
        last(hooks.times ? Clock::now() : Clock::time_point()) {}

  Status before(size_t index) override {
    // Each command's time is the time until the next one starts.
    if (hooks.times && index > 0) {
      Clock::time_point now = Clock::now();
      (*hooks.times)[index - 1].first +=
          std::chrono::duration<double>(now - last).count();
      ++(*hooks.times)[index - 1].second;
      last = now;
    }
    return Status::ok();
  }
  /// The last command's time.
  void finishTiming() {
    if (!hooks.times || commands.empty())
      return;
    (*hooks.times)[commands.size() - 1].first +=
        std::chrono::duration<double>(Clock::now() - last).count();
    ++(*hooks.times)[commands.size() - 1].second;
  }

  Status dispatch(const detail::DispatchCommand &dispatch, size_t) override {
    if (skipEpilogue) { // it ran with the GEMM before it
      skipEpilogue = false;
      return Status::ok();
    }
    if (!dispatch.rows.active())
      return runDispatch(dispatch, impl.kernels[dispatch.kernel], frame,
                         x.pool);
    // The work and workgroups of this call's rows.
    detail::DispatchCommand resized = dispatch;
    int64_t rows = dispatch.rows(frame.symbols);
    resized.work = dispatch.work / dispatch.rows.max * rows;
    resized.maxWorkgroups = static_cast<uint32_t>(
        std::min<int64_t>(dispatch.maxWorkgroups, std::max<int64_t>(rows, 1)));
    return runDispatch(resized, impl.kernels[dispatch.kernel], frame, x.pool);
  }

  Status gemm(const detail::GemmCommand &command, size_t index) override {
    detail::GemmCommand resized;
    const detail::GemmCommand &gemm = withRows(command, resized);
    if (!gemm.isPlain())
      return runWidenedGemm(gemm, frame, x.pool);
    // A GEMM epilogue next runs tile by tile with the GEMM's pieces, when
    // its workgroups are the GEMM's rows.
    const auto *next =
        index + 1 < commands.size() && !command.rows.active()
            ? std::get_if<detail::DispatchCommand>(&commands[index + 1])
            : nullptr;
    // (Packed weights are kept by command: the loaded one.)
    const detail::PackedB *packed = x.packedWeights.get(command, frame);
    const GemmOperands ops = plainOperands(gemm, frame);
    constexpr size_t kInline = 32;
    if (next && next->gemmEpilogue && !hooks.checkNumerics &&
        gemm.batchCount == 1 && !gemm.hasEpilogue() &&
        next->maxWorkgroups == static_cast<uint32_t>(gemm.m) &&
        next->bindings.size() <= kInline) {
      void *args[kInline];
      for (size_t i = 0; i < next->bindings.size(); ++i)
        args[i] = frame.pointer(next->bindings[i]);
      Epilogue epilogue{impl.kernels[next->kernel], args};
      skipEpilogue = runGemm(gemm, ops, x.pool, &epilogue, packed);
    } else {
      runGemm(gemm, ops, x.pool, nullptr, packed);
      applyGemmEpilogue(gemm, ops.c,
                        gemm.hasBias ? reinterpret_cast<const float *>(
                                           frame.pointer(gemm.bias))
                                     : nullptr,
                        x.pool);
    }
    return Status::ok();
  }

  /// A narrow (f16 or bf16) convolution, as the CUDA target's emulation
  /// runs it: its tensors widened to f32, the f32 convolution, the output
  /// rounded back. (On a GPU cuDNN runs it on tensor cores.)
  /// \p key: the loaded command (its primitives are kept by it).
  Status narrowConv(const detail::ConvCommand &conv,
                    const detail::ConvCommand &key) {
    bool half = conv.element == DType::F16;
    auto widen = [&](const BufferRef &ref) {
      const auto *bits = reinterpret_cast<const uint16_t *>(frame.pointer(ref));
      std::vector<float> out(ref.size / 2);
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = half ? detail::widenF16(bits[i]) : detail::widenBf16(bits[i]);
      return out;
    };
    std::vector<float> input = widen(conv.input), filter = widen(conv.filter),
                       bias, residual, output(conv.output.size / 2);
    if (conv.hasBias)
      bias = widen(conv.bias);
    if (conv.hasResidual) {
      residual = widen(conv.residual);
      // In place: the convolution adds what the output holds.
      if (conv.residualInPlace)
        output = residual;
    }
    detail::ConvBuffers buffers{
        input.data(), filter.data(), conv.hasBias ? bias.data() : nullptr,
        !conv.hasResidual      ? nullptr
        : conv.residualInPlace ? static_cast<const void *>(output.data())
                               : residual.data(),
        output.data()};
    if (Status s = x.convs.run(conv, buffers, /*filterIsConstant=*/false, &key);
        !s)
      return Status::error("function '" + sig.name + "': " + s.message());
    auto *bits = reinterpret_cast<uint16_t *>(frame.pointer(conv.output));
    for (size_t i = 0; i < output.size(); ++i)
      bits[i] =
          half ? detail::roundToF16(output[i]) : detail::roundToBf16(output[i]);
    return Status::ok();
  }

  Status conv(const detail::ConvCommand &command, size_t) override {
    detail::ConvCommand resized;
    const detail::ConvCommand &conv = withRows(command, resized);
    if (conv.element != DType::F32)
      return narrowConv(conv, command);
    auto address = [&](const BufferRef &ref) {
      return static_cast<void *>(frame.pointer(ref));
    };
    auto floats = [&](const BufferRef &ref) {
      return reinterpret_cast<const float *>(frame.pointer(ref));
    };
    detail::ConvBuffers buffers{address(conv.input), floats(conv.filter),
                                conv.hasBias ? floats(conv.bias) : nullptr,
                                conv.hasResidual ? address(conv.residual)
                                                 : nullptr,
                                address(conv.output)};
    if (Status s =
            x.convs.run(conv, buffers,
                        conv.filter.space == detail::Space::Constant, &command);
        !s)
      return Status::error("function '" + sig.name + "': " + s.message());
    return Status::ok();
  }

  Status pool(const detail::PoolCommand &command, size_t) override {
    detail::PoolCommand resized;
    if (command.rows.active()) {
      resized = command;
      int64_t rows = command.rows(frame.symbols);
      for (BufferRef *ref : {&resized.input, &resized.output})
        ref->size = ref->size / command.n * rows;
      resized.n = rows;
    }
    const detail::PoolCommand &pool = command.rows.active() ? resized : command;
    // The convolutions' layout matters (and is settled) only for a blocked
    // buffer.
    int block =
        pool.blockedInput || pool.blockedOutput ? x.convs.layoutBlock() : 16;
    detail::runPool(pool, frame.pointer(pool.input), frame.pointer(pool.output),
                    block, x.pool);
    return Status::ok();
  }

  Status attention(const detail::AttentionCommand &command, size_t) override {
    detail::AttentionCommand resized;
    const detail::AttentionCommand &attention = withRows(command, resized);
    const void *mask =
        attention.hasMask ? frame.pointer(attention.mask) : nullptr;
    detail::runAttention(attention, frame.pointer(attention.query),
                         frame.pointer(attention.key),
                         frame.pointer(attention.value), mask,
                         frame.pointer(attention.output), x.pool);
    return Status::ok();
  }

  Status collective(const detail::CollectiveCommand &col,
                    size_t index) override {
    if (!hooks.group)
      return Status::error("function '" + sig.name +
                           "' runs a collective but has no communicator");
    StatusOr<Group *> g = hooks.group(col.meshAxes);
    if (!g)
      return g.status();
    const auto *in = static_cast<const uint8_t *>(frame.pointer(col.input));
    auto *out = static_cast<uint8_t *>(frame.pointer(col.output));
    // Checking numerics reads every output as it is written: no overlap.
    bool async = col.async && asyncAllowed && !hooks.checkNumerics &&
                 (*g)->callableFromAnyThread();
    Status s = Status::ok();
    if (async) {
      tickets.resize(commands.size());
      tickets[index] = x.collectives.start(col, **g, in, out);
    } else if (x.collectives.busy()) {
      // Behind the ones in flight, on the same thread, in order.
      s = x.collectives.wait(x.collectives.start(col, **g, in, out), bytes);
    } else {
      // The bytes the communicator itself handed to its transport.
      uint64_t before = (*g)->bytesPassed();
      s = detail::runCollective(col, **g, in, out);
      if (bytes)
        bytes->push_back((*g)->bytesPassed() - before);
    }
    if (!s)
      return Status::error("function '" + sig.name + "': " + s.message());
    return Status::ok();
  }

  Status wait(const detail::WaitCommand &wait, size_t) override {
    // Zero for a collective that ran where it started (nothing to wait
    // for).
    uint64_t ticket =
        wait.collective < tickets.size() ? tickets[wait.collective] : 0;
    if (Status s = x.collectives.wait(ticket, bytes); !s)
      return Status::error("function '" + sig.name + "': " + s.message());
    return Status::ok();
  }

  Status copy(const detail::CopyCommand &copy, size_t) override {
    uint64_t bytes = copy.src.size;
    if (copy.rows.active())
      bytes = bytes / copy.rows.max * copy.rows(frame.symbols);
    if (bytes > 0)
      std::memmove(frame.pointer(copy.dst), frame.pointer(copy.src), bytes);
    return Status::ok();
  }

  /// \p command for this call's batch (itself when it does not vary), in
  /// \p storage.
  const detail::ConvCommand &withRows(const detail::ConvCommand &command,
                                      detail::ConvCommand &storage) const {
    if (!command.rows.active())
      return command;
    storage = command;
    int64_t rows = command.rows(frame.symbols);
    for (detail::BufferRef *ref :
         {&storage.input, &storage.residual, &storage.output})
      ref->size = ref->size / command.n * rows;
    storage.n = rows;
    return storage;
  }
  const detail::AttentionCommand &
  withRows(const detail::AttentionCommand &command,
           detail::AttentionCommand &storage) const {
    if (!command.rows.active())
      return command;
    storage = command;
    int64_t rows = command.rows(frame.symbols), max = command.leading[0];
    for (detail::BufferRef *ref :
         {&storage.query, &storage.key, &storage.value, &storage.output})
      ref->size = ref->size / max * rows;
    storage.leading[0] = rows;
    storage.batch = command.batch / max * rows;
    return storage;
  }

  /// \p command sized for this call's rows (itself when they do not vary),
  /// in \p storage.
  const detail::GemmCommand &withRows(const detail::GemmCommand &command,
                                      detail::GemmCommand &storage) const {
    if (!command.rows.active())
      return command;
    storage = command;
    int64_t rows = command.rows(frame.symbols);
    auto shrink = [&](detail::BufferRef &ref) {
      ref.size = ref.size / command.rows.max * rows;
    };
    int d = command.rowsDim;
    if (d < 0) {
      storage.m = static_cast<int>(rows);
      shrink(storage.a);
    } else {
      storage.batchShape[d] = rows;
      storage.batchCount = storage.batchCount / command.rows.max * rows;
      if (storage.aBatchStrides[d] != 0)
        shrink(storage.a);
      if (storage.bBatchStrides[d] != 0)
        shrink(storage.b);
    }
    shrink(storage.c);
    return storage;
  }

  Status after(const detail::Command &command, size_t index) override {
    // A function whose rows vary is checked at its outputs (Session): its
    // commands' buffers are sized for the upper bound.
    if (hooks.checkNumerics && !hooks.symbols)
      return checkCommand(impl, sig.name, index, command, frame);
    return Status::ok();
  }

private:
  using Clock = std::chrono::steady_clock;
  CpuExecutor &x;
  const Executable::Impl &impl;
  const FunctionSignature &sig;
  const Frame &frame;
  const std::vector<detail::Command> &commands;
  const detail::CallHooks &hooks;
  std::vector<uint64_t> *bytes;
  const bool asyncAllowed;
  Clock::time_point last;
  /// Each async collective's ticket, by command position.
  std::vector<uint64_t> tickets;
  /// The next dispatch ran with the GEMM before it.
  bool skipEpilogue = false;
};

Status CpuExecutor::run(size_t function, const std::vector<ConstBuffer> &inputs,
                        const std::vector<MutableBuffer> &outputs,
                        const detail::CallHooks &hooks) {
  const Executable::Impl &impl = exe->implementation();
  const FunctionSignature &sig = impl.signatures[function];
  DeviceMemory &arena = arenas[function];
  if (!arena.address() && sig.arenaSize > 0) {
    StatusOr<DeviceMemory> memory = device.allocate(
        sig.arenaSize, "the arena of '" + sig.name + "'");
    if (!memory)
      return memory.status();
    arena = std::move(*memory);
  }
  Frame frame{inputs, outputs, reinterpret_cast<uint8_t *>(arena.address()),
              impl.constants, hooks.symbols ? hooks.symbols->data() : nullptr};
  const std::vector<detail::Command> &commands =
      impl.functions[function].commands;
  // Collectives in flight when a command fails finish before the call
  // returns (they use its buffers); their bytes are reported in order.
  std::vector<uint64_t> *bytes = hooks.collectiveBytes;
  struct Drain {
    detail::CollectiveQueue &queue;
    std::vector<uint64_t> *bytes;
    ~Drain() { (void)queue.drain(bytes); }
  } drain{collectives, bytes};
  CpuCommands sink{*this, impl, sig, frame, commands, hooks, bytes};
  if (Status s = detail::runCommands(commands, sink); !s)
    return s;
  sink.finishTiming();
  return Status::ok();
}

/// Host memory, 64-byte aligned (256 for the interface's promise).
class CpuDevice final : public Device {
public:
  CpuDevice() { deviceInfo.name = "cpu"; }
  const DeviceInfo &info() const override { return deviceInfo; }

  StatusOr<DeviceMemory> allocate(uint64_t bytes,
                                  const std::string &what) override {
    if (bytes == 0)
      return DeviceMemory();
    uint64_t rounded = (bytes + 255) / 256 * 256;
    void *memory = rounded < bytes ? nullptr : std::aligned_alloc(256, rounded);
    if (!memory)
      return Status::error("out of memory allocating " + what + " (" +
                           std::to_string(bytes) + " bytes)");
    return DeviceMemory(this, reinterpret_cast<uint64_t>(memory), bytes);
  }
  Status copyToDevice(uint64_t dst, const void *src, uint64_t bytes) override {
    if (bytes)
      std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return Status::ok();
  }
  Status copyToHost(void *dst, uint64_t src, uint64_t bytes) override {
    if (bytes)
      std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    return Status::ok();
  }

  StatusOr<std::unique_ptr<detail::Executor>>
  createExecutor(std::shared_ptr<const Executable> exe, int threads) override {
    if (exe->target() != ExecutableTarget::Cpu)
      return detail::wrongTarget(*exe, "CPU");
    // GEMMs need the BLAS: load it now, so that a missing library is an
    // error here rather than at the first call.
    for (const detail::Function &f : exe->implementation().functions)
      if (runsGemm(f)) {
        if (StatusOr<BlasInfo> blas = loadBlas(); !blas)
          return blas.status();
        break;
      }
    return std::unique_ptr<detail::Executor>(
        new CpuExecutor(std::move(exe), *this, threads));
  }

protected:
  void release(uint64_t address) override {
    std::free(reinterpret_cast<void *>(address));
  }

private:
  DeviceInfo deviceInfo;
};

} // namespace

namespace flow {
namespace runtime {
namespace detail {
std::shared_ptr<Device> createCpuDevice() {
  return std::make_shared<CpuDevice>();
}
} // namespace detail
} // namespace runtime
} // namespace flow
