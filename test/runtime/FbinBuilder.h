//===- FbinBuilder.h - Building .fbin files in tests ------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A plain description of an executable (ExecutableSpec) that tests edit
// freely, valid or not, and build() turns into .fbin bytes with the
// FlatBuffers builder. sampleSpec() is a small valid program over the test
// kernel library (kernels.c) that uses every command kind.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TEST_RUNTIME_FBINBUILDER_H
#define FLOW_TEST_RUNTIME_FBINBUILDER_H

#include "flow/runtime/Checksum.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Npy.h"
#include "flow/runtime/executable_generated.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace flow {
namespace test {

namespace fbs = ::flow::fbs;
using fbs::Space;
using runtime::DType;

struct TypeSpec {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Extents over the function's size symbols (empty: static).
  std::vector<std::string> extents = {};
};

struct RefSpec {
  Space space = Space::Arena;
  uint32_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

inline RefSpec inputRef(uint32_t i, uint64_t size, uint64_t offset = 0) {
  return {Space::Input, i, offset, size};
}
inline RefSpec outputRef(uint32_t i, uint64_t size, uint64_t offset = 0) {
  return {Space::Output, i, offset, size};
}
inline RefSpec arenaRef(uint64_t offset, uint64_t size) {
  return {Space::Arena, 0, offset, size};
}
inline RefSpec constantRef(uint32_t i, uint64_t size, uint64_t offset = 0) {
  return {Space::Constant, i, offset, size};
}

struct DispatchSpec {
  uint32_t kernel = 0;
  uint32_t maxWorkgroups = 1;
  uint64_t work = 0;
  std::vector<RefSpec> bindings;
};

struct GemmSpec {
  int64_t m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  std::vector<int64_t> batchShape, aBatchStrides, bBatchStrides;
  std::optional<RefSpec> a, b, c;
  /// The library epilogue.
  std::optional<RefSpec> bias;
  fbs::GemmActivation activation = fbs::GemmActivation::None;
  fbs::DType abDtype = fbs::DType::F32, cDtype = fbs::DType::F32;
  bool allowTf32 = false;
  /// Rows of C's dimension 0 counted per call (empty: none).
  std::string rows = {};
};

struct CopySpec {
  std::optional<RefSpec> src, dst;
  /// Rows counted per call (empty: none).
  std::string rows = {};
};

/// A command with any union type byte (its value is an empty Copy table).
struct RawCommandSpec {
  uint8_t type = 0;
};

struct CollectiveSpec {
  fbs::CollectiveKind kind = fbs::CollectiveKind::AllGather;
  fbs::Reduction reduction = fbs::Reduction::Sum;
  std::vector<int64_t> meshAxes = {0};
  DType dtype = DType::F32;
  std::vector<int64_t> inputShape, outputShape;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  std::optional<RefSpec> input, output;
  bool async = false;
};

/// Waits for the async collective at command position `collective`.
struct WaitSpec {
  uint32_t collective = 0;
};

struct ConvSpec {
  std::vector<int64_t> inputShape, filterShape, outputShape;
  std::vector<int64_t> strides = {1, 1}, padding = {0, 0, 0, 0},
                       dilations = {1, 1};
  int64_t groups = 1;
  bool relu = false;
  std::optional<RefSpec> input, filter, bias, residual, output;
  bool blockedInput = false, blockedResidual = false, blockedOutput = false;
  bool bf16 = false;
  DType inputDtype = DType::F32, residualDtype = DType::F32,
        outputDtype = DType::F32;
  /// F16 or BF16: a narrow convolution (every tensor of that type).
  DType element = DType::F32;
};

struct PoolSpec {
  /// An AvgPool table (dilations unused), else a MaxPool one.
  bool average = false, countIncludePad = false;
  std::vector<int64_t> inputShape, outputShape;
  std::vector<int64_t> kernel = {1, 1}, strides = {1, 1},
                       padding = {0, 0, 0, 0}, dilations = {1, 1};
  std::optional<RefSpec> input, output;
  bool blockedInput = false, blockedOutput = false;
  DType inputDtype = DType::F32, outputDtype = DType::F32;
};

struct AttentionSpec {
  std::vector<int64_t> queryShape, keyShape, valueShape, maskShape;
  DType dtype = DType::F32, maskDtype = DType::I1;
  double scale = 1.0;
  bool causal = false;
  std::optional<RefSpec> query, key, value, mask, output;
};

using CommandSpec =
    std::variant<DispatchSpec, GemmSpec, CopySpec, RawCommandSpec,
                 CollectiveSpec, ConvSpec, PoolSpec, WaitSpec, AttentionSpec>;

/// An entry of a function's state table.
struct StateEntry {
  std::string name;
  uint32_t input = 0;
  int64_t output = -1;
  bool zeros = false;
};

struct FunctionSpec {
  std::optional<std::string> name;
  std::vector<StateEntry> state;
  std::vector<TypeSpec> inputs, outputs;
  std::vector<CommandSpec> commands;
  uint64_t arenaSize = 0;
  /// A device program: the ranks running it (global signature: the same
  /// shapes, all B).
  std::vector<int64_t> ranks;
  /// Size symbols: name, min, max.
  std::vector<std::tuple<std::string, int64_t, int64_t>> symbols = {};
};

/// A CUDA kernel's launch: its symbol, grid, block and shared bytes.
struct LaunchSpec {
  std::string symbol;
  std::array<uint32_t, 3> grid = {1, 1, 1}, block = {32, 1, 1};
  uint32_t sharedBytes = 0;
};

struct KernelSpec {
  std::string symbol;
  uint32_t numBindings = 0;
  std::vector<uint64_t> bindingSizes;
  uint32_t numOutputs = 1;
  /// CUDA kernels.
  std::vector<LaunchSpec> launches;
  uint64_t scratchBytes = 0;
  std::vector<uint64_t> scratchOffsets;
};

/// A constant read from the parameter archive.
struct ParameterSpec {
  std::string name;
  TypeSpec type;
  /// A piece by SBP: the binding device's piece of a `pieceOf` tensor.
  std::vector<int64_t> pieceOf;
  std::vector<fbs::SbpEntry> pieceSbp;
  /// A piece by SBP of the block of shape `pieceSbpOf` at `pieceOffsets`
  /// (`pieceOf`: the archive tensor's shape).
  std::vector<int64_t> pieceOffsets, pieceSbpOf;
  /// Read only by joins (Constant.joined_only).
  bool joinedOnly = false;
};

/// A constant the runtime fills with the binding device's piece offsets.
struct DeviceOffsetsSpec {
  std::vector<int64_t> of;
  std::vector<fbs::SbpEntry> sbp, within;
  std::vector<int64_t> ranks;
  /// The constant's type: i64[rank of `of`] unless set.
  std::optional<TypeSpec> type;
};

/// Parameters joined at bind (host.parameter_concat).
struct ConcatSpec {
  TypeSpec type;
  std::vector<uint32_t> parts;
  int64_t axis = 0;
  std::vector<int64_t> ranks;
};

struct ExecutableSpec {
  uint32_t version = runtime::kExecutableVersion;
  fbs::Target target = fbs::Target::CPU;
  std::vector<FunctionSpec> functions;
  std::vector<KernelSpec> kernels;
  std::optional<std::vector<uint8_t>> library;
  std::vector<std::vector<uint8_t>> constants;
  /// Constants after `constants` (their indices follow on).
  std::vector<ParameterSpec> parameters;
  /// Constants after `parameters`.
  std::vector<DeviceOffsetsSpec> deviceOffsets;
  /// Constants after `deviceOffsets`.
  std::vector<ConcatSpec> concats;
  std::optional<std::string> parameterArchive;
  /// A device mesh; functions with `ranks` are its device programs.
  std::vector<int64_t> mesh;
  /// Stored as is when set; otherwise the file is stamped with its real
  /// checksum (flow/runtime/Checksum.h) once built.
  std::optional<uint64_t> checksum;
  /// Align the library and constants to 64 bytes, as the schema asks.
  bool align = true;
  /// The CPU the kernel library was compiled for, and its features the
  /// runtime checks (none: any CPU).
  std::optional<std::string> cpu;
  std::vector<std::string> cpuFeatures;
  /// The library's format (a CPU executable holds ELF), and more libraries
  /// after it.
  fbs::KernelFormat libraryFormat = fbs::KernelFormat::ELF;
  std::vector<std::pair<fbs::KernelFormat, std::vector<uint8_t>>>
      extraLibraries;
};

/// The bytes of the executable's first kernel library, or null.
inline const flatbuffers::Vector<uint8_t> *
firstLibrary(const fbs::Executable *exe) {
  const auto *libraries = exe->kernel_libraries();
  if (!libraries || libraries->size() == 0)
    return nullptr;
  return libraries->Get(0)->data();
}

/// Serializes \p spec.
inline std::vector<uint8_t> build(const ExecutableSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  auto ref = [](const std::optional<RefSpec> &r,
                fbs::BufferRef &storage) -> const fbs::BufferRef * {
    if (!r)
      return nullptr;
    storage = fbs::BufferRef(r->space, r->index, r->offset, r->size);
    return &storage;
  };
  auto bytes = [&](const std::vector<uint8_t> &data) {
    if (spec.align)
      fbb.ForceVectorAlignment(data.size(), 1, 64);
    return fbb.CreateVector(data);
  };

  std::vector<flatbuffers::Offset<fbs::Function>> functions;
  for (const FunctionSpec &function : spec.functions) {
    auto types = [&](const std::vector<TypeSpec> &specs) {
      std::vector<flatbuffers::Offset<fbs::TensorType>> out;
      for (const TypeSpec &t : specs) {
        std::vector<flatbuffers::Offset<flatbuffers::String>> extents;
        for (const std::string &e : t.extents)
          extents.push_back(fbb.CreateString(e));
        out.push_back(fbs::CreateTensorTypeDirect(
            fbb, static_cast<fbs::DType>(t.dtype), &t.shape,
            t.extents.empty() ? nullptr : &extents));
      }
      return out;
    };
    std::vector<flatbuffers::Offset<fbs::TensorType>> inputs =
        types(function.inputs);
    std::vector<flatbuffers::Offset<fbs::TensorType>> outputs =
        types(function.outputs);
    std::vector<fbs::Command> commandTypes;
    std::vector<flatbuffers::Offset<void>> commands;
    for (const CommandSpec &command : function.commands) {
      if (const auto *d = std::get_if<DispatchSpec>(&command)) {
        std::vector<fbs::BufferRef> bindings;
        for (const RefSpec &r : d->bindings)
          bindings.emplace_back(r.space, r.index, r.offset, r.size);
        commandTypes.push_back(fbs::Command::Dispatch);
        commands.push_back(fbs::CreateDispatchDirect(fbb, d->kernel,
                                                     d->maxWorkgroups,
                                                     &bindings, d->work)
                               .Union());
      } else if (const auto *g = std::get_if<GemmSpec>(&command)) {
        fbs::BufferRef a, b, c, bias;
        commandTypes.push_back(fbs::Command::Gemm);
        commands.push_back(fbs::CreateGemmDirect(
                               fbb, g->m, g->n, g->k, g->transposeA,
                               g->transposeB, &g->batchShape, &g->aBatchStrides,
                               &g->bBatchStrides, ref(g->a, a), ref(g->b, b),
                               ref(g->c, c), g->abDtype, ref(g->bias, bias),
                               g->activation, g->cDtype, g->allowTf32,
                               g->rows.empty() ? nullptr : g->rows.c_str())
                               .Union());
      } else if (const auto *c = std::get_if<CopySpec>(&command)) {
        fbs::BufferRef src, dst;
        commandTypes.push_back(fbs::Command::Copy);
        commands.push_back(
            fbs::CreateCopyDirect(fbb, ref(c->src, src), ref(c->dst, dst),
                                  c->rows.empty() ? nullptr : c->rows.c_str())
                .Union());
      } else if (const auto *c = std::get_if<CollectiveSpec>(&command)) {
        fbs::BufferRef in, out;
        commandTypes.push_back(fbs::Command::Collective);
        commands.push_back(
            fbs::CreateCollectiveDirect(
                fbb, c->kind, c->reduction, &c->meshAxes,
                static_cast<fbs::DType>(c->dtype), &c->inputShape,
                &c->outputShape, c->dim, c->splitDim, c->concatDim,
                ref(c->input, in), ref(c->output, out), c->async)
                .Union());
      } else if (const auto *w = std::get_if<WaitSpec>(&command)) {
        commandTypes.push_back(fbs::Command::Wait);
        commands.push_back(fbs::CreateWait(fbb, w->collective).Union());
      } else if (const auto *c = std::get_if<ConvSpec>(&command)) {
        fbs::BufferRef in, filter, bias, residual, out;
        commandTypes.push_back(fbs::Command::Conv);
        commands.push_back(
            fbs::CreateConvDirect(
                fbb, &c->inputShape, &c->filterShape, &c->outputShape,
                &c->strides, &c->padding, &c->dilations, c->groups, c->relu,
                ref(c->input, in), ref(c->filter, filter), ref(c->bias, bias),
                ref(c->residual, residual), ref(c->output, out),
                c->blockedInput, c->blockedResidual, c->blockedOutput, c->bf16,
                static_cast<fbs::DType>(c->inputDtype),
                static_cast<fbs::DType>(c->residualDtype),
                static_cast<fbs::DType>(c->outputDtype),
                static_cast<fbs::DType>(c->element))
                .Union());
      } else if (const auto *c = std::get_if<PoolSpec>(&command)) {
        fbs::BufferRef in, out;
        commandTypes.push_back(c->average ? fbs::Command::AvgPool
                                          : fbs::Command::MaxPool);
        commands.push_back(
            c->average
                ? fbs::CreateAvgPoolDirect(
                      fbb, &c->inputShape, &c->outputShape, &c->kernel,
                      &c->strides, &c->padding, c->countIncludePad,
                      ref(c->input, in), ref(c->output, out), c->blockedInput,
                      c->blockedOutput,
                      static_cast<fbs::DType>(c->inputDtype),
                      static_cast<fbs::DType>(c->outputDtype))
                      .Union()
                : fbs::CreateMaxPoolDirect(
                      fbb, &c->inputShape, &c->outputShape, &c->kernel,
                      &c->strides, &c->padding, &c->dilations,
                      ref(c->input, in), ref(c->output, out), c->blockedInput,
                      c->blockedOutput,
                      static_cast<fbs::DType>(c->inputDtype),
                      static_cast<fbs::DType>(c->outputDtype))
                      .Union());
      } else if (const auto *a = std::get_if<AttentionSpec>(&command)) {
        fbs::BufferRef q, k, v, m, out;
        commandTypes.push_back(fbs::Command::Attention);
        commands.push_back(
            fbs::CreateAttentionDirect(
                fbb, &a->queryShape, &a->keyShape, &a->valueShape,
                a->maskShape.empty() ? nullptr : &a->maskShape,
                static_cast<fbs::DType>(a->dtype),
                static_cast<fbs::DType>(a->maskDtype), a->scale, a->causal,
                ref(a->query, q), ref(a->key, k), ref(a->value, v),
                ref(a->mask, m), ref(a->output, out))
                .Union());
      } else {
        const auto &raw = std::get<RawCommandSpec>(command);
        commandTypes.push_back(static_cast<fbs::Command>(raw.type));
        commands.push_back(fbs::CreateCopy(fbb).Union());
      }
    }
    std::vector<flatbuffers::Offset<fbs::Placement>> globalIn, globalOut;
    auto placements = [&](const std::vector<TypeSpec> &specs,
                          std::vector<flatbuffers::Offset<fbs::Placement>> &o) {
      for (const TypeSpec &t : specs) {
        std::vector<fbs::SbpEntry> sbp(spec.mesh.size(),
                                       fbs::SbpEntry(fbs::SbpKind::Broadcast, 0));
        o.push_back(fbs::CreatePlacementDirect(
            fbb,
            fbs::CreateTensorTypeDirect(fbb, static_cast<fbs::DType>(t.dtype),
                                        &t.shape),
            &sbp));
      }
    };
    std::vector<flatbuffers::Offset<fbs::State>> state;
    for (const StateEntry &e : function.state)
      state.push_back(fbs::CreateStateDirect(fbb, e.name.c_str(), e.input,
                                             e.output, e.zeros));
    std::vector<flatbuffers::Offset<fbs::Symbol>> symbols;
    for (const auto &[name, min, max] : function.symbols)
      symbols.push_back(fbs::CreateSymbolDirect(fbb, name.c_str(), min, max));
    if (!function.ranks.empty()) {
      placements(function.inputs, globalIn);
      placements(function.outputs, globalOut);
    }
    functions.push_back(fbs::CreateFunctionDirect(
        fbb, function.name ? function.name->c_str() : nullptr, &inputs,
        &outputs, &commandTypes, &commands, function.arenaSize,
        function.ranks.empty() ? nullptr : &function.ranks,
        function.ranks.empty()
            ? nullptr
            : (function.name ? function.name->c_str() : nullptr),
        function.ranks.empty() ? nullptr : &globalIn,
        function.ranks.empty() ? nullptr : &globalOut,
        function.state.empty() ? nullptr : &state, /*index_checks=*/nullptr,
        function.symbols.empty() ? nullptr : &symbols));
  }
  std::vector<flatbuffers::Offset<fbs::Kernel>> kernels;
  for (const KernelSpec &kernel : spec.kernels) {
    std::vector<flatbuffers::Offset<fbs::GpuLaunch>> launches;
    for (const LaunchSpec &l : kernel.launches) {
      fbs::Launch shape(l.grid[0], l.grid[1], l.grid[2], l.block[0],
                        l.block[1], l.block[2], l.sharedBytes);
      launches.push_back(
          fbs::CreateGpuLaunch(fbb, fbb.CreateString(l.symbol), &shape));
    }
    kernels.push_back(fbs::CreateKernel(
        fbb, fbb.CreateString(kernel.symbol), kernel.numBindings,
        fbb.CreateVector(kernel.bindingSizes), kernel.numOutputs, 0, 0,
        launches.empty() ? 0 : fbb.CreateVector(launches),
        kernel.scratchBytes,
        kernel.scratchOffsets.empty()
            ? 0
            : fbb.CreateVector(kernel.scratchOffsets)));
  }
  auto functionsVector = fbb.CreateVector(functions);
  auto kernelsVector = fbb.CreateVector(kernels);
  std::vector<flatbuffers::Offset<fbs::KernelLibrary>> libraries;
  if (spec.library) {
    auto data = bytes(*spec.library);
    libraries.push_back(fbs::CreateKernelLibrary(
        fbb, spec.libraryFormat, spec.cpu ? fbb.CreateString(*spec.cpu) : 0,
        spec.cpuFeatures.empty() ? 0
                                 : fbb.CreateVectorOfStrings(spec.cpuFeatures),
        data));
  }
  for (const auto &[format, data] : spec.extraLibraries)
    libraries.push_back(
        fbs::CreateKernelLibrary(fbb, format, 0, 0, bytes(data)));
  std::vector<flatbuffers::Offset<fbs::Constant>> constants;
  for (const std::vector<uint8_t> &data : spec.constants)
    constants.push_back(fbs::CreateConstant(fbb, bytes(data)));
  for (const ParameterSpec &p : spec.parameters) {
    auto type = fbs::CreateTensorTypeDirect(
        fbb, static_cast<fbs::DType>(p.type.dtype), &p.type.shape);
    constants.push_back(fbs::CreateConstant(
        fbb, 0, fbb.CreateString(p.name), type,
        p.pieceOffsets.empty() ? 0 : fbb.CreateVector(p.pieceOffsets),
        p.pieceOf.empty() ? 0 : fbb.CreateVector(p.pieceOf), 0,
        p.pieceSbp.empty() ? 0 : fbb.CreateVectorOfStructs(p.pieceSbp), false,
        0, p.pieceSbpOf.empty() ? 0 : fbb.CreateVector(p.pieceSbpOf), 0, 0,
        p.joinedOnly));
  }
  for (const DeviceOffsetsSpec &o : spec.deviceOffsets) {
    TypeSpec t = o.type ? *o.type
                        : TypeSpec{DType::I64, {(int64_t)o.of.size()}};
    auto type = fbs::CreateTensorTypeDirect(
        fbb, static_cast<fbs::DType>(t.dtype), &t.shape);
    constants.push_back(fbs::CreateConstant(
        fbb, 0, 0, type, 0, fbb.CreateVector(o.of),
        o.ranks.empty() ? 0 : fbb.CreateVector(o.ranks),
        o.sbp.empty() ? 0 : fbb.CreateVectorOfStructs(o.sbp), true,
        o.within.empty() ? 0 : fbb.CreateVectorOfStructs(o.within)));
  }
  for (const ConcatSpec &c : spec.concats) {
    auto type = fbs::CreateTensorTypeDirect(
        fbb, static_cast<fbs::DType>(c.type.dtype), &c.type.shape);
    auto parts = fbb.CreateVector(c.parts);
    auto ranks = c.ranks.empty() ? 0 : fbb.CreateVector(c.ranks);
    constants.push_back(fbs::CreateConstant(fbb, 0, 0, type, 0, 0, ranks, 0,
                                            false, 0, 0, parts, c.axis));
  }
  auto constantsVector = fbb.CreateVector(constants);
  flatbuffers::Offset<flatbuffers::String> archive;
  if (spec.parameterArchive)
    archive = fbb.CreateString(*spec.parameterArchive);
  auto root = fbs::CreateExecutable(
      fbb, spec.version, spec.target, functionsVector, kernelsVector,
      constantsVector,
      spec.checksum ? *spec.checksum : runtime::kChecksumPlaceholder, archive,
      spec.mesh.empty() ? 0 : fbb.CreateVector(spec.mesh),
      libraries.empty() ? 0 : fbb.CreateVector(libraries));
  fbs::FinishExecutableBuffer(fbb, root);
  std::vector<uint8_t> out(fbb.GetBufferPointer(),
                           fbb.GetBufferPointer() + fbb.GetSize());
  if (!spec.checksum)
    runtime::stampChecksum(out.data(), out.size());
  return out;
}

/// Gives \p bytes, an edited copy of \p original, its own checksum, so that
/// tests reach the checks behind the checksum; unless the file no longer
/// verifies as FlatBuffers, or the edit reached the kernel library: a
/// changed library with a valid checksum is a forgery, and dlopen would run
/// whatever it holds (the trust boundary, flow/runtime/Checksum.h).
inline void restampUnlessLibraryChanged(std::vector<uint8_t> &bytes,
                                        const std::vector<uint8_t> &original) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (bytes.size() < 8 || !fbs::VerifyExecutableBuffer(verifier))
    return;
  const auto *edited = firstLibrary(fbs::GetExecutable(bytes.data()));
  const auto *kept = firstLibrary(fbs::GetExecutable(original.data()));
  size_t editedSize = edited ? edited->size() : 0;
  size_t keptSize = kept ? kept->size() : 0;
  if (editedSize != keptSize ||
      (keptSize && std::memcmp(edited->data(), kept->data(), keptSize) != 0))
    return;
  runtime::stampChecksum(bytes.data(), bytes.size());
}

/// The error loading \p bytes gives, or "" if it loads.
inline std::string loadError(const std::vector<uint8_t> &bytes) {
  auto exe = runtime::Executable::loadBytes(bytes);
  return exe ? "" : exe.status().message();
}
inline std::string loadError(const ExecutableSpec &spec) {
  return loadError(build(spec));
}

#define EXPECT_LOAD_ERROR(spec, text)                                          \
  do {                                                                         \
    std::string message = ::flow::test::loadError(spec);                       \
    EXPECT_NE(message.find(text), std::string::npos)                           \
        << "expected an error containing \"" << (text) << "\", got \""         \
        << message << "\"";                                                    \
  } while (0)

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// The test kernel library (kernels.c), built beside the tests.
inline const std::vector<uint8_t> &testKernels() {
  static const std::vector<uint8_t> bytes = readBytes(FLOW_TEST_KERNELS);
  return bytes;
}

/// Kernel indices of the kernels every spec from kernelSpecs() has.
enum TestKernel : uint32_t { kAdd, kScale2, kAddressOf, kWorkgroups };

inline std::vector<KernelSpec> testKernelSpecs() {
  auto kernel = [](std::string symbol, std::vector<uint64_t> sizes) {
    KernelSpec k;
    k.symbol = std::move(symbol);
    k.numBindings = static_cast<uint32_t>(sizes.size());
    k.bindingSizes = std::move(sizes);
    return k;
  };
  return {kernel("add_f32_entry", {64, 64, 64}),
          kernel("scale2_f32_entry", {64, 64}),
          kernel("address_of_entry", {8, 8}),
          kernel("workgroups_entry", {512})};
}

/// Bytes of \p values.
inline std::vector<uint8_t> floatBytes(const std::vector<float> &values) {
  std::vector<uint8_t> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// An f32 tensor of \p shape holding \p values.
inline runtime::HostTensor f32Tensor(std::vector<int64_t> shape,
                                     const std::vector<float> &values) {
  runtime::HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.data = floatBytes(values);
  return t;
}

/// The values of an f32 tensor.
inline std::vector<float> floats(const runtime::HostTensor &t) {
  std::vector<float> out(t.data.size() / sizeof(float));
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

/// The 4x4 matrix constant of sampleSpec(): w[i][j] = i - j / 2.
inline std::vector<float> sampleWeights() {
  std::vector<float> w(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      w[i * 4 + j] = static_cast<float>(i) - static_cast<float>(j) / 2;
  return w;
}

/// A valid program using every command kind: function "forward" takes
/// x, y : f32[4,4] and returns (x + y) @ w and 2 * ((x + y) @ w):
///   0 dispatch add(x, y) -> arena[0, 64)
///   1 gemm arena[0, 64) x constant 0 -> output 0
///   2 dispatch scale2(output 0) -> arena[64, 128)
///   3 copy arena[64, 128) -> output 1
inline ExecutableSpec sampleSpec() {
  ExecutableSpec spec;
  spec.kernels = testKernelSpecs();
  spec.library = testKernels();
  spec.constants = {floatBytes(sampleWeights())};
  FunctionSpec f;
  f.name = "forward";
  f.inputs = {{DType::F32, {4, 4}}, {DType::F32, {4, 4}}};
  f.outputs = {{DType::F32, {4, 4}}, {DType::F32, {4, 4}}};
  f.arenaSize = 128;
  f.commands.push_back(DispatchSpec{
      kAdd, 4, 16, {inputRef(0, 64), inputRef(1, 64), arenaRef(0, 64)}});
  GemmSpec gemm;
  gemm.m = gemm.n = gemm.k = 4;
  gemm.a = arenaRef(0, 64);
  gemm.b = constantRef(0, 64);
  gemm.c = outputRef(0, 64);
  f.commands.push_back(gemm);
  f.commands.push_back(
      DispatchSpec{kScale2, 4, 16, {outputRef(0, 64), arenaRef(64, 64)}});
  f.commands.push_back(CopySpec{arenaRef(64, 64), outputRef(1, 64)});
  spec.functions.push_back(f);
  return spec;
}

/// A running sum: state `acc` (input 0) gets x (input 1) added in place;
/// output 0 is tied to it, output 1 a copy of the new sum.
inline ExecutableSpec accumulatorSpec() {
  ExecutableSpec spec;
  spec.kernels = testKernelSpecs();
  spec.library = testKernels();
  FunctionSpec f;
  f.name = "accumulate";
  f.inputs = {{DType::F32, {4, 4}}, {DType::F32, {4, 4}}};
  f.outputs = {{DType::F32, {4, 4}}, {DType::F32, {4, 4}}};
  f.state = {{"acc", 0, 0, true}};
  f.commands.push_back(DispatchSpec{
      kAdd, 1, 16, {inputRef(0, 64), inputRef(1, 64), inputRef(0, 64)}});
  f.commands.push_back(CopySpec{inputRef(0, 64), outputRef(1, 64)});
  spec.functions.push_back(f);
  return spec;
}

} // namespace test
} // namespace flow

#endif // FLOW_TEST_RUNTIME_FBINBUILDER_H
