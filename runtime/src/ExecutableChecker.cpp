//===- ExecutableChecker.cpp - Checking an executable's tables ------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The semantic checks of a file the FlatBuffers verifier accepted: the
// header, the kernels, the constants and each function (its signature,
// state, index checks, placements, and the order of its async collectives
// and waits). Each command's own checks are in ExecutableCommands.cpp.
//
//===----------------------------------------------------------------------===//

#include "ExecutableChecker.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

using namespace flow::runtime;
using namespace flow::runtime::detail;

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
        static_cast<int>(fbs::Space::Constant) ==
            int(detail::Space::Constant) &&
        static_cast<int>(fbs::Space::Symbols) == int(detail::Space::Symbols) &&
        static_cast<int>(fbs::Space::MAX) == int(detail::Space::Symbols),
    "runtime and schema Space values differ");

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
      g.dynamicSharedBytes = launch->dynamic_shared_bytes();
      // The largest opt-in of any GPU (227 KiB on sm_90 and sm_100); the
      // device's own limit is checked when the kernels load.
      if (uint64_t(g.sharedBytes) + g.dynamicSharedBytes > 232448)
        return Status::error(
            where + ": " +
            std::to_string(g.sharedBytes + uint64_t(g.dynamicSharedBytes)) +
            " bytes of shared memory is more than any GPU "
            "gives a block (232448)");
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
    } else if (entry->concat_parts()) {
      if (Status st = loadParameterConcat(entry, i, constant); !st)
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
      constant.joinedOnly = entry->joined_only();
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

/// Parameters joined at bind: earlier parameter constants of one element
/// type and rank whose shapes differ only along the axis, adding up to
/// this constant's type; no data of its own.
Status Checker::loadParameterConcat(const fbs::Constant *entry, size_t index,
                                    detail::Constant &constant) {
  std::string ctx =
      "constant " + std::to_string(index) + " (joined parameters)";
  if ((entry->data() && entry->data()->size() > 0) || entry->parameter() ||
      entry->piece_offsets() || entry->piece_of() || entry->piece_sbp())
    return Status::error(ctx + ": holds data, a parameter or a piece of its "
                               "own");
  uint64_t bytes = 0;
  if (Status st = verifyTensor(entry->type(), ctx, constant.spec, bytes); !st)
    return st;
  if (!isAligned(entry->concat_parts()) || !isAligned(entry->ranks()))
    return misaligned(ctx + ": parts or ranks");
  const std::vector<int64_t> &shape = constant.spec.shape;
  int64_t axis = entry->concat_axis();
  if (axis < 0 || axis >= (int64_t)shape.size())
    return Status::error(ctx + ": axis " + std::to_string(axis) +
                         " is outside " + constant.spec.str());
  int64_t total = 0;
  for (uint32_t p : *entry->concat_parts()) {
    if (p >= index || impl.constants[p].parameter.empty())
      return Status::error(ctx + ": part " + std::to_string(p) +
                           " is not an earlier parameter");
    const TensorSpec &part = impl.constants[p].spec;
    bool fits =
        part.dtype == constant.spec.dtype && part.shape.size() == shape.size();
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = (int64_t)d == axis || part.shape[d] == shape[d];
    if (!fits)
      return Status::error(ctx + ": part " + part.str() + " does not fit " +
                           constant.spec.str() + " along axis " +
                           std::to_string(axis));
    total += part.shape[axis];
  }
  if (total != shape[axis])
    return Status::error(ctx + ": parts add up to " + std::to_string(total) +
                         " along axis " + std::to_string(axis) + ", not " +
                         std::to_string(shape[axis]));
  constant.concatParts.assign(entry->concat_parts()->begin(),
                              entry->concat_parts()->end());
  constant.concatAxis = axis;
  constant.size = bytes;
  if (entry->ranks())
    constant.ranks.assign(entry->ranks()->begin(), entry->ranks()->end());
  for (int64_t r : constant.ranks)
    if (r < 0)
      return Status::error(ctx + ": invalid rank " + std::to_string(r));
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
  if (const auto *extents = type->extents()) {
    for (const flatbuffers::String *text : *extents)
      spec.extents.push_back(text ? text->str() : "");
  }
  overflow |= !mulOk(elements, dtypeSize(spec.dtype), bytes);
  if (overflow || bytes > kMaxBufferBytes)
    return Status::error(what + ": " + spec.str() +
                         " is too large (the limit is 64 GiB)");
  return Status::ok();
}

Status Checker::verifySymbols(const std::string &ctx,
                              const fbs::Function &function,
                              FunctionSignature &sig) {
  const auto *list = function.symbols();
  if (!list)
    return Status::ok();
  if (!impl.mesh.empty() || impl.target != ExecutableTarget::Cpu)
    return Status::error(ctx + " has size symbols, which only CPU "
                               "executables of one device take");
  for (size_t i = 0; i < list->size(); ++i) {
    const fbs::Symbol *entry = list->Get(i);
    std::string what = ctx + " size symbol " + std::to_string(i);
    if (!entry || !entry->name() ||
        !::flow::rules::isSymbolName(entry->name()->str()))
      return Status::error(what + " has no valid name");
    SizeSymbol symbol{entry->name()->str(), entry->min(), entry->max()};
    if (symbol.min < 1 || symbol.max < symbol.min)
      return Status::error(what + " '" + symbol.name + "' has bounds [" +
                           std::to_string(symbol.min) + ", " +
                           std::to_string(symbol.max) + "]");
    for (const SizeSymbol &other : sig.symbols)
      if (other.name == symbol.name)
        return Status::error(what + " '" + symbol.name + "' is declared twice");
    sig.symbols.push_back(symbol);
  }
  sizes.symbols = sig.symbols;
  return Status::ok();
}

Status Checker::verifyExtents(const std::string &what, const TensorSpec &spec) {
  if (spec.extents.empty())
    return Status::ok();
  if (spec.extents.size() != spec.shape.size())
    return Status::error(what + " has " + std::to_string(spec.extents.size()) +
                         " extents for " + std::to_string(spec.shape.size()) +
                         " dimensions");
  bool leading = true; // every dimension so far is the number 1
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    ::flow::rules::Extent e;
    std::string error;
    bool parsed = ::flow::rules::Extent::parse(spec.extents[d], e, error);
    if (parsed && !e.isConstant() && !leading)
      return Status::error(what + " dimension " + std::to_string(d) +
                           ": extent " + e.str() +
                           " is not the tensor's rows (its first dimension "
                           "that is not 1): only rows vary in size");
    leading = leading && parsed && e.is(1);
    if (!parsed)
      return Status::error(what + " dimension " + std::to_string(d) +
                           ": extent '" + printable(spec.extents[d]) +
                           "' does not parse (" + error + ")");
    int64_t lo, hi;
    bool ok = e.bounds(
        [&](const std::string &name, int64_t &a, int64_t &b) {
          for (const SizeSymbol &s : sizes.symbols)
            if (s.name == name) {
              a = s.min;
              b = s.max;
              return true;
            }
          return false;
        },
        lo, hi);
    if (!ok || lo < 0 || hi != spec.shape[d])
      return Status::error(
          what + " dimension " + std::to_string(d) + ": extent " + e.str() +
          (ok ? " ranges over [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "], not up to its size " +
                    std::to_string(spec.shape[d])
              : " uses a size symbol the function does not declare"));
  }
  return Status::ok();
}

Status Checker::verifyRowsUse(const std::string &ctx,
                              const FunctionSignature &sig,
                              const std::vector<detail::Command> &commands) {
  if (sig.symbols.empty())
    return Status::ok();
  if (!sig.state.empty())
    return Status::error(ctx + " has size symbols and state: a function "
                               "whose rows vary keeps no state");
  // The rows of each symbolic input and output, by symbol position.
  auto rowsOf = [&](const TensorSpec &spec) {
    detail::RowExtent out;
    for (size_t d = 0; d < spec.extents.size(); ++d) {
      const std::string &text = spec.extents[d];
      ::flow::rules::Extent e;
      std::string error;
      if (::flow::rules::Extent::parse(text, e, error) && !e.isConstant())
        return detail::rowExtentOf(e, sig.symbols, spec.shape[d]);
    }
    return detail::RowExtent();
  };
  for (size_t i = 0; i < commands.size(); ++i) {
    const detail::Command &command = commands[i];
    if (std::holds_alternative<detail::DispatchCommand>(command))
      continue; // a kernel counts its rows itself
    // The operands the runtime sizes for the call's rows.
    const detail::RowExtent *rows = nullptr;
    std::vector<const detail::BufferRef *> scaled;
    if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
      rows = &g->rows;
      int d = g->rowsDim;
      if (d < 0 ? !g->transposeA : g->aBatchStrides[d] != 0)
        scaled.push_back(&g->a);
      if (d >= 0 && g->bBatchStrides[d] != 0)
        scaled.push_back(&g->b);
      scaled.push_back(&g->c);
    } else if (const auto *c = std::get_if<detail::ConvCommand>(&command)) {
      rows = &c->rows;
      scaled = {&c->input, &c->residual, &c->output};
    } else if (const auto *a =
                   std::get_if<detail::AttentionCommand>(&command)) {
      rows = &a->rows;
      scaled = {&a->query, &a->key, &a->value, &a->mask, &a->output};
    } else if (const auto *c = std::get_if<detail::CopyCommand>(&command)) {
      rows = &c->rows;
      scaled = {&c->src, &c->dst};
    } else if (const auto *p = std::get_if<detail::PoolCommand>(&command)) {
      rows = &p->rows;
      scaled = {&p->input, &p->output};
    }
    std::vector<detail::BufferRef> reads, writes;
    commandBuffers(command, reads, writes);
    reads.insert(reads.end(), writes.begin(), writes.end());
    for (const detail::BufferRef &ref : reads) {
      const TensorSpec *spec = nullptr;
      if (ref.space == detail::Space::Input)
        spec = &sig.inputs[ref.index];
      else if (ref.space == detail::Space::Output)
        spec = &sig.outputs[ref.index];
      if (!spec || spec->extents.empty())
        continue;
      bool ok =
          rows && rows->active() && rows->proportionalTo(rowsOf(*spec)) &&
          ref.offset == 0 && ref.size == spec->byteSize() &&
          std::any_of(scaled.begin(), scaled.end(),
                      [&](const detail::BufferRef *s) {
                        return s->space == ref.space && s->index == ref.index &&
                               s->offset == ref.offset && s->size == ref.size;
                      });
      if (!ok)
        return Status::error(
            ctx + " command " + std::to_string(i) + " uses " +
            (ref.space == detail::Space::Input ? "input " : "output ") +
            std::to_string(ref.index) + " (" + spec->str() +
            "), whose rows vary, without counting the call's rows");
    }
  }
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
  if (Status s = verifySymbols(ctx, *function, sig); !s)
    return s;
  auto verifyTensors = [&](const auto *types, const char *kind,
                           std::vector<TensorSpec> &specs,
                           std::vector<uint64_t> &bytes) {
    size_t count = types ? types->size() : 0;
    for (size_t i = 0; i < count; ++i) {
      specs.emplace_back();
      bytes.emplace_back();
      std::string what = ctx + " " + kind + " " + std::to_string(i);
      if (Status s =
              verifyTensor(types->Get(i), what, specs.back(), bytes.back());
          !s)
        return s;
      if (Status s = verifyExtents(what, specs.back()); !s)
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
  if (Status s = verifyRowsUse(ctx, sig, decoded.commands); !s)
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
  } else if (const auto *a = std::get_if<detail::AttentionCommand>(&command)) {
    reads = {a->query, a->key, a->value};
    if (a->hasMask)
      reads.push_back(a->mask);
    writes = {a->output};
  } else if (const auto *c = std::get_if<detail::CopyCommand>(&command)) {
    reads = {c->src};
    writes = {c->dst};
  } else if (const auto *c = std::get_if<detail::CollectiveCommand>(&command)) {
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
