//===- Executable.cpp - Loading and verifying .fbin executables -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The file is untrusted until it is loaded. Loading runs, in order: the
// FlatBuffers verifier (every offset and length inside the file), the format
// version, the checksum over every byte of the file, the semantic checks
// (enums, shapes, every buffer reference inside its buffer, gemm extents,
// unique kernel symbols), the parameter archive, and only then dlopen, symbol
// lookup, and the check of the library's own ABI table (flow/runtime/
// KernelAbi.h) against the metadata. Nothing is run, and no memory is handed
// out, before all of them pass. Each check fails with one message naming the
// function, command and field at fault.
//
// What is not caught: a file forged on purpose (metadata and kernel code
// changed together and the checksum recomputed). A .fbin holds native code,
// to be trusted like a shared library.
//
//===----------------------------------------------------------------------===//

#include "Bf16.h"
#include "ExecutableImpl.h"
#include "flow/runtime/Sha256.h"

#include "flow/runtime/Checksum.h"
#include "flow/runtime/CpuFeatures.h"
#include "flow/runtime/KernelAbi.h"
#include "flow/runtime/executable_generated.h"

#include <type_traits>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;
namespace fbs = flow::fbs;

static_assert(static_cast<int>(fbs::DType::F32) == int(DType::F32) &&
                  static_cast<int>(fbs::DType::F16) == int(DType::F16) &&
                  static_cast<int>(fbs::DType::BF16) == int(DType::BF16) &&
                  static_cast<int>(fbs::DType::I64) == int(DType::I64) &&
                  static_cast<int>(fbs::DType::I32) == int(DType::I32) &&
                  static_cast<int>(fbs::DType::I1) == int(DType::I1) &&
                  static_cast<int>(fbs::DType::F64) == int(DType::F64) &&
                  static_cast<int>(fbs::DType::I16) == int(DType::I16) &&
                  static_cast<int>(fbs::DType::I8) == int(DType::I8) &&
                  static_cast<int>(fbs::DType::U8) == int(DType::U8) &&
                  static_cast<int>(fbs::DType::U16) == int(DType::U16) &&
                  static_cast<int>(fbs::DType::U32) == int(DType::U32) &&
                  static_cast<int>(fbs::DType::U64) == int(DType::U64) &&
                  static_cast<int>(fbs::DType::MAX) == int(DType::U64),
              "runtime and schema DType values differ");
static_assert(
    static_cast<int>(fbs::Space::Input) == int(detail::Space::Input) &&
        static_cast<int>(fbs::Space::Output) == int(detail::Space::Output) &&
        static_cast<int>(fbs::Space::Arena) == int(detail::Space::Arena) &&
        static_cast<int>(fbs::Space::Constant) == int(detail::Space::Constant),
    "runtime and schema Space values differ");

//===----------------------------------------------------------------------===//
// TensorSpec
//===----------------------------------------------------------------------===//

int64_t TensorSpec::numElements() const {
  // A loaded spec's element count fits (the loader checks it), but its
  // partial products need not: [2^62, 4, 0] holds nothing. Any empty
  // dimension makes it 0; otherwise the product is in range.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0;
  uint64_t n = 1;
  for (int64_t dim : shape)
    n *= static_cast<uint64_t>(dim);
  return static_cast<int64_t>(n);
}

size_t TensorSpec::byteSize() const {
  return static_cast<size_t>(numElements()) * dtypeSize(dtype);
}

int64_t FunctionSignature::tiedInput(size_t output) const {
  for (const StateSpec &s : state)
    if (s.output == static_cast<int64_t>(output))
      return static_cast<int64_t>(s.input);
  return -1;
}

std::string TensorSpec::str() const {
  std::string out = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

namespace {

/// Checked a * b and a + b on sizes.
bool mulOk(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}
bool addOk(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// FlatBuffers 2 verifies the alignment of a vector's length but not of its
/// elements; 8-byte elements (longs, BufferRefs) must be aligned to be read.
/// (The builder does not align empty vectors, which are never read.) The
/// file is 64-byte aligned in memory, so addresses tell.
template <typename T> bool isAligned(const flatbuffers::Vector<T> *vector) {
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->Data()) % 8 == 0;
}

Status misaligned(const std::string &what) {
  return Status::error(what + " is misaligned (the file is corrupt)");
}

/// \p name with bytes outside printable ASCII escaped, for messages.
std::string printable(const std::string &name) {
  std::string out;
  for (unsigned char c : name) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char buf[8];
    snprintf(buf, sizeof(buf), "\\x%02x", c);
    out += buf;
  }
  return out;
}

/// The byte sizes of the buffers one function can reference.
struct BufferSizes {
  std::vector<uint64_t> inputs, outputs;
  /// Inputs a state's next value is written into; outputs nothing writes
  /// (their value is written into their input).
  std::vector<bool> writableInputs, tiedOutputs;
  uint64_t arena = 0;
  const std::vector<detail::Constant> *constants = nullptr;
};

/// Runs the semantic checks on a file the FlatBuffers verifier accepted, and
/// fills an Executable::Impl from it.
class Checker {
public:
  Checker(const fbs::Executable &file, Executable::Impl &impl,
          const LoadOptions &options)
      : file(file), impl(impl), options(options) {}

  Status verify();

private:
  Status verifyHeader();
  Status verifyKernels();
  Status verifyGpuKernels();
  Status verifyConstants();
  Status verifyFunction(size_t index);
  /// Each wait names an earlier async collective, once; each async
  /// collective is waited for; no command in between writes its input or
  /// touches its output.
  Status verifyWaits(const std::string &ctx,
                     const std::vector<detail::Command> &commands);
  /// The buffers `command` reads and writes.
  void commandBuffers(const detail::Command &command,
                      std::vector<detail::BufferRef> &reads,
                      std::vector<detail::BufferRef> &writes);
  Status loadDeviceOffsets(const fbs::Constant *entry, size_t index,
                           detail::Constant &constant);
  Status verifyTensor(const fbs::TensorType *type, const std::string &what,
                      TensorSpec &spec, uint64_t &bytes);
  Status verifyCommand(const std::string &ctx, fbs::Command type,
                       const void *value, detail::Command &out);
  Status verifyDispatch(const std::string &ctx, const fbs::Dispatch &cmd,
                        detail::DispatchCommand &out);
  Status verifyGemm(const std::string &ctx, const fbs::Gemm &cmd,
                    detail::GemmCommand &out);
  Status verifyCopy(const std::string &ctx, const fbs::Copy &cmd,
                    detail::CopyCommand &out);
  Status verifyCollective(const std::string &ctx, const fbs::Collective &cmd,
                          detail::CollectiveCommand &out);
  Status verifyConv(const std::string &ctx, const fbs::Conv &cmd,
                    detail::ConvCommand &out);
  /// fbs::MaxPool or fbs::AvgPool.
  template <typename Table>
  Status verifyPool(const std::string &ctx, const Table &cmd,
                    detail::PoolCommand &out);
  /// Checks the state table (names unique, inputs and outputs in range and
  /// of one type, each used once) and marks its buffers in `sizes`.
  Status verifyState(
      const std::string &ctx,
      const flatbuffers::Vector<flatbuffers::Offset<fbs::State>> *list,
      FunctionSignature &sig);
  /// Checks the index checks: inputs in range, of an integer type, bounds
  /// not negative.
  Status verifyIndexChecks(
      const std::string &ctx,
      const flatbuffers::Vector<flatbuffers::Offset<fbs::IndexCheck>> *list,
      FunctionSignature &sig);
  Status verifyPlacements(const std::string &ctx,
                          const flatbuffers::Vector<
                              flatbuffers::Offset<fbs::Placement>> *list,
                          std::vector<Placement> &out);
  /// Checks a command's input and output refs (verifyRef) and that they
  /// hold \p inBytes and \p outBytes.
  Status verifyInOut(const std::string &ctx, const fbs::BufferRef *input,
                     const fbs::BufferRef *output, uint64_t inBytes,
                     uint64_t outBytes, detail::BufferRef &in,
                     detail::BufferRef &out);
  /// Checks that \p ref lies inside its buffer; \p writable refs must not be
  /// in the input or constant space.
  Status verifyRef(const std::string &ctx, const std::string &what,
                   const fbs::BufferRef *ref, bool writable,
                   detail::BufferRef &out);
  Status bindParameters();
  Status loadKernels();
  /// Each kernel's name and metadata (Impl::kernelNames, kernelMeta).
  Status readKernelMeta(const fbs::Kernel &kernel, const std::string &ctx);
  Status loadKernelMeta();

  const fbs::Executable &file;
  Executable::Impl &impl;
  const LoadOptions &options;
  /// The buffers of the function being verified.
  BufferSizes sizes;
};

Status Checker::verify() {
  if (Status s = verifyHeader(); !s)
    return s;
  if (Status s = verifyKernels(); !s)
    return s;
  if (Status s = verifyConstants(); !s)
    return s;
  const auto *functions = file.functions();
  if (!functions || functions->size() == 0)
    return Status::error("executable has no functions");
  std::set<std::string> names;
  for (size_t i = 0; i < functions->size(); ++i) {
    if (Status s = verifyFunction(i); !s)
      return s;
    if (!names.insert(impl.signatures.back().name).second)
      return Status::error("two functions are named '" +
                           printable(impl.signatures.back().name) + "'");
  }
  if (Status s = bindParameters(); !s)
    return s;
  return loadKernels();
}

Status Checker::verifyHeader() {
  if (!isAligned(file.mesh()))
    return misaligned("mesh");
  if (const auto *mesh = file.mesh()) {
    int64_t devices = 1;
    for (int64_t d : *mesh) {
      if (d < 1 || d > 65536 || devices > 65536)
        return Status::error("invalid mesh dimension " + std::to_string(d));
      devices *= d;
      impl.mesh.push_back(d);
    }
  }
  fbs::Target target = file.target();
  if (target == fbs::Target::CUDA)
    impl.target = ExecutableTarget::Cuda;
  else if (target != fbs::Target::CPU)
    return Status::error("invalid target " +
                         std::to_string(static_cast<int>(target)));
  return Status::ok();
}

Status Checker::verifyKernels() {
  const auto *kernels = file.kernels();
  size_t count = kernels ? kernels->size() : 0;
  std::set<std::string> symbols;
  for (size_t i = 0; i < count; ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    const flatbuffers::String *symbol = kernel->symbol();
    std::string ctx = "kernel " + std::to_string(i);
    if (!symbol || symbol->size() == 0)
      return Status::error(ctx + " has no symbol");
    if (std::memchr(symbol->data(), 0, symbol->size()))
      return Status::error(ctx + ": symbol contains a NUL byte");
    if (!symbols.insert(symbol->str()).second)
      return Status::error(ctx + ": symbol '" + printable(symbol->str()) +
                           "' names another kernel too");
  }
  const auto *libraries = file.kernel_libraries();
  size_t numLibraries = libraries ? libraries->size() : 0;
  if (impl.target == ExecutableTarget::Cuda)
    return verifyGpuKernels();
  // A CPU executable's kernels are one ELF shared object.
  for (size_t i = 0; i < numLibraries; ++i) {
    const fbs::KernelLibrary *library = libraries->Get(i);
    std::string ctx = "kernel library " + std::to_string(i);
    if (library->format() != fbs::KernelFormat::ELF)
      return Status::error(ctx + " is " +
                           fbs::EnumNameKernelFormat(library->format()) +
                           " code, which a CPU executable cannot hold");
  }
  if (numLibraries > 1)
    return Status::error("a CPU executable holds one kernel library, this "
                         "one " +
                         std::to_string(numLibraries));
  const fbs::KernelLibrary *library =
      numLibraries ? libraries->Get(0) : nullptr;
  if (count > 0 &&
      (!library || !library->data() || library->data()->size() == 0))
    return Status::error("executable has " + std::to_string(count) +
                         " kernels but no kernel library");
  return Status::ok();
}

/// Parses "sm_90" (also "sm_90a") into 90; 0 if it is not one.
static int parseSmArch(const std::string &arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return 0;
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end])))
    ++end;
  if (end == 3 || end - 3 > 4 || (end != arch.size() && arch.substr(end) != "a"))
    return 0;
  return std::stoi(arch.substr(3, end - 3));
}

Status Checker::verifyGpuKernels() {
  // Libraries: PTX or cubin for a named compute capability; PTX text ends
  // in a NUL (the driver reads it as a C string).
  const auto *libraries = file.kernel_libraries();
  size_t numLibraries = libraries ? libraries->size() : 0;
  for (size_t i = 0; i < numLibraries; ++i) {
    const fbs::KernelLibrary *library = libraries->Get(i);
    std::string ctx = "kernel library " + std::to_string(i);
    detail::GpuLibrary out;
    if (library->format() == fbs::KernelFormat::PTX)
      out.format = detail::GpuLibrary::Ptx;
    else if (library->format() == fbs::KernelFormat::CUBIN)
      out.format = detail::GpuLibrary::Cubin;
    else
      return Status::error(ctx + " is " +
                           fbs::EnumNameKernelFormat(library->format()) +
                           " code, which a CUDA executable cannot hold");
    out.arch = library->arch() ? printable(library->arch()->str()) : "";
    out.computeCapability = parseSmArch(out.arch);
    if (!out.computeCapability)
      return Status::error(ctx + " names no compute capability as sm_XY "
                                 "(its arch is '" +
                           out.arch + "')");
    if (!library->data() || library->data()->size() == 0)
      return Status::error(ctx + " is empty");
    out.data = library->data()->data();
    out.size = library->data()->size();
    if (out.format == detail::GpuLibrary::Ptx && out.data[out.size - 1] != 0)
      return Status::error(ctx + ": PTX text must end in a NUL byte");
    impl.gpuLibraries.push_back(std::move(out));
  }
  const auto *kernels = file.kernels();
  size_t count = kernels ? kernels->size() : 0;
  if (count > 0 && impl.gpuLibraries.empty())
    return Status::error("executable has " + std::to_string(count) +
                         " kernels but no kernel library");
  for (size_t i = 0; i < count; ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    std::string ctx = "kernel " + std::to_string(i) + " ('" +
                      printable(kernel->symbol()->str()) + "')";
    detail::GpuKernel out;
    out.scratchBytes = kernel->scratch_bytes();
    if (out.scratchBytes > (uint64_t(1) << 40))
      return Status::error(ctx + ": " + std::to_string(out.scratchBytes) +
                           " bytes of scratch memory is more than any GPU "
                           "has");
    if (const auto *offsets = kernel->scratch_offsets())
      for (uint64_t offset : *offsets) {
        // Each scratch buffer starts inside the scratch memory, aligned for
        // any element type the kernels use.
        if (offset >= std::max<uint64_t>(out.scratchBytes, 1) || offset % 16)
          return Status::error(ctx + ": scratch offset " +
                               std::to_string(offset) + " is outside its " +
                               std::to_string(out.scratchBytes) +
                               " scratch bytes or not 16-byte aligned");
        out.scratchOffsets.push_back(offset);
      }
    const auto *launches = kernel->launches();
    if (!launches || launches->size() == 0)
      return Status::error(ctx + " has no launches (a CUDA kernel says how "
                                 "it launches)");
    for (size_t l = 0; l < launches->size(); ++l) {
      const fbs::GpuLaunch *launch = launches->Get(l);
      std::string where = ctx + " launch " + std::to_string(l);
      if (!launch->symbol() || launch->symbol()->size() == 0 ||
          std::memchr(launch->symbol()->data(), 0, launch->symbol()->size()))
        return Status::error(where + " has no valid symbol");
      if (!launch->launch())
        return Status::error(where + " has no launch shape");
      const fbs::Launch &shape = *launch->launch();
      detail::GpuLaunch g;
      g.symbol = launch->symbol()->str();
      g.grid[0] = shape.grid_x();
      g.grid[1] = shape.grid_y();
      g.grid[2] = shape.grid_z();
      g.block[0] = shape.block_x();
      g.block[1] = shape.block_y();
      g.block[2] = shape.block_z();
      g.sharedBytes = shape.shared_bytes();
      // CUDA's limits (compute capability 7.0 and later).
      uint64_t threads = uint64_t(g.block[0]) * g.block[1] * g.block[2];
      if (!g.grid[0] || !g.grid[1] || !g.grid[2] || !threads)
        return Status::error(where + " has an empty grid or block");
      if (threads > 1024 || g.block[2] > 64)
        return Status::error(where + ": a block of " + std::to_string(g.block[0]) +
                             "x" + std::to_string(g.block[1]) + "x" +
                             std::to_string(g.block[2]) +
                             " threads is larger than CUDA allows (1024)");
      if (g.grid[1] > 65535 || g.grid[2] > 65535)
        return Status::error(where + ": grid y and z are at most 65535");
      if (g.sharedBytes > 48 * 1024)
        return Status::error(where + ": " + std::to_string(g.sharedBytes) +
                             " bytes of static shared memory is more than "
                             "a block may hold (49152)");
      out.launches.push_back(std::move(g));
    }
    impl.gpuKernels.push_back(std::move(out));
  }
  return Status::ok();
}

Status Checker::verifyConstants() {
  const auto *constants = file.constants();
  size_t count = constants ? constants->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    const fbs::Constant *entry = constants->Get(i);
    const auto *data = entry->data();
    detail::Constant constant;
    if (entry->device_offsets()) {
      if (Status st = loadDeviceOffsets(entry, i, constant); !st)
        return st;
    } else if (const flatbuffers::String *name = entry->parameter()) {
      std::string ctx = "constant " + std::to_string(i);
      if (name->size() == 0 || std::memchr(name->data(), 0, name->size()))
        return Status::error(ctx + ": invalid parameter name");
      if (data && data->size() > 0)
        return Status::error(ctx + ": a parameter cannot also hold data");
      if (!entry->type())
        return Status::error(ctx + ": parameter '" + printable(name->str()) +
                             "' has no type");
      uint64_t bytes = 0;
      if (Status s = verifyTensor(entry->type(),
                                  ctx + " (parameter '" +
                                      printable(name->str()) + "')",
                                  constant.spec, bytes);
          !s)
        return s;
      constant.parameter = name->str();
      constant.size = bytes;
      auto longs = [](const flatbuffers::Vector<int64_t> *v) {
        return v ? std::vector<int64_t>(v->begin(), v->end())
                 : std::vector<int64_t>();
      };
      if (!isAligned(entry->piece_offsets()) || !isAligned(entry->piece_of()) ||
          !isAligned(entry->ranks()) || !isAligned(entry->piece_sbp_of()))
        return misaligned(ctx + ": piece or ranks");
      constant.pieceOffsets = longs(entry->piece_offsets());
      constant.pieceOf = longs(entry->piece_of());
      constant.ranks = longs(entry->ranks());
      const std::vector<int64_t> &shape = constant.spec.shape;
      if (const auto *sbp = entry->piece_sbp()) {
        // The offsets are the binding device's (bindRank): its piece of
        // the archive's tensor, or of the block of it `piece_offsets`
        // starts (`piece_sbp_of` its shape).
        constant.sbpOf = entry->piece_sbp_of() ? longs(entry->piece_sbp_of())
                                               : constant.pieceOf;
        constant.blockOffsets = entry->piece_sbp_of()
                                    ? constant.pieceOffsets
                                    : std::vector<int64_t>(shape.size(), 0);
        constant.pieceOffsets.clear();
        bool ok = constant.pieceOf.size() == shape.size() &&
                  constant.sbpOf.size() == shape.size() &&
                  constant.blockOffsets.size() == shape.size() &&
                  sbp->size() == impl.mesh.size() &&
                  (entry->piece_sbp_of() || !entry->piece_offsets());
        for (size_t d = 0; ok && d < shape.size(); ++d)
          ok = shape[d] >= 0 && shape[d] <= constant.sbpOf[d] &&
               constant.blockOffsets[d] >= 0 &&
               constant.blockOffsets[d] <=
                   constant.pieceOf[d] - constant.sbpOf[d];
        for (size_t a = 0; ok && a < sbp->size(); ++a) {
          const fbs::SbpEntry *e = sbp->Get(a);
          ok = (e->kind() == fbs::SbpKind::Split &&
                e->dim() >= 0 && e->dim() < (int64_t)shape.size()) ||
               e->kind() == fbs::SbpKind::Broadcast;
          if (ok)
            constant.pieceSbp.push_back(
                {e->kind() == fbs::SbpKind::Split ? SbpEntry::Split
                                                  : SbpEntry::Broadcast,
                 e->dim()});
        }
        if (!ok)
          return Status::error(ctx + ": parameter '" +
                               printable(name->str()) +
                               "' has an invalid piece by SBP");
      } else if (!constant.pieceOffsets.empty() ||
                 !constant.pieceOf.empty()) {
        bool ok = constant.pieceOffsets.size() == shape.size() &&
                  constant.pieceOf.size() == shape.size();
        for (size_t d = 0; ok && d < shape.size(); ++d)
          ok = constant.pieceOffsets[d] >= 0 &&
               constant.pieceOffsets[d] <= constant.pieceOf[d] - shape[d];
        if (!ok)
          return Status::error(ctx + ": parameter '" +
                               printable(name->str()) +
                               "' has a piece outside its tensor");
      }
      for (int64_t r : constant.ranks)
        if (r < 0)
          return Status::error(ctx + ": invalid rank " + std::to_string(r));
    } else if (data && data->size() > 0) {
      constant.data = data->data();
      constant.size = data->size();
    }
    impl.constants.push_back(constant);
  }
  return Status::ok();
}

/// A constant the binding device fills with its piece's offsets
/// (flow.piece_offsets): i64[rank], splits within the tensor's rank, no
/// data, read only by some devices' programs.
Status Checker::loadDeviceOffsets(const fbs::Constant *entry, size_t index,
                                  detail::Constant &constant) {
  std::string ctx = "constant " + std::to_string(index) + " (device offsets)";
  if ((entry->data() && entry->data()->size() > 0) || entry->parameter() ||
      entry->piece_offsets())
    return Status::error(ctx + ": holds data, a parameter or offsets of its "
                               "own");
  uint64_t bytes = 0;
  if (Status st = verifyTensor(entry->type(), ctx, constant.spec, bytes); !st)
    return st;
  if (!isAligned(entry->piece_of()) || !isAligned(entry->ranks()))
    return misaligned(ctx + ": shape or ranks");
  const auto *of = entry->piece_of();
  size_t rank = of ? of->size() : 0;
  if (constant.spec.dtype != DType::I64 ||
      constant.spec.shape != std::vector<int64_t>{(int64_t)rank})
    return Status::error(ctx + ": is " + constant.spec.str() +
                         ", not i64[" + std::to_string(rank) + "]");
  if (of)
    constant.pieceOf.assign(of->begin(), of->end());
  for (int64_t n : constant.pieceOf)
    if (n < 0)
      return Status::error(ctx + ": negative dimension");
  auto sbpOf = [&](const flatbuffers::Vector<const fbs::SbpEntry *> *v,
                   std::vector<SbpEntry> &out) {
    if (!v || v->size() != impl.mesh.size())
      return false;
    for (const fbs::SbpEntry *e : *v) {
      bool split = e->kind() == fbs::SbpKind::Split;
      if (split && (e->dim() < 0 || e->dim() >= (int64_t)rank))
        return false;
      if (!split && e->kind() != fbs::SbpKind::Broadcast &&
          e->kind() != fbs::SbpKind::PartialSum &&
          e->kind() != fbs::SbpKind::PartialMax)
        return false;
      // Partial entries hold the whole tensor, as broadcast ones.
      out.push_back({split ? SbpEntry::Split : SbpEntry::Broadcast,
                     split ? e->dim() : 0});
    }
    return true;
  };
  if (!sbpOf(entry->piece_sbp(), constant.pieceSbp) ||
      (entry->piece_within() &&
       !sbpOf(entry->piece_within(), constant.pieceWithin)))
    return Status::error(ctx + ": an SBP that is not one entry per mesh axis "
                               "splitting the tensor's dimensions");
  if (const auto *ranks = entry->ranks())
    constant.ranks.assign(ranks->begin(), ranks->end());
  int64_t devices = 1;
  for (int64_t n : impl.mesh)
    devices *= n;
  if (constant.ranks.empty())
    return Status::error(ctx + ": names no device reading it");
  for (int64_t r : constant.ranks)
    if (r < 0 || r >= devices)
      return Status::error(ctx + ": invalid rank " + std::to_string(r));
  constant.deviceOffsets = true;
  constant.size = bytes;
  return Status::ok();
}

Status Checker::verifyTensor(const fbs::TensorType *type,
                             const std::string &what, TensorSpec &spec,
                             uint64_t &bytes) {
  // Every table field is optional to the FlatBuffers verifier.
  if (!type)
    return Status::error(what + ": has no type");
  auto dtype = static_cast<uint8_t>(type->dtype());
  if (dtype > static_cast<uint8_t>(fbs::DType::MAX))
    return Status::error(what + ": invalid dtype " + std::to_string(dtype));
  spec.dtype = static_cast<DType>(dtype);
  uint64_t elements = 1;
  bool overflow = false;
  if (!isAligned(type->shape()))
    return misaligned(what + ": shape");
  if (const auto *shape = type->shape()) {
    for (int64_t dim : *shape) {
      if (dim < 0)
        return Status::error(what + ": negative dimension " +
                             std::to_string(dim) + " in shape");
      spec.shape.push_back(dim);
      overflow |= !mulOk(elements, static_cast<uint64_t>(dim), elements);
    }
  }
  overflow |= !mulOk(elements, dtypeSize(spec.dtype), bytes);
  if (overflow || bytes > kMaxBufferBytes)
    return Status::error(what + ": " + spec.str() +
                         " is too large (the limit is 64 GiB)");
  return Status::ok();
}

Status Checker::verifyFunction(size_t index) {
  const fbs::Function *function = file.functions()->Get(index);
  const flatbuffers::String *name = function->name();
  if (!name || name->size() == 0)
    return Status::error("function " + std::to_string(index) + " has no name");
  FunctionSignature sig;
  sig.name = name->str();
  std::string ctx = "function '" + printable(sig.name) + "'";
  if (sig.name.find('\0') != std::string::npos)
    return Status::error("function " + std::to_string(index) +
                         ": name contains a NUL byte");

  sizes = BufferSizes();
  sizes.constants = &impl.constants;
  auto verifyTensors = [&](const auto *types, const char *kind,
                           std::vector<TensorSpec> &specs,
                           std::vector<uint64_t> &bytes) {
    size_t count = types ? types->size() : 0;
    for (size_t i = 0; i < count; ++i) {
      specs.emplace_back();
      bytes.emplace_back();
      if (Status s = verifyTensor(types->Get(i),
                                  ctx + " " + kind + " " + std::to_string(i),
                                  specs.back(), bytes.back());
          !s)
        return s;
    }
    return Status::ok();
  };
  if (Status s =
          verifyTensors(function->inputs(), "input", sig.inputs, sizes.inputs);
      !s)
    return s;
  if (Status s = verifyTensors(function->outputs(), "output", sig.outputs,
                               sizes.outputs);
      !s)
    return s;

  if (Status s = verifyState(ctx, function->state(), sig); !s)
    return s;
  if (Status s = verifyIndexChecks(ctx, function->index_checks(), sig); !s)
    return s;

  sig.arenaSize = sizes.arena = function->arena_size();
  if (sizes.arena > kMaxBufferBytes)
    return Status::error(ctx + ": arena size " + std::to_string(sizes.arena) +
                         " bytes is too large (the limit is 64 GiB)");

  detail::Function decoded;
  const auto *types = function->commands_type();
  const auto *values = function->commands();
  size_t count = values ? values->size() : 0;
  if ((types ? types->size() : 0) != count)
    return Status::error(ctx + ": command types and commands differ in count");
  for (size_t i = 0; i < count; ++i) {
    decoded.commands.emplace_back();
    std::string cmdCtx = ctx + " command " + std::to_string(i);
    if (Status s = verifyCommand(cmdCtx, types->GetEnum<fbs::Command>(i),
                                 values->Get(i), decoded.commands.back());
        !s)
      return s;
    const auto *d =
        std::get_if<detail::DispatchCommand>(&decoded.commands.back());
    if (d && d->gemmEpilogue &&
        (i == 0 || !std::holds_alternative<detail::GemmCommand>(
                       decoded.commands[i - 1])))
      return Status::error(cmdCtx + " is marked a GEMM epilogue but does "
                                    "not follow a gemm command");
  }
  if (Status s = verifyWaits(ctx, decoded.commands); !s)
    return s;
  if (!isAligned(function->ranks()))
    return misaligned(ctx + ": ranks");
  if (const auto *ranks = function->ranks()) {
    if (impl.mesh.empty())
      return Status::error(ctx + " is a device program but the executable "
                                 "has no mesh");
    int64_t devices = 1;
    for (int64_t d : impl.mesh)
      devices *= d;
    for (int64_t r : *ranks) {
      if (r < 0 || r >= devices)
        return Status::error(ctx + ": rank " + std::to_string(r) +
                             " is outside the mesh of " +
                             std::to_string(devices) + " devices");
      sig.ranks.push_back(r);
    }
    if (sig.ranks.empty())
      return Status::error(ctx + " is run by no device");
    sig.globalName = function->global_name() ? function->global_name()->str()
                                             : sig.name;
    if (Status s = verifyPlacements(ctx + " global input",
                                    function->global_inputs(),
                                    sig.globalInputs);
        !s)
      return s;
    if (Status s = verifyPlacements(ctx + " global output",
                                    function->global_outputs(),
                                    sig.globalOutputs);
        !s)
      return s;
    if (sig.globalInputs.size() != sig.inputs.size() ||
        sig.globalOutputs.size() != sig.outputs.size())
      return Status::error(ctx + ": global signature has " +
                           std::to_string(sig.globalInputs.size()) +
                           " inputs and " +
                           std::to_string(sig.globalOutputs.size()) +
                           " outputs, the device program " +
                           std::to_string(sig.inputs.size()) + " and " +
                           std::to_string(sig.outputs.size()));
    // Each device's piece of every global input and output is what the
    // device program takes and makes (the runtime copies pieces in and out
    // by these shapes).
    for (int64_t rank : sig.ranks) {
      std::vector<int64_t> coords = meshCoordinates(impl.mesh, rank);
      auto check = [&](const char *kind, const std::vector<Placement> &global,
                       const std::vector<TensorSpec> &local) -> Status {
        for (size_t i = 0; i < global.size(); ++i) {
          std::vector<int64_t> shape, offset;
          localPiece(global[i].spec.shape, global[i].sbp, impl.mesh, coords,
                     shape, offset);
          TensorSpec piece{global[i].spec.dtype, shape};
          if (piece.dtype != local[i].dtype || piece.shape != local[i].shape)
            return Status::error(
                ctx + ": device " + std::to_string(rank) + "'s piece of " +
                kind + " " + std::to_string(i) + " is " + piece.str() +
                " but the device program's is " + local[i].str());
        }
        return Status::ok();
      };
      if (Status s = check("global input", sig.globalInputs, sig.inputs); !s)
        return s;
      if (Status s = check("global output", sig.globalOutputs, sig.outputs);
          !s)
        return s;
    }
  }
  impl.signatures.push_back(std::move(sig));
  impl.functions.push_back(std::move(decoded));
  return Status::ok();
}

Status Checker::verifyState(
    const std::string &ctx,
    const flatbuffers::Vector<flatbuffers::Offset<fbs::State>> *list,
    FunctionSignature &sig) {
  sizes.writableInputs.assign(sig.inputs.size(), false);
  sizes.tiedOutputs.assign(sig.outputs.size(), false);
  std::vector<bool> stateInputs(sig.inputs.size(), false);
  size_t count = list ? list->size() : 0;
  for (size_t k = 0; k < count; ++k) {
    const fbs::State *entry = list->Get(k);
    std::string where = ctx + " state " + std::to_string(k);
    StateSpec spec;
    if (!entry->name() || entry->name()->size() == 0)
      return Status::error(where + " has no name");
    spec.name = entry->name()->str();
    where += " ('" + printable(spec.name) + "')";
    for (const StateSpec &other : sig.state)
      if (other.name == spec.name)
        return Status::error(where + ": the name is given twice");
    spec.input = entry->input();
    spec.output = entry->output();
    spec.zeros = entry->zeros();
    if (spec.input >= sig.inputs.size())
      return Status::error(where + ": input " + std::to_string(spec.input) +
                           " does not exist (the function takes " +
                           std::to_string(sig.inputs.size()) + ")");
    if (stateInputs[spec.input])
      return Status::error(where + ": input " + std::to_string(spec.input) +
                           " is another state's");
    stateInputs[spec.input] = true;
    if (spec.output != -1) {
      if (spec.output < 0 ||
          static_cast<uint64_t>(spec.output) >= sig.outputs.size())
        return Status::error(where + ": output " +
                             std::to_string(spec.output) +
                             " does not exist (the function has " +
                             std::to_string(sig.outputs.size()) + ")");
      if (sizes.tiedOutputs[spec.output])
        return Status::error(where + ": output " +
                             std::to_string(spec.output) +
                             " is another state's");
      const TensorSpec &in = sig.inputs[spec.input];
      const TensorSpec &out = sig.outputs[spec.output];
      if (in.dtype != out.dtype || in.shape != out.shape)
        return Status::error(where + ": input " + std::to_string(spec.input) +
                             " is " + in.str() + " but output " +
                             std::to_string(spec.output) + " is " + out.str());
      sizes.writableInputs[spec.input] = true;
      sizes.tiedOutputs[spec.output] = true;
    }
    sig.state.push_back(std::move(spec));
  }
  return Status::ok();
}

Status Checker::verifyIndexChecks(
    const std::string &ctx,
    const flatbuffers::Vector<flatbuffers::Offset<fbs::IndexCheck>> *list,
    FunctionSignature &sig) {
  size_t count = list ? list->size() : 0;
  for (size_t k = 0; k < count; ++k) {
    const fbs::IndexCheck *entry = list->Get(k);
    std::string where = ctx + " index check " + std::to_string(k);
    IndexCheck check;
    check.input = entry->input();
    check.bound = entry->bound();
    check.lower = entry->lower();
    if (entry->has_ignore())
      check.ignore = entry->ignore();
    if (entry->what())
      check.what = printable(entry->what()->str());
    if (check.input >= sig.inputs.size())
      return Status::error(where + ": input " + std::to_string(check.input) +
                           " does not exist (the function takes " +
                           std::to_string(sig.inputs.size()) + ")");
    DType dtype = sig.inputs[check.input].dtype;
    if (dtype != DType::I64 && dtype != DType::I32)
      return Status::error(where + ": input " + std::to_string(check.input) +
                           " is " + sig.inputs[check.input].str() +
                           ", not indices (i32 or i64)");
    if (check.bound < 0 || check.lower > 0 || check.lower < -check.bound)
      return Status::error(where + ": range [" + std::to_string(check.lower) +
                           ", " + std::to_string(check.bound) +
                           ") is not [0, n) or [-n, n)");
    sig.indexChecks.push_back(std::move(check));
  }
  return Status::ok();
}

Status Checker::verifyPlacements(
    const std::string &ctx,
    const flatbuffers::Vector<flatbuffers::Offset<fbs::Placement>> *list,
    std::vector<Placement> &out) {
  size_t count = list ? list->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    const fbs::Placement *p = list->Get(i);
    std::string where = ctx + " " + std::to_string(i);
    Placement placement;
    uint64_t bytes = 0;
    if (!p->type())
      return Status::error(where + " has no type");
    if (Status s = verifyTensor(p->type(), where, placement.spec, bytes); !s)
      return s;
    if (!isAligned(p->sbp()))
      return misaligned(where + ": SBP");
    size_t entries = p->sbp() ? p->sbp()->size() : 0;
    if (entries != impl.mesh.size())
      return Status::error(where + ": SBP has " + std::to_string(entries) +
                           " entries for a mesh of rank " +
                           std::to_string(impl.mesh.size()));
    for (size_t a = 0; a < entries; ++a) {
      const fbs::SbpEntry *e = p->sbp()->Get(a);
      auto kind = static_cast<uint8_t>(e->kind());
      if (kind > static_cast<uint8_t>(fbs::SbpKind::MAX))
        return Status::error(where + ": invalid SBP kind");
      SbpEntry entry;
      entry.kind = static_cast<SbpEntry::Kind>(kind);
      entry.dim = e->dim();
      if (entry.kind == SbpEntry::Split &&
          (entry.dim < 0 ||
           entry.dim >= static_cast<int64_t>(placement.spec.shape.size())))
        return Status::error(where + ": split dimension " +
                             std::to_string(entry.dim) + " is out of range");
      placement.sbp.push_back(entry);
    }
    out.push_back(std::move(placement));
  }
  return Status::ok();
}

Status Checker::verifyCollective(const std::string &ctx,
                                 const fbs::Collective &cmd,
                                 detail::CollectiveCommand &out) {
  auto kind = static_cast<uint8_t>(cmd.kind());
  if (kind > static_cast<uint8_t>(fbs::CollectiveKind::MAX))
    return Status::error(ctx + ": invalid kind " + std::to_string(kind));
  out.kind = static_cast<detail::CollectiveCommand::Kind>(kind);
  out.async = cmd.async();
  auto reduction = static_cast<uint8_t>(cmd.reduction());
  if (reduction > static_cast<uint8_t>(fbs::Reduction::MAX))
    return Status::error(ctx + ": invalid reduction");
  out.reduction = reduction == 1 ? Reduction::Max : Reduction::Sum;
  auto dtype = static_cast<uint8_t>(cmd.dtype());
  if (dtype > static_cast<uint8_t>(fbs::DType::MAX))
    return Status::error(ctx + ": invalid dtype");
  out.dtype = static_cast<DType>(dtype);
  if (impl.mesh.empty())
    return Status::error(ctx + " needs a mesh but the executable has none");
  int64_t group = 1;
  std::vector<bool> seen(impl.mesh.size(), false);
  if (!cmd.mesh_axes() || cmd.mesh_axes()->size() == 0)
    return Status::error(ctx + " has no mesh axes");
  if (!isAligned(cmd.mesh_axes()) || !isAligned(cmd.input_shape()) ||
      !isAligned(cmd.output_shape()))
    return misaligned(ctx + ": mesh axes or shapes");
  for (int64_t a : *cmd.mesh_axes()) {
    if (a < 0 || a >= static_cast<int64_t>(impl.mesh.size()) || seen[a])
      return Status::error(ctx + ": invalid mesh axis " + std::to_string(a));
    seen[a] = true;
    group *= impl.mesh[a];
    out.meshAxes.push_back(a);
  }
  auto shape = [&](const flatbuffers::Vector<int64_t> *v,
                   std::vector<int64_t> &dims) {
    if (!v)
      return false;
    for (int64_t d : *v) {
      if (d < 0)
        return false;
      dims.push_back(d);
    }
    return true;
  };
  if (!shape(cmd.input_shape(), out.inputShape) ||
      !shape(cmd.output_shape(), out.outputShape) ||
      out.inputShape.size() != out.outputShape.size())
    return Status::error(ctx + ": invalid shapes");
  int64_t rank = static_cast<int64_t>(out.inputShape.size());
  out.dim = cmd.dim();
  out.splitDim = cmd.split_dim();
  out.concatDim = cmd.concat_dim();
  for (int64_t d : {out.dim, out.splitDim, out.concatDim})
    if (d < 0 || (rank > 0 && d >= rank) || (rank == 0 && d != 0))
      return Status::error(ctx + ": dimension " + std::to_string(d) +
                           " is out of range");
  if (out.kind == detail::CollectiveCommand::AllToAll &&
      out.splitDim == out.concatDim)
    return Status::error(ctx + ": an all-to-all must cut and join different "
                               "dimensions");
  auto isPiece = [&](int64_t piece, int64_t whole) {
    return piece == whole / group || piece == (whole + group - 1) / group;
  };
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = out.inputShape[d], o = out.outputShape[d];
    bool ok = in == o;
    if (out.kind == detail::CollectiveCommand::AllGather && d == out.dim)
      ok = isPiece(in, o);
    if (out.kind == detail::CollectiveCommand::ReduceScatter && d == out.dim)
      ok = in >= group && isPiece(o, in);
    if (out.kind == detail::CollectiveCommand::AllToAll &&
        out.splitDim != out.concatDim) {
      if (d == out.splitDim)
        ok = in >= group && isPiece(o, in);
      if (d == out.concatDim)
        ok = isPiece(in, o);
    }
    if (!ok)
      return Status::error(ctx + ": shapes do not fit the collective over " +
                           std::to_string(group) + " devices");
  }
  if ((out.kind == detail::CollectiveCommand::AllReduce ||
       out.kind == detail::CollectiveCommand::ReduceScatter) &&
      out.dtype == DType::I1)
    return Status::error(ctx + ": reductions over " +
                         std::string(dtypeName(out.dtype)) +
                         " tensors are not supported (numbers are; booleans "
                         "are not)");
  TensorSpec in{out.dtype, out.inputShape}, o{out.dtype, out.outputShape};
  uint64_t inBytes = 0, outBytes = 0;
  if (!mulOk(static_cast<uint64_t>(in.numElements()), dtypeSize(out.dtype),
             inBytes) ||
      !mulOk(static_cast<uint64_t>(o.numElements()), dtypeSize(out.dtype),
             outBytes))
    return Status::error(ctx + ": tensors are too large");
  if (Status s = verifyInOut(ctx, cmd.input(), cmd.output(), inBytes,
                             outBytes, out.input, out.output);
      !s)
    return s;
  return Status::ok();
}

void Checker::commandBuffers(const detail::Command &command,
                             std::vector<detail::BufferRef> &reads,
                             std::vector<detail::BufferRef> &writes) {
  reads.clear();
  writes.clear();
  if (const auto *d = std::get_if<detail::DispatchCommand>(&command)) {
    // The kernel's last bindings are its outputs (kernel indices were
    // checked with the command).
    size_t outputs = d->bindings.size();
    if (const auto *kernels = file.kernels();
        kernels && d->kernel < kernels->size())
      outputs = std::min<size_t>(outputs,
                                 kernels->Get(d->kernel)->num_outputs());
    size_t inputs = d->bindings.size() - outputs;
    reads.assign(d->bindings.begin(), d->bindings.begin() + inputs);
    writes.assign(d->bindings.begin() + inputs, d->bindings.end());
  } else if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
    reads = {g->a, g->b};
    if (g->hasBias)
      reads.push_back(g->bias);
    writes = {g->c};
  } else if (const auto *c = std::get_if<detail::ConvCommand>(&command)) {
    reads = {c->input, c->filter};
    if (c->hasBias)
      reads.push_back(c->bias);
    if (c->hasResidual)
      reads.push_back(c->residual);
    writes = {c->output};
  } else if (const auto *p = std::get_if<detail::PoolCommand>(&command)) {
    reads = {p->input};
    writes = {p->output};
  } else if (const auto *c = std::get_if<detail::CopyCommand>(&command)) {
    reads = {c->src};
    writes = {c->dst};
  } else if (const auto *c =
                 std::get_if<detail::CollectiveCommand>(&command)) {
    reads = {c->input};
    writes = {c->output};
  }
}

Status Checker::verifyWaits(const std::string &ctx,
                            const std::vector<detail::Command> &commands) {
  auto overlap = [](const detail::BufferRef &a, const detail::BufferRef &b) {
    return a.space == b.space && a.index == b.index && a.size > 0 &&
           b.size > 0 && a.offset < b.offset + b.size &&
           b.offset < a.offset + a.size;
  };
  std::vector<bool> waited(commands.size(), false);
  std::vector<detail::BufferRef> reads, writes;
  for (size_t i = 0; i < commands.size(); ++i) {
    const auto *wait = std::get_if<detail::WaitCommand>(&commands[i]);
    if (!wait)
      continue;
    std::string where = ctx + " command " + std::to_string(i) + " (wait)";
    size_t c = wait->collective;
    const auto *col =
        c < i ? std::get_if<detail::CollectiveCommand>(&commands[c]) : nullptr;
    if (!col || !col->async)
      return Status::error(where + " waits for command " + std::to_string(c) +
                           ", which is not an earlier asynchronous "
                           "collective");
    if (waited[c])
      return Status::error(where + " waits for command " + std::to_string(c) +
                           " a second time");
    waited[c] = true;
    for (size_t j = c + 1; j < i; ++j) {
      commandBuffers(commands[j], reads, writes);
      bool clash = false;
      for (const detail::BufferRef &w : writes)
        clash |= overlap(w, col->input) || overlap(w, col->output);
      for (const detail::BufferRef &r : reads)
        clash |= overlap(r, col->output);
      if (clash)
        return Status::error(
            ctx + " command " + std::to_string(j) + " uses the buffers of "
            "collective " + std::to_string(c) + " while it is in flight "
            "(before its wait, command " + std::to_string(i) + ")");
    }
  }
  for (size_t c = 0; c < commands.size(); ++c) {
    const auto *col = std::get_if<detail::CollectiveCommand>(&commands[c]);
    if (col && col->async && !waited[c])
      return Status::error(ctx + " command " + std::to_string(c) +
                           " is an asynchronous collective that no command "
                           "waits for");
  }
  return Status::ok();
}

Status Checker::verifyCommand(const std::string &ctx, fbs::Command type,
                              const void *value, detail::Command &out) {
  if (type == fbs::Command::NONE || !value)
    return Status::error(ctx + " is empty (no command)");
  switch (type) {
  case fbs::Command::Dispatch:
    out = detail::DispatchCommand();
    return verifyDispatch(ctx + " (dispatch)",
                          *static_cast<const fbs::Dispatch *>(value),
                          std::get<detail::DispatchCommand>(out));
  case fbs::Command::Gemm:
    out = detail::GemmCommand();
    return verifyGemm(ctx + " (gemm)", *static_cast<const fbs::Gemm *>(value),
                      std::get<detail::GemmCommand>(out));
  case fbs::Command::Copy:
    out = detail::CopyCommand();
    return verifyCopy(ctx + " (copy)", *static_cast<const fbs::Copy *>(value),
                      std::get<detail::CopyCommand>(out));
  case fbs::Command::Collective:
    out = detail::CollectiveCommand();
    return verifyCollective(ctx + " (collective)",
                            *static_cast<const fbs::Collective *>(value),
                            std::get<detail::CollectiveCommand>(out));
  case fbs::Command::Conv:
    out = detail::ConvCommand();
    return verifyConv(ctx + " (conv)", *static_cast<const fbs::Conv *>(value),
                      std::get<detail::ConvCommand>(out));
  case fbs::Command::MaxPool:
    out = detail::PoolCommand();
    return verifyPool(ctx + " (max_pool)",
                      *static_cast<const fbs::MaxPool *>(value),
                      std::get<detail::PoolCommand>(out));
  case fbs::Command::AvgPool:
    out = detail::PoolCommand();
    return verifyPool(ctx + " (avg_pool)",
                      *static_cast<const fbs::AvgPool *>(value),
                      std::get<detail::PoolCommand>(out));
  case fbs::Command::Wait:
    // Which collective it waits for is checked with the function's other
    // commands (verifyWaits).
    out = detail::WaitCommand{
        static_cast<const fbs::Wait *>(value)->collective()};
    return Status::ok();
  default:
    return Status::error(ctx + " has unknown command type " +
                         std::to_string(static_cast<int>(type)));
  }
}

Status Checker::verifyInOut(const std::string &ctx,
                            const fbs::BufferRef *input,
                            const fbs::BufferRef *output, uint64_t inBytes,
                            uint64_t outBytes, detail::BufferRef &in,
                            detail::BufferRef &out) {
  if (Status s = verifyRef(ctx, "input", input, false, in); !s)
    return s;
  if (Status s = verifyRef(ctx, "output", output, true, out); !s)
    return s;
  if (in.size != inBytes || out.size != outBytes)
    return Status::error(ctx + ": buffers hold " + std::to_string(in.size) +
                         " and " + std::to_string(out.size) +
                         " bytes but the shapes need " +
                         std::to_string(inBytes) + " and " +
                         std::to_string(outBytes));
  return Status::ok();
}

Status Checker::verifyRef(const std::string &ctx, const std::string &what,
                          const fbs::BufferRef *ref, bool writable,
                          detail::BufferRef &out) {
  if (!ref)
    return Status::error(ctx + ": " + what + " is missing");
  auto space = static_cast<uint8_t>(ref->space());
  if (space > static_cast<uint8_t>(fbs::Space::MAX))
    return Status::error(ctx + ": " + what + " has invalid space " +
                         std::to_string(space));
  out.space = static_cast<detail::Space>(space);
  out.index = ref->index();
  out.offset = ref->offset();
  out.size = ref->size();
  std::string index = std::to_string(out.index);

  auto indexed = [&](const char *kind, size_t count) -> Status {
    if (out.index < count)
      return Status::ok();
    return Status::error(ctx + ": " + what + " refers to " + kind + " " +
                         index + ", but there are " + std::to_string(count));
  };
  uint64_t limit = 0;
  std::string buffer;
  switch (out.space) {
  case detail::Space::Input:
    if (Status s = indexed("input", sizes.inputs.size()); !s)
      return s;
    limit = sizes.inputs[out.index];
    buffer = "input " + index;
    break;
  case detail::Space::Output:
    if (Status s = indexed("output", sizes.outputs.size()); !s)
      return s;
    limit = sizes.outputs[out.index];
    buffer = "output " + index;
    break;
  case detail::Space::Arena:
    if (out.index != 0)
      return Status::error(ctx + ": " + what + " refers to arena " + index +
                           "; the arena index must be 0");
    limit = sizes.arena;
    buffer = "the arena";
    break;
  case detail::Space::Constant:
    if (Status s = indexed("constant", sizes.constants->size()); !s)
      return s;
    limit = (*sizes.constants)[out.index].size;
    buffer = "constant " + index;
    break;
  }
  uint64_t end;
  if (!addOk(out.offset, out.size, end) || end > limit)
    return Status::error(ctx + ": " + what + " (" + std::to_string(out.size) +
                         " bytes at offset " + std::to_string(out.offset) +
                         ") does not fit in " + buffer + " (" +
                         std::to_string(limit) + " bytes)");
  if (out.space == detail::Space::Output && sizes.tiedOutputs[out.index])
    return Status::error(ctx + ": " + what + " uses " + buffer +
                         ", whose value is written into its state's input "
                         "in place: no command may use it");
  if (writable && out.space == detail::Space::Input &&
      sizes.writableInputs[out.index])
    return Status::ok();
  if (writable && (out.space == detail::Space::Input ||
                   out.space == detail::Space::Constant))
    return Status::error(ctx + ": " + what + " writes to " + buffer +
                         ", which is read-only");
  return Status::ok();
}

Status Checker::verifyDispatch(const std::string &ctx, const fbs::Dispatch &cmd,
                               detail::DispatchCommand &out) {
  out.kernel = cmd.kernel();
  out.maxWorkgroups = cmd.max_workgroups();
  out.work = cmd.work();
  out.gemmEpilogue = cmd.gemm_epilogue();
  size_t numKernels = file.kernels() ? file.kernels()->size() : 0;
  if (out.kernel >= numKernels)
    return Status::error(ctx + ": kernel " + std::to_string(out.kernel) +
                         " does not exist (the executable has " +
                         std::to_string(numKernels) + " kernels)");
  if (out.maxWorkgroups == 0)
    return Status::error(ctx + ": max_workgroups must be at least 1");
  const auto *bindings = cmd.bindings();
  if (!isAligned(bindings))
    return misaligned(ctx + ": bindings");
  size_t count = bindings ? bindings->size() : 0;
  uint32_t expected = file.kernels()->Get(out.kernel)->num_bindings();
  if (count != expected)
    return Status::error(ctx + ": kernel " + std::to_string(out.kernel) +
                         " takes " + std::to_string(expected) +
                         " bindings but the dispatch has " +
                         std::to_string(count));
  const fbs::Kernel *kernel = file.kernels()->Get(out.kernel);
  const auto *sizes = kernel->binding_sizes();
  if (!isAligned(sizes))
    return misaligned(ctx + ": binding sizes");
  if (!sizes || sizes->size() != count)
    return Status::error(ctx + ": kernel " + std::to_string(out.kernel) +
                         " does not give the size of each of its " +
                         std::to_string(count) + " bindings");
  if (kernel->num_outputs() > count)
    return Status::error(ctx + ": kernel " + std::to_string(out.kernel) +
                         " writes " + std::to_string(kernel->num_outputs()) +
                         " bindings but has " + std::to_string(count));
  size_t firstOutput = count - kernel->num_outputs();
  out.bindings.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (Status s =
            verifyRef(ctx, "binding " + std::to_string(i), bindings->Get(i),
                      /*writable=*/i >= firstOutput, out.bindings[i]);
        !s)
      return s;
    if (out.bindings[i].size != sizes->Get(i))
      return Status::error(ctx + ": binding " + std::to_string(i) + " has " +
                           std::to_string(out.bindings[i].size) +
                           " bytes but kernel " + std::to_string(out.kernel) +
                           " uses " + std::to_string(sizes->Get(i)));
  }
  return Status::ok();
}

Status Checker::verifyGemm(const std::string &ctx, const fbs::Gemm &cmd,
                           detail::GemmCommand &out) {
  for (auto [name, value] :
       {std::pair{"m", cmd.m()}, {"n", cmd.n()}, {"k", cmd.k()}}) {
    if (value < 0 || value > INT_MAX)
      return Status::error(ctx + ": " + name + " = " + std::to_string(value) +
                           " is out of range [0, " + std::to_string(INT_MAX) +
                           "]");
  }
  out.m = static_cast<int>(cmd.m());
  out.n = static_cast<int>(cmd.n());
  out.k = static_cast<int>(cmd.k());
  out.transposeA = cmd.transpose_a();
  out.transposeB = cmd.transpose_b();

  if (!isAligned(cmd.batch_shape()) || !isAligned(cmd.a_batch_strides()) ||
      !isAligned(cmd.b_batch_strides()))
    return misaligned(ctx + ": a batch vector");
  auto toVector = [](const flatbuffers::Vector<int64_t> *v) {
    return v ? std::vector<int64_t>(v->begin(), v->end())
             : std::vector<int64_t>();
  };
  out.batchShape = toVector(cmd.batch_shape());
  out.aBatchStrides = toVector(cmd.a_batch_strides());
  out.bBatchStrides = toVector(cmd.b_batch_strides());
  size_t rank = out.batchShape.size();
  if (out.aBatchStrides.size() != rank || out.bBatchStrides.size() != rank)
    return Status::error(ctx + ": batch_shape has " + std::to_string(rank) +
                         " dimensions but a_batch_strides has " +
                         std::to_string(out.aBatchStrides.size()) +
                         " and b_batch_strides has " +
                         std::to_string(out.bBatchStrides.size()));
  uint64_t batchCount = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (out.batchShape[d] < 0)
      return Status::error(ctx + ": negative batch dimension " +
                           std::to_string(out.batchShape[d]));
    if (out.aBatchStrides[d] < 0 || out.bBatchStrides[d] < 0)
      return Status::error(ctx + ": negative batch stride in dimension " +
                           std::to_string(d));
    if (!mulOk(batchCount, out.batchShape[d], batchCount) ||
        batchCount > static_cast<uint64_t>(INT64_MAX))
      return Status::error(ctx + ": batch size overflows");
  }
  out.batchCount = static_cast<int64_t>(batchCount);
  out.abDtype = static_cast<DType>(cmd.ab_dtype());
  if (out.abDtype != DType::F32 && out.abDtype != DType::BF16 &&
      out.abDtype != DType::F16)
    return Status::error(ctx + ": operands of type " +
                         std::to_string(static_cast<int>(cmd.ab_dtype())) +
                         " are not supported (f32, bf16, f16)");
  out.cDtype = static_cast<DType>(cmd.c_dtype());
  if (out.cDtype != DType::F32 && out.cDtype != out.abDtype)
    return Status::error(ctx + ": result type " +
                         std::to_string(static_cast<int>(cmd.c_dtype())) +
                         " is neither f32 nor the operands' type");
  out.allowTf32 = cmd.allow_tf32();
  if (out.allowTf32 && out.abDtype != DType::F32)
    return Status::error(ctx + ": allow_tf32 needs f32 operands");
  const uint64_t abSize = dtypeSize(out.abDtype);
  const uint64_t cSize = dtypeSize(out.cDtype);

  if (Status s = verifyRef(ctx, "operand A", cmd.a(), false, out.a); !s)
    return s;
  if (Status s = verifyRef(ctx, "operand B", cmd.b(), false, out.b); !s)
    return s;
  if (Status s = verifyRef(ctx, "result C", cmd.c(), true, out.c); !s)
    return s;

  // Bytes an operand touches: the last matrix starts at the largest batch
  // offset (strides are >= 0), and each matrix is rows x cols elements.
  auto needed = [&](const std::vector<int64_t> &strides, uint64_t rows,
                    uint64_t cols, uint64_t &bytes) {
    uint64_t matrix;
    if (!mulOk(rows, cols, matrix))
      return false;
    bytes = 0;
    if (batchCount == 0 || matrix == 0)
      return true;
    uint64_t last = 0;
    for (size_t d = 0; d < rank; ++d) {
      uint64_t step;
      if (!mulOk(out.batchShape[d] - 1, strides[d], step) ||
          !addOk(last, step, last))
        return false;
    }
    return addOk(last, matrix, last) && mulOk(last, abSize, bytes);
  };
  struct Operand {
    const char *name;
    const detail::BufferRef &ref;
    const std::vector<int64_t> &strides;
    uint64_t rows, cols;
  };
  for (const Operand &op : {Operand{"A", out.a, out.aBatchStrides,
                                    uint64_t(out.m), uint64_t(out.k)},
                            Operand{"B", out.b, out.bBatchStrides,
                                    uint64_t(out.k), uint64_t(out.n)}}) {
    uint64_t bytes;
    if (!needed(op.strides, op.rows, op.cols, bytes))
      return Status::error(ctx + ": operand " + op.name + " extent overflows");
    if (bytes > op.ref.size)
      return Status::error(
          ctx + ": operand " + op.name + " needs " + std::to_string(bytes) +
          " bytes but its buffer ref has " + std::to_string(op.ref.size));
  }
  uint64_t cBytes;
  if (!mulOk(batchCount, uint64_t(out.m) * uint64_t(out.n), cBytes) ||
      !mulOk(cBytes, cSize, cBytes))
    return Status::error(ctx + ": result C size overflows");
  if (cBytes != out.c.size)
    return Status::error(ctx + ": result C needs " + std::to_string(cBytes) +
                         " bytes but its buffer ref has " +
                         std::to_string(out.c.size));
  for (auto [name, ref, size] :
       {std::tuple{"A", &out.a, abSize}, {"B", &out.b, abSize},
        {"C", &out.c, cSize}}) {
    if (ref->offset % size != 0)
      return Status::error(ctx + ": operand " + name + " offset " +
                           std::to_string(ref->offset) +
                           " is not a multiple of " + std::to_string(size));
  }
  // The epilogue: n biases of C's type, and an activation the runtime
  // knows.
  if (cmd.bias()) {
    if (Status s = verifyRef(ctx, "bias", cmd.bias(), false, out.bias); !s)
      return s;
    if (out.bias.size != uint64_t(out.n) * cSize ||
        out.bias.offset % cSize != 0)
      return Status::error(ctx + ": the bias needs " +
                           std::to_string(uint64_t(out.n) * cSize) +
                           " bytes (n values of C's type) at an offset that "
                           "is a multiple of " +
                           std::to_string(cSize) + ", its buffer ref has " +
                           std::to_string(out.bias.size) + " at " +
                           std::to_string(out.bias.offset));
    out.hasBias = true;
  }
  switch (cmd.activation()) {
  case fbs::GemmActivation::None:
    out.activation = detail::GemmCommand::None;
    break;
  case fbs::GemmActivation::Relu:
    out.activation = detail::GemmCommand::Relu;
    break;
  case fbs::GemmActivation::GeluTanh:
    out.activation = detail::GemmCommand::GeluTanh;
    break;
  default:
    return Status::error(ctx + ": invalid activation " +
                         std::to_string(static_cast<int>(cmd.activation())));
  }
  return Status::ok();
}

/// Reads the vector \p name of a command into \p values: \p length
/// entries, each within [\p low, 2^31).
static Status readSizes(const std::string &ctx,
                        const flatbuffers::Vector<int64_t> *v,
                        const char *name, size_t length, int64_t low,
                        std::vector<int64_t> &values) {
  if (!isAligned(v))
    return misaligned(ctx + ": " + name);
  if (!v || v->size() != length)
    return Status::error(ctx + ": " + name + " needs " +
                         std::to_string(length) + " entries, has " +
                         std::to_string(v ? v->size() : 0));
  values.assign(v->begin(), v->end());
  for (int64_t x : values)
    if (x < low || x > INT_MAX)
      return Status::error(ctx + ": " + name + " entry " + std::to_string(x) +
                           " is out of range [" + std::to_string(low) + ", " +
                           std::to_string(INT_MAX) + "]");
  return Status::ok();
}

/// The extent of a window's output along one axis: \p size with padding
/// \p before and \p after, rounded down (or up with \p ceil, dropping a
/// window that would start in the end padding).
static int64_t windowExtent(int64_t size, int64_t before, int64_t after,
                            int64_t dilation, int64_t kernel, int64_t stride,
                            bool ceil = false) {
  int64_t span = size + before + after - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = span / stride + 1;
  if (ceil) {
    out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= size + before)
      --out;
  }
  return out;
}

Status Checker::verifyConv(const std::string &ctx, const fbs::Conv &cmd,
                           detail::ConvCommand &out) {
  auto read = [&](const flatbuffers::Vector<int64_t> *v, const char *name,
                  size_t length, int64_t low, std::vector<int64_t> &values) {
    return readSizes(ctx, v, name, length, low, values);
  };
  std::vector<int64_t> in, filter, outShape, strides, padding, dilations;
  for (Status s :
       {read(cmd.input_shape(), "input_shape", 4, 1, in),
        read(cmd.filter_shape(), "filter_shape", 4, 1, filter),
        read(cmd.output_shape(), "output_shape", 4, 1, outShape),
        read(cmd.strides(), "strides", 2, 1, strides),
        read(cmd.padding(), "padding", 4, 0, padding),
        read(cmd.dilations(), "dilations", 2, 1, dilations)})
    if (!s)
      return s;
  out.n = in[0], out.c = in[1], out.h = in[2], out.w = in[3];
  out.o = filter[0], out.kh = filter[2], out.kw = filter[3];
  out.oh = outShape[2], out.ow = outShape[3];
  out.strideH = strides[0], out.strideW = strides[1];
  out.padTop = padding[0], out.padLeft = padding[1];
  out.padBottom = padding[2], out.padRight = padding[3];
  out.dilationH = dilations[0], out.dilationW = dilations[1];
  out.groups = cmd.groups();
  if (out.groups < 1 || out.c % out.groups || out.o % out.groups ||
      filter[1] != out.c / out.groups)
    return Status::error(ctx + ": " + std::to_string(out.groups) +
                         " groups do not divide " + std::to_string(out.c) +
                         " input and " + std::to_string(out.o) +
                         " output channels with " +
                         std::to_string(filter[1]) +
                         " input channels per filter");
  if (outShape[0] != out.n || outShape[1] != out.o ||
      out.oh != windowExtent(out.h, out.padTop, out.padBottom, out.dilationH,
                             out.kh, out.strideH) ||
      out.ow != windowExtent(out.w, out.padLeft, out.padRight, out.dilationW,
                             out.kw, out.strideW))
    return Status::error(ctx + ": output_shape does not follow from the "
                               "input, filter, strides, padding and "
                               "dilations");
  out.relu = cmd.relu();
  out.blockedInput = cmd.blocked_input();
  out.blockedOutput = cmd.blocked_output();
  out.blockedResidual = cmd.blocked_residual();
  out.bf16 = cmd.bf16();
  if ((out.blockedInput && out.c % 16) ||
      ((out.blockedOutput || out.blockedResidual) && out.o % 16))
    return Status::error(ctx + ": a blocked tensor needs a multiple of 16 "
                               "channels");
  // Element types: f32, or bf16 for a blocked tensor of a bf16 command.
  for (auto [dtype, blocked, name, isBf16] :
       {std::tuple{cmd.input_dtype(), out.blockedInput, "input",
                   &out.inputBf16},
        {cmd.residual_dtype(), out.blockedResidual, "residual",
         &out.residualBf16},
        {cmd.output_dtype(), out.blockedOutput, "output", &out.outputBf16}}) {
    *isBf16 = dtype == fbs::DType::BF16;
    if (dtype != fbs::DType::F32 && !(*isBf16 && blocked && out.bf16))
      return Status::error(
          ctx + ": the " + name + " holds " +
          fbs::EnumNameDType(dtype) +
          " elements; a convolution's tensors are F32, or BF16 when blocked "
          "in a bf16 convolution");
  }
  // Bytes of each tensor (all fit: every factor is below 2^31 and the
  // products are checked).
  auto bytes = [&](std::initializer_list<int64_t> dims, uint64_t &b,
                   bool half = false) {
    b = half ? 2 : sizeof(float);
    for (int64_t d : dims)
      if (!mulOk(b, static_cast<uint64_t>(d), b))
        return false;
    return b <= kMaxBufferBytes;
  };
  uint64_t inBytes, filterBytes, outBytes, residualBytes;
  if (!bytes({out.n, out.c, out.h, out.w}, inBytes, out.inputBf16) ||
      !bytes({out.o, filter[1], out.kh, out.kw}, filterBytes) ||
      !bytes({out.n, out.o, out.oh, out.ow}, outBytes, out.outputBf16) ||
      !bytes({out.n, out.o, out.oh, out.ow}, residualBytes,
             out.residualBf16) ||
      filter[1] * out.kh * out.kw > INT_MAX || out.oh * out.ow > INT_MAX)
    return Status::error(ctx + ": tensor sizes overflow");
  struct Operand {
    const char *name;
    const fbs::BufferRef *ref;
    bool writable, optional;
    uint64_t bytes;
    detail::BufferRef &out;
    bool *present;
  };
  for (const Operand &op :
       {Operand{"input", cmd.input(), false, false, inBytes, out.input,
                nullptr},
        Operand{"filter", cmd.filter(), false, false, filterBytes, out.filter,
                nullptr},
        Operand{"bias", cmd.bias(), false, true,
                uint64_t(out.o) * sizeof(float), out.bias, &out.hasBias},
        Operand{"residual", cmd.residual(), false, true, residualBytes,
                out.residual, &out.hasResidual},
        Operand{"output", cmd.output(), true, false, outBytes, out.output,
                nullptr}}) {
    if (op.optional && !op.ref)
      continue;
    if (op.present)
      *op.present = true;
    if (Status s = verifyRef(ctx, op.name, op.ref, op.writable, op.out); !s)
      return s;
    if (op.out.size != op.bytes)
      return Status::error(ctx + ": " + op.name + " has " +
                           std::to_string(op.out.size) +
                           " bytes but its shape needs " +
                           std::to_string(op.bytes));
    if (op.out.offset % sizeof(float))
      return Status::error(ctx + ": " + op.name + " offset " +
                           std::to_string(op.out.offset) +
                           " is not a multiple of 4");
  }
  if (out.blockedResidual && !out.hasResidual)
    return Status::error(ctx + ": blocked_residual without a residual");
  out.residualInPlace =
      out.hasResidual && out.residual.space == out.output.space &&
      out.residual.index == out.output.index &&
      out.residual.offset == out.output.offset &&
      out.residual.size == out.output.size &&
      out.blockedResidual == out.blockedOutput &&
      out.residualBf16 == out.outputBf16;
  // The caller's tensors and constants are always plain.
  for (auto [blocked, ref, name] :
       {std::tuple{out.blockedInput, &out.input, "input"},
        {out.blockedResidual, &out.residual, "residual"},
        {out.blockedOutput, &out.output, "output"}})
    if (blocked && ref->space != detail::Space::Arena)
      return Status::error(ctx + ": the blocked " + std::string(name) +
                           " is not a transient (arena) buffer");
  return Status::ok();
}

template <typename Table>
Status Checker::verifyPool(const std::string &ctx, const Table &cmd,
                           detail::PoolCommand &out) {
  std::vector<int64_t> in, outShape, kernel, strides, padding,
      dilations = {1, 1};
  for (Status s : {readSizes(ctx, cmd.input_shape(), "input_shape", 4, 1, in),
                   readSizes(ctx, cmd.output_shape(), "output_shape", 4, 1,
                             outShape),
                   readSizes(ctx, cmd.kernel(), "kernel", 2, 1, kernel),
                   readSizes(ctx, cmd.strides(), "strides", 2, 1, strides),
                   readSizes(ctx, cmd.padding(), "padding", 4, 0, padding)})
    if (!s)
      return s;
  // An average pool has no dilations.
  if constexpr (std::is_same_v<Table, fbs::AvgPool>) {
    out.average = true;
    out.includePad = cmd.count_include_pad();
  } else if (Status s = readSizes(ctx, cmd.dilations(), "dilations", 2, 1,
                                  dilations);
             !s) {
    return s;
  }
  out.n = in[0], out.c = in[1], out.h = in[2], out.w = in[3];
  out.oh = outShape[2], out.ow = outShape[3];
  out.kh = kernel[0], out.kw = kernel[1];
  out.strideH = strides[0], out.strideW = strides[1];
  out.dilationH = dilations[0], out.dilationW = dilations[1];
  out.padTop = padding[0], out.padLeft = padding[1];
  out.padBottom = padding[2], out.padRight = padding[3];
  // Every window holds a real element: padding is smaller than the window
  // (whose span fits in 2^31 with both factors below it), and the output
  // is the floor or ceil count.
  for (int i = 0; i < 4; ++i)
    if (padding[i] >= dilations[i % 2] * (kernel[i % 2] - 1) + 1)
      return Status::error(ctx + ": padding " + std::to_string(padding[i]) +
                           " is not smaller than the window");
  // Both axes rounded down, or both up (ceil mode).
  auto fitsWith = [&](bool ceil) {
    for (int axis = 0; axis < 2; ++axis)
      if (outShape[2 + axis] !=
          windowExtent(in[2 + axis], padding[axis], padding[axis + 2],
                       dilations[axis], kernel[axis], strides[axis], ceil))
        return false;
    return outShape[0] == out.n && outShape[1] == out.c;
  };
  if (!fitsWith(false) && !fitsWith(true))
    return Status::error(ctx + ": output_shape does not follow from the "
                               "input, kernel, strides, padding and "
                               "dilations");
  out.blockedInput = cmd.blocked_input();
  out.blockedOutput = cmd.blocked_output();
  if ((out.blockedInput || out.blockedOutput) && out.c % 16)
    return Status::error(ctx + ": a blocked tensor needs a multiple of 16 "
                               "channels");
  for (auto [dtype, blocked, name, isBf16] :
       {std::tuple{cmd.input_dtype(), out.blockedInput, "input",
                   &out.inputBf16},
        {cmd.output_dtype(), out.blockedOutput, "output", &out.outputBf16}}) {
    *isBf16 = dtype == fbs::DType::BF16;
    if (dtype != fbs::DType::F32 && !(*isBf16 && blocked))
      return Status::error(ctx + ": the " + name + " holds " +
                           fbs::EnumNameDType(dtype) +
                           " elements; a pool's tensors are F32, or BF16 "
                           "when blocked");
  }
  uint64_t inBytes = out.inputBf16 ? 2 : 4, outBytes = out.outputBf16 ? 2 : 4;
  for (int64_t d : in)
    if (!mulOk(inBytes, static_cast<uint64_t>(d), inBytes))
      return Status::error(ctx + ": tensor sizes overflow");
  for (int64_t d : outShape)
    if (!mulOk(outBytes, static_cast<uint64_t>(d), outBytes))
      return Status::error(ctx + ": tensor sizes overflow");
  if (inBytes > kMaxBufferBytes || outBytes > kMaxBufferBytes)
    return Status::error(ctx + ": tensor sizes overflow");
  if (Status s = verifyInOut(ctx, cmd.input(), cmd.output(), inBytes,
                             outBytes, out.input, out.output);
      !s)
    return s;
  for (auto [ref, name] : {std::pair{&out.input, "input"},
                           std::pair{&out.output, "output"}})
    if (ref->offset % 4)
      return Status::error(ctx + ": " + std::string(name) + " offset " +
                           std::to_string(ref->offset) +
                           " is not a multiple of 4");
  for (auto [blocked, ref, name] :
       {std::tuple{out.blockedInput, &out.input, "input"},
        {out.blockedOutput, &out.output, "output"}})
    if (blocked && ref->space != detail::Space::Arena)
      return Status::error(ctx + ": the blocked " + std::string(name) +
                           " is not a transient (arena) buffer");
  return Status::ok();
}

Status Checker::verifyCopy(const std::string &ctx, const fbs::Copy &cmd,
                           detail::CopyCommand &out) {
  if (Status s = verifyRef(ctx, "source", cmd.src(), false, out.src); !s)
    return s;
  if (Status s = verifyRef(ctx, "destination", cmd.dst(), true, out.dst); !s)
    return s;
  if (out.src.size != out.dst.size)
    return Status::error(ctx + ": source has " + std::to_string(out.src.size) +
                         " bytes but destination has " +
                         std::to_string(out.dst.size));
  return Status::ok();
}

} // namespace

Status detail::bindParameter(Executable::Impl &impl, Constant &constant) {
  const SafeTensor &tensor = *constant.source;
  const std::vector<int64_t> &shape = constant.spec.shape;
  bool narrow = tensor.dtype == DType::F32 && constant.spec.dtype == DType::BF16;
  bool whole = constant.pieceOf.empty();
  if (whole && !narrow &&
      reinterpret_cast<uintptr_t>(tensor.data) % AlignedBuffer::kAlignment ==
          0) {
    constant.data = tensor.data; // read in place
    constant.source = nullptr;
    return Status::ok();
  }
  // A piece, a conversion or a misaligned tensor: copied once, here.
  AlignedBuffer copy;
  if (!copy.allocate(constant.size))
    return Status::error("out of memory reading parameter '" +
                         printable(constant.parameter) + "' (" +
                         std::to_string(constant.size) + " bytes)");
  size_t from = narrow ? sizeof(float) : dtypeSize(constant.spec.dtype);
  size_t to = dtypeSize(constant.spec.dtype);
  std::vector<int64_t> offsets = constant.pieceOffsets, of = constant.pieceOf;
  if (whole) {
    offsets.assign(shape.size(), 0);
    of = shape;
  }
  // Row by row of the last dimension: the odometer runs over the others.
  size_t rank = shape.size();
  int64_t rowLength = rank ? shape[rank - 1] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  std::vector<int64_t> index(rank, 0);
  uint8_t *out = copy.data();
  for (int64_t row = 0; row < rows && rowLength > 0; ++row) {
    int64_t start = 0;
    for (size_t d = 0; d < rank; ++d)
      start = start * of[d] + offsets[d] + index[d];
    const uint8_t *in = tensor.data + static_cast<size_t>(start) * from;
    if (!narrow) {
      std::memcpy(out, in, static_cast<size_t>(rowLength) * to);
    } else {
      for (int64_t i = 0; i < rowLength; ++i) {
        float value;
        std::memcpy(&value, in + i * sizeof(float), sizeof value);
        uint16_t half = roundToBf16(value);
        std::memcpy(out + i * 2, &half, sizeof half);
      }
    }
    out += static_cast<size_t>(rowLength) * to;
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  constant.data = copy.data();
  constant.source = nullptr;
  impl.constantCopies.push_back(std::move(copy));
  return Status::ok();
}

/// Writes the offsets of device `rank`'s piece into a device-offsets
/// constant (once: an executable binds one device).
static Status bindDeviceOffsets(Executable::Impl &impl,
                                detail::Constant &constant, int64_t rank) {
  if (constant.boundRank >= 0)
    return constant.boundRank == rank
               ? Status::ok()
               : Status::error("the executable is bound for device " +
                               std::to_string(constant.boundRank) +
                               ", not " + std::to_string(rank));
  std::vector<int64_t> coords = meshCoordinates(impl.mesh, rank);
  std::vector<int64_t> shape, offset, withinShape, within;
  localPiece(constant.pieceOf, constant.pieceSbp, impl.mesh, coords, shape,
             offset);
  if (!constant.pieceWithin.empty()) {
    localPiece(constant.pieceOf, constant.pieceWithin, impl.mesh, coords,
               withinShape, within);
    for (size_t d = 0; d < offset.size(); ++d) {
      offset[d] -= within[d];
      if (offset[d] < 0 || offset[d] + shape[d] > withinShape[d])
        return Status::error("device " + std::to_string(rank) +
                             "'s piece of a tensor lies outside the piece it "
                             "is taken from");
    }
  }
  AlignedBuffer copy;
  if (!copy.allocate(constant.size))
    return Status::error("out of memory binding a device's offsets");
  if (!offset.empty())
    std::memcpy(copy.data(), offset.data(), offset.size() * sizeof(int64_t));
  constant.data = copy.data();
  constant.boundRank = rank;
  impl.constantCopies.push_back(std::move(copy));
  return Status::ok();
}

Status Executable::bindRank(int64_t rank) const {
  std::lock_guard<std::mutex> lock(impl->bindMutex);
  for (detail::Constant &constant : impl->constants) {
    bool mine = constant.ranks.empty() ||
                std::find(constant.ranks.begin(), constant.ranks.end(),
                          rank) != constant.ranks.end();
    if (mine && constant.deviceOffsets) {
      if (Status st = bindDeviceOffsets(*impl, constant, rank); !st)
        return st;
      continue;
    }
    if (!mine || constant.parameter.empty())
      continue;
    if (!constant.pieceSbp.empty()) {
      // This device's piece: its offsets from its coordinates.
      if (constant.boundRank >= 0 && constant.boundRank != rank)
        return Status::error("parameter '" + printable(constant.parameter) +
                             "' is bound for device " +
                             std::to_string(constant.boundRank) +
                             ", not " + std::to_string(rank));
      if (constant.boundRank == rank)
        continue;
      std::vector<int64_t> coords = meshCoordinates(impl->mesh, rank);
      std::vector<int64_t> shape, offset;
      localPiece(constant.sbpOf, constant.pieceSbp, impl->mesh, coords, shape,
                 offset);
      for (size_t d = 0; d < offset.size(); ++d)
        offset[d] += constant.blockOffsets[d];
      if (shape != constant.spec.shape)
        return Status::error(
            "parameter '" + printable(constant.parameter) + "': device " +
            std::to_string(rank) + "'s piece is " +
            TensorSpec{constant.spec.dtype, shape}.str() +
            " but its program reads " + constant.spec.str());
      constant.pieceOffsets = offset;
      constant.boundRank = rank;
    } else if (constant.ranks.empty()) {
      continue; // bound at load
    }
    if (constant.source)
      if (Status s = detail::bindParameter(*impl, constant); !s)
        return s;
  }
  return Status::ok();
}

size_t Executable::boundParameterBytes() const {
  std::lock_guard<std::mutex> lock(impl->bindMutex);
  size_t bytes = 0;
  for (const detail::Constant &constant : impl->constants)
    if (!constant.parameter.empty() && constant.data)
      bytes += constant.size;
  return bytes;
}

namespace {

Status Checker::bindParameters() {
  std::vector<detail::Constant *> wanted;
  for (detail::Constant &constant : impl.constants)
    if (!constant.parameter.empty())
      wanted.push_back(&constant);
  if (wanted.empty())
    return Status::ok();
  std::string path = options.parameterArchive;
  if (path.empty()) {
    const flatbuffers::String *named = file.parameter_archive();
    if (!named || named->size() == 0)
      return Status::error("the executable has " +
                           std::to_string(wanted.size()) +
                           " parameters but names no parameter archive");
    path = named->str();
    if (path.find('\0') != std::string::npos)
      return Status::error("invalid parameter archive path");
    if (path[0] != '/' && !options.baseDirectory.empty())
      path = options.baseDirectory + "/" + path;
  }
  StatusOr<std::unique_ptr<SafeTensorsFile>> archive =
      SafeTensorsFile::open(path);
  if (!archive)
    return archive.status();
  std::string missing;
  size_t numMissing = 0;
  for (detail::Constant *constant : wanted) {
    const SafeTensor *tensor = (*archive)->find(constant->parameter);
    if (!tensor) {
      if (numMissing++ < 8)
        missing += (missing.empty() ? "'" : ", '") +
                   printable(constant->parameter) + "'";
      continue;
    }
    // The archive holds the whole tensor a piece is cut from. An f32
    // weight the executable reads as bf16 (mixed precision) is converted
    // when bound, rounding to nearest even.
    const std::vector<int64_t> &whole = constant->pieceOf.empty()
                                            ? constant->spec.shape
                                            : constant->pieceOf;
    bool narrow = tensor->dtype == DType::F32 &&
                  constant->spec.dtype == DType::BF16;
    if (!tensor->supported ||
        (!narrow && tensor->dtype != constant->spec.dtype) ||
        tensor->shape != whole)
      return Status::error(
          path + ": parameter '" + printable(constant->parameter) + "' is " +
          tensor->str() + " but the executable needs " +
          TensorSpec{narrow ? DType::F32 : constant->spec.dtype, whole}.str());
    constant->source = tensor;
    // Parameters of some devices only are bound by the Session of one of
    // them (bindRank): a process holds its own pieces, not every device's.
    if (constant->ranks.empty() && constant->pieceSbp.empty())
      if (Status s = detail::bindParameter(impl, *constant); !s)
        return s;
  }
  if (numMissing)
    return Status::error(path + ": " + std::to_string(numMissing) +
                         " parameters the executable needs are missing: " +
                         missing + (numMissing > 8 ? ", ..." : ""));
  impl.parameters = std::move(*archive);
  return Status::ok();
}

Status Checker::loadKernels() {
  // Constants the file did not align get an aligned copy.
  for (detail::Constant &constant : impl.constants) {
    if (reinterpret_cast<uintptr_t>(constant.data) %
            AlignedBuffer::kAlignment ==
        0)
      continue;
    AlignedBuffer copy;
    if (!copy.allocate(constant.size))
      return Status::error("out of memory copying a constant of " +
                           std::to_string(constant.size) + " bytes");
    std::memcpy(copy.data(), constant.data, constant.size);
    constant.data = copy.data();
    impl.constantCopies.push_back(std::move(copy));
  }

  const auto *kernels = file.kernels();
  if (!kernels || kernels->size() == 0)
    return Status::ok();
  if (impl.target == ExecutableTarget::Cuda)
    return loadKernelMeta();
  // Before any of the library's code can run: a CPU without the
  // instructions it was compiled for would die of an illegal instruction.
  const fbs::KernelLibrary *elf = file.kernel_libraries()->Get(0);
  std::vector<std::string> wanted;
  if (const auto *features = elf->features())
    for (const auto *name : *features)
      wanted.push_back(name ? name->str() : "");
  if (std::vector<std::string> missing = missingCpuFeatures(wanted);
      !missing.empty()) {
    std::string names;
    for (const std::string &name : missing)
      names += (names.empty() ? "" : ", ") + name;
    std::string cpu = elf->arch() ? elf->arch()->str() : "an unnamed CPU";
    return Status::error(
        "the kernels were compiled for CPU '" + cpu + "' and may use " +
        names + ", which this CPU lacks; recompile on this machine, or for "
        "a CPU both have (flow-compile --cpu=NAME, e.g. x86-64-v3)");
  }
  impl.cpuArch = elf->arch() ? printable(elf->arch()->str()) : "";
  const auto *library = elf->data();
  StatusOr<KernelLibrary> loaded =
      KernelLibrary::load(library->data(), library->size());
  if (!loaded)
    return loaded.status();
  impl.library = std::move(*loaded);
  void *tableAddress = impl.library.symbol(FLOW_KERNEL_ABI_SYMBOL);
  if (!tableAddress)
    return Status::error("the kernel library exports no '" FLOW_KERNEL_ABI_SYMBOL
                         "' table (it was not built by this Flow)");
  const auto *table = static_cast<const FlowKernelAbiTable *>(tableAddress);
  if (table->magic != FLOW_KERNEL_ABI_MAGIC)
    return Status::error("the kernel library's ABI table has a wrong magic "
                         "number (it was not built by this Flow)");
  std::set<void *> entries;
  for (size_t i = 0; i < kernels->size(); ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    std::string symbol = kernel->symbol()->str();
    std::string ctx = "kernel " + std::to_string(i) + " ('" +
                      printable(symbol) + "')";
    void *address = impl.library.symbol(symbol);
    if (!address)
      return Status::error("kernel " + std::to_string(i) + ": symbol '" +
                           printable(symbol) +
                           "' is not defined by the kernel library");
    if (!entries.insert(address).second)
      return Status::error(ctx + " resolves to the same code as another "
                                 "kernel");
    const FlowKernelAbiEntry *abi = nullptr;
    for (uint64_t e = 0; e < table->count && !abi; ++e)
      if (table->entries[e].symbol &&
          std::strcmp(table->entries[e].symbol, symbol.c_str()) == 0)
        abi = &table->entries[e];
    if (!abi)
      return Status::error(ctx + " is not in the kernel library's ABI table");
    if (abi->entry != address)
      return Status::error(ctx + ": the ABI table's entry point is not the "
                                 "symbol's address");
    // The loader has held every dispatch to the metadata's sizes; the
    // metadata must now be what the code itself was compiled for.
    const auto *sizes = kernel->binding_sizes();
    bool same = abi->num_bindings == kernel->num_bindings() &&
                abi->num_outputs == kernel->num_outputs() && sizes &&
                sizes->size() == abi->num_bindings;
    for (uint64_t b = 0; same && b < abi->num_bindings; ++b)
      same = abi->binding_sizes[b] == sizes->Get(b);
    if (!same) {
      std::string want;
      for (uint64_t b = 0; b < abi->num_bindings; ++b)
        want += (b ? "," : "") + std::to_string(abi->binding_sizes[b]);
      return Status::error(
          ctx + ": the executable says it takes " +
          std::to_string(kernel->num_bindings()) + " buffers (" +
          std::to_string(kernel->num_outputs()) +
          " written) but its code was compiled for " +
          std::to_string(abi->num_bindings) + " buffers of [" + want +
          "] bytes (" + std::to_string(abi->num_outputs) + " written)");
    }
    if (Status s = readKernelMeta(*kernel, ctx); !s)
      return s;
    impl.kernels.push_back(reinterpret_cast<detail::KernelFn>(address));
  }
  return Status::ok();
}

Status Checker::readKernelMeta(const fbs::Kernel &kernel,
                               const std::string &ctx) {
  Executable::Impl::KernelMeta meta;
  meta.numOutputs = kernel.num_outputs();
  if (const auto *dtypes = kernel.binding_dtypes()) {
    if (dtypes->size() != kernel.num_bindings())
      return Status::error(ctx + ": " + std::to_string(dtypes->size()) +
                           " binding dtypes for " +
                           std::to_string(kernel.num_bindings()) +
                           " bindings");
    for (auto dtype : *dtypes) {
      if (static_cast<uint8_t>(dtype) >
          static_cast<uint8_t>(fbs::DType::MAX))
        return Status::error(ctx + ": invalid binding dtype " +
                             std::to_string(static_cast<int>(dtype)));
      meta.bindingDtypes.push_back(static_cast<DType>(dtype));
    }
  }
  if (const auto *description = kernel.description())
    meta.description = printable(description->str());
  impl.kernelNames.push_back(kernel.symbol()->str());
  impl.kernelMeta.push_back(std::move(meta));
  return Status::ok();
}

Status Checker::loadKernelMeta() {
  // The device checks each kernel's code when it loads the libraries.
  const auto *kernels = file.kernels();
  for (size_t i = 0; i < kernels->size(); ++i) {
    const fbs::Kernel *kernel = kernels->Get(i);
    if (Status s = readKernelMeta(
            *kernel, "kernel " + std::to_string(i) + " ('" +
                         printable(kernel->symbol()->str()) + "')");
        !s)
      return s;
  }
  return Status::ok();
}

/// Checks the whole-file checksum (see flow/runtime/Checksum.h) of a file the
/// FlatBuffers verifier accepted.
Status verifyChecksum(const uint8_t *data, size_t size) {
  std::optional<size_t> offset = checksumFieldOffset(data);
  if (!offset || *offset + 8 > size)
    return Status::error("executable has no checksum (the file is corrupt)");
  // A damaged vtable can place the checksum field inside a kernel
  // library: the library's bytes would then be the stored hash, and a
  // file restamped that way would pass the check with a broken library.
  if (const auto *libraries = fbs::GetExecutable(data)->kernel_libraries())
    for (const fbs::KernelLibrary *entry : *libraries) {
      const auto *library = entry->data();
      if (!library)
        continue;
      size_t begin = static_cast<size_t>(library->data() - data);
      size_t end = begin + library->size();
      if (*offset < end && *offset + 8 > begin)
        return Status::error("the checksum field overlaps a kernel library "
                             "(the file is corrupt)");
    }
  uint64_t stored;
  std::memcpy(&stored, data + *offset, sizeof(stored));
  uint64_t hash = fileChecksum(data, size, *offset);
  if (hash != stored)
    return Status::error("checksum mismatch (file says " + hex(stored) +
                         ", its bytes hash to " + hex(hash) +
                         "): the file is corrupt");
  return Status::ok();
}

/// Reads the file at \p path into aligned memory.
Status readFile(const std::string &path, AlignedBuffer &out) {
  auto fail = [&](const char *verb) {
    return Status::error(std::string("cannot ") + verb + " '" + path +
                         "': " + strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("open");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return fail("stat");
  if (S_ISDIR(st.st_mode))
    return Status::error("cannot read '" + path + "': it is a directory");
  // Regular files are read into a buffer of their size; anything else (a
  // pipe) grows it as needed.
  size_t capacity = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  AlignedBuffer buffer;
  if (!buffer.allocate(capacity > 0 ? capacity : 4096))
    return Status::error("cannot read '" + path + "': out of memory");
  size_t size = 0;
  while (true) {
    if (size == buffer.size()) {
      // Full: check for more before growing, so a regular file is read with
      // no copy.
      uint8_t probe;
      ssize_t n = ::read(fd, &probe, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return fail("read");
      if (n == 0)
        break;
      AlignedBuffer bigger;
      if (!bigger.allocate(buffer.size() * 2))
        return Status::error("cannot read '" + path + "': out of memory");
      std::memcpy(bigger.data(), buffer.data(), size);
      bigger.data()[size++] = probe;
      buffer = std::move(bigger);
      continue;
    }
    ssize_t n = ::read(fd, buffer.data() + size, buffer.size() - size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail("read");
    if (n == 0)
      break;
    size += static_cast<size_t>(n);
  }
  // The verifier must see the real length.
  buffer.truncate(size);
  out = std::move(buffer);
  return Status::ok();
}

/// Refuses \p size bytes at \p data unless their SHA-256 is in the
/// allow-list the options or the environment name (if any).
Status checkTrusted(const uint8_t *data, size_t size,
                    const LoadOptions &options) {
  std::string path = options.trustedList;
  const char *variable = std::getenv(kTrustedListVariable);
  bool fromEnvironment = path.empty() && variable && *variable;
  if (fromEnvironment)
    path = variable;
  if (path.empty())
    return Status::ok();
  std::string where =
      "the allow-list '" + path + "'" +
      (fromEnvironment ? std::string(" (") + kTrustedListVariable + ")" : "");
  FILE *list = std::fopen(path.c_str(), "r");
  if (!list)
    return Status::error("cannot read " + where + ": " + strerror(errno));
  std::set<std::string> digests;
  char line[4096];
  int number = 0;
  Status status = Status::ok();
  while (status && std::fgets(line, sizeof(line), list)) {
    ++number;
    std::string text(line);
    size_t begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos || text[begin] == '#')
      continue;
    size_t end = text.find_first_of(" \t\r\n", begin);
    std::string digest = text.substr(begin, end - begin);
    std::transform(digest.begin(), digest.end(), digest.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    bool hex = digest.size() == 64 &&
               digest.find_first_not_of("0123456789abcdef") ==
                   std::string::npos;
    if (!hex)
      status = Status::error(where + " line " + std::to_string(number) +
                             " is not a SHA-256 digest (64 hex digits, as "
                             "sha256sum prints them)");
    digests.insert(digest);
  }
  std::fclose(list);
  if (!status)
    return status;
  std::string digest = sha256Hex(data, size);
  if (!digests.count(digest))
    return Status::error("the executable is not trusted: its SHA-256 " +
                         digest + " is not in " + where);
  return Status::ok();
}

/// Verifies the file held in \p file and builds the executable.
StatusOr<std::unique_ptr<Executable::Impl>> load(AlignedBuffer file,
                                                 const LoadOptions &options) {
  auto impl = std::make_unique<Executable::Impl>();
  impl->file = std::move(file);
  const uint8_t *data = impl->file.data();
  size_t size = impl->file.size();
  if (Status s = checkTrusted(data, size, options); !s)
    return s;
  if (size < 8)
    return Status::error("not a Flow executable: " + std::to_string(size) +
                         " bytes is too short");
  if (!flatbuffers::BufferHasIdentifier(data, fbs::ExecutableIdentifier()))
    return Status::error("not a Flow executable (no 'FLOW' file identifier)");
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::error("executable of " + std::to_string(size) +
                         " bytes is larger than FlatBuffers allows");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/10000000);
  if (!fbs::VerifyExecutableBuffer(verifier))
    return Status::error("malformed executable: FlatBuffers verification "
                         "failed (the file is corrupt or truncated)");
  // The version first: an older file is refused by name, not by checksum.
  uint32_t version = fbs::GetExecutable(data)->version();
  if (version != kExecutableVersion)
    return Status::error("unsupported format version " +
                         std::to_string(version) +
                         " (this runtime reads version " +
                         std::to_string(kExecutableVersion) +
                         "; recompile the model with this Flow)");
  if (Status s = verifyChecksum(data, size); !s)
    return s;
  Checker checker(*fbs::GetExecutable(data), *impl, options);
  if (Status s = checker.verify(); !s)
    return s;
  return impl;
}

} // namespace

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

Executable::Executable(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

Executable::~Executable() = default;

StatusOr<std::unique_ptr<Executable>>
Executable::loadFile(const std::string &path, const LoadOptions &options) {
  AlignedBuffer file;
  if (Status s = readFile(path, file); !s)
    return s;
  LoadOptions resolved = options;
  if (resolved.baseDirectory.empty()) {
    size_t slash = path.rfind('/');
    resolved.baseDirectory =
        slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  }
  StatusOr<std::unique_ptr<Impl>> impl = load(std::move(file), resolved);
  if (!impl)
    return Status::error(path + ": " + impl.status().message());
  return std::unique_ptr<Executable>(new Executable(std::move(*impl)));
}

StatusOr<std::unique_ptr<Executable>>
Executable::loadBytes(const void *data, size_t size,
                      const LoadOptions &options) {
  AlignedBuffer file;
  if (!file.allocate(size))
    return Status::error("out of memory copying a " + std::to_string(size) +
                         "-byte executable");
  if (size)
    std::memcpy(file.data(), data, size);
  StatusOr<std::unique_ptr<Impl>> impl = load(std::move(file), options);
  if (!impl)
    return impl.status();
  return std::unique_ptr<Executable>(new Executable(std::move(*impl)));
}

StatusOr<std::unique_ptr<Executable>>
Executable::loadBytes(std::vector<uint8_t> bytes, const LoadOptions &options) {
  return loadBytes(bytes.data(), bytes.size(), options);
}

const std::vector<FunctionSignature> &Executable::functions() const {
  return impl->signatures;
}

std::vector<std::string> Executable::functionNames() const {
  std::vector<std::string> names;
  for (const FunctionSignature &sig : impl->signatures)
    names.push_back(sig.name);
  return names;
}

StatusOr<size_t> Executable::findFunction(const std::string &name) const {
  std::string available;
  for (size_t i = 0; i < impl->signatures.size(); ++i) {
    if (impl->signatures[i].name == name)
      return i;
    available += (i ? ", " : "") + impl->signatures[i].name;
  }
  return Status::error("no function named '" + name +
                       "' (the executable has: " + available + ")");
}

size_t Executable::numKernels() const { return impl->kernelNames.size(); }

ExecutableTarget Executable::target() const { return impl->target; }

std::string Executable::kernelArch() const {
  if (impl->target == ExecutableTarget::Cpu)
    return impl->cpuArch;
  const detail::GpuLibrary *newest = nullptr;
  for (const detail::GpuLibrary &library : impl->gpuLibraries)
    if (!newest || library.computeCapability > newest->computeCapability)
      newest = &library;
  return newest ? newest->arch : "";
}

const char *flow::runtime::targetName(ExecutableTarget target) {
  return target == ExecutableTarget::Cuda ? "cuda" : "cpu";
}

size_t Executable::numConstants() const { return impl->constants.size(); }

const std::vector<int64_t> &Executable::mesh() const { return impl->mesh; }

StatusOr<size_t> Executable::findFunction(const std::string &name,
                                          int64_t rank) const {
  for (size_t i = 0; i < impl->signatures.size(); ++i) {
    const FunctionSignature &sig = impl->signatures[i];
    if (sig.ranks.empty())
      continue;
    if (sig.globalName == name &&
        std::find(sig.ranks.begin(), sig.ranks.end(), rank) != sig.ranks.end())
      return i;
  }
  return findFunction(name);
}

std::vector<int64_t>
flow::runtime::meshCoordinates(const std::vector<int64_t> &mesh,
                               int64_t rank) {
  std::vector<int64_t> coords(mesh.size());
  for (size_t a = mesh.size(); a-- > 0;) {
    coords[a] = rank % mesh[a];
    rank /= mesh[a];
  }
  return coords;
}

void flow::runtime::localPiece(const std::vector<int64_t> &global,
                               const std::vector<SbpEntry> &sbp,
                               const std::vector<int64_t> &mesh,
                               const std::vector<int64_t> &coords,
                               std::vector<int64_t> &shape,
                               std::vector<int64_t> &offset) {
  shape = global;
  offset.assign(global.size(), 0);
  for (size_t axis = 0; axis < sbp.size() && axis < mesh.size(); ++axis) {
    if (sbp[axis].kind != SbpEntry::Split)
      continue;
    int64_t d = sbp[axis].dim;
    int64_t n = shape[d], p = mesh[axis], r = coords[axis];
    int64_t base = n / p, extra = n % p;
    offset[d] += r * base + std::min(r, extra);
    shape[d] = base + (r < extra ? 1 : 0);
  }
}

size_t Executable::numParameters() const {
  size_t n = 0;
  for (const detail::Constant &constant : impl->constants)
    n += !constant.parameter.empty();
  return n;
}

std::string Executable::parameterArchive() const {
  return impl->parameters ? impl->parameters->path() : "";
}
