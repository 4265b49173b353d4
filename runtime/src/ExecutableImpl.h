//===- ExecutableImpl.h - The verified, decoded program ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Loading decodes the FlatBuffers tables into these plain structs once every
// check has passed, so running never reads the file again. Every BufferRef
// here is known to lie inside its buffer.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_EXECUTABLEIMPL_H
#define FLOW_RUNTIME_SRC_EXECUTABLEIMPL_H

#include "AlignedBuffer.h"
#include "KernelLibrary.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/Communicator.h"

#include <mutex>
#include <variant>

namespace flow {
namespace runtime {
namespace detail {

/// A kernel entry point.
using KernelFn = void (*)(void **bindings, int64_t workgroup,
                          int64_t workgroups);

/// Where a buffer lives, for one call (values as in the schema).
enum class Space : uint8_t { Input, Output, Arena, Constant, Symbols };

/// A command's rows that vary from call to call: an extent over the
/// function's size symbols (by position), at most `max` (the rows the
/// command's sizes were written for). Inactive for a static command.
struct RowExtent {
  /// coefficient * the product of the symbols at these positions, summed.
  std::vector<std::pair<int64_t, std::vector<uint32_t>>> terms;
  int64_t max = 0;
  bool active() const { return !terms.empty(); }
  /// Whether this and \p other are the same fraction of their upper
  /// bounds for every value of the symbols (the same rows of one buffer
  /// under two views: `batch` of [batch, 80] and `5*batch` of
  /// [5*batch, 16]).
  bool proportionalTo(const RowExtent &other) const {
    if (terms.size() != other.terms.size())
      return false;
    for (size_t i = 0; i < terms.size(); ++i)
      if (terms[i].second != other.terms[i].second ||
          static_cast<__int128>(terms[i].first) * other.max !=
              static_cast<__int128>(other.terms[i].first) * max)
        return false;
    return true;
  }
  /// Its value for a call's symbol values (bound within their bounds, so
  /// at most `max`).
  int64_t operator()(const int64_t *symbols) const {
    int64_t sum = 0;
    for (const auto &[coefficient, positions] : terms) {
      int64_t product = coefficient;
      for (uint32_t p : positions)
        product *= symbols[p];
      sum += product;
    }
    return sum;
  }
};

/// `size` bytes at byte `offset` of buffer `index` of `space`.
struct BufferRef {
  Space space = Space::Arena;
  uint32_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct DispatchCommand {
  uint32_t kernel = 0;
  uint32_t maxWorkgroups = 1;
  uint64_t work = 0;
  std::vector<BufferRef> bindings;
  /// An epilogue of the GemmCommand just before it (checked at load): it may
  /// run tile by tile with the GEMM's pieces of the same rows.
  bool gemmEpilogue = false;
  /// The kernel's rows counted per call (for the work and workgroups).
  RowExtent rows;
};

/// Sizes fit in int (cblas) and batch strides are in elements, >= 0.
struct GemmCommand {
  int m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  std::vector<int64_t> batchShape, aBatchStrides, bBatchStrides;
  int64_t batchCount = 1;
  BufferRef a, b, c;
  /// A and B: f32, bf16 or f16, summed in f32 (in TF32 where allowTf32:
  /// f32 operands only); C: f32, or abDtype.
  DType abDtype = DType::F32;
  DType cDtype = DType::F32;
  bool allowTf32 = false;
  /// The epilogue: n values of cDtype added to every row of C, then the
  /// activation.
  bool hasBias = false;
  BufferRef bias;
  enum Activation { None, Relu, GeluTanh } activation = None;
  /// Rows counted per call: those of C's first batch dimension that is
  /// not 1 (`rowsDim`), else its m (`rowsDim` -1).
  RowExtent rows;
  int rowsDim = -1;
  bool hasEpilogue() const { return hasBias || activation != None; }
  /// Whether the runtime's f32/bf16 GEMM path runs it directly (else its
  /// operands are widened to f32 first and C rounded after).
  bool isPlain() const {
    return cDtype == DType::F32 && !allowTf32 &&
           (abDtype == DType::F32 || abDtype == DType::BF16);
  }
};

struct CopyCommand {
  BufferRef src, dst;
  /// The buffers' rows counted per call: the copy takes src.size / max
  /// bytes per row.
  RowExtent rows;
};

/// A collective over mesh axes (shapes and pieces checked at load).
struct CollectiveCommand {
  enum Kind { AllReduce, AllGather, ReduceScatter, AllToAll } kind = AllReduce;
  Reduction reduction = Reduction::Sum;
  std::vector<int64_t> meshAxes;
  DType dtype = DType::F32;
  std::vector<int64_t> inputShape, outputShape;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  BufferRef input, output;
  /// Runs while the next commands do, up to its WaitCommand.
  bool async = false;
};

/// Waits for the async collective at position `collective` of the
/// function's commands. Checked at load: an earlier async collective,
/// waited for once, and no command in between writes its input or touches
/// its output.
struct WaitCommand {
  size_t collective = 0;
};

/// A convolution on the convolution library (shapes, sizes and layouts
/// checked at load). Shapes: input [n, c, h, w], filter [o, c / groups, kh,
/// kw], output [n, o, oh, ow].
struct ConvCommand {
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t groups = 1;
  bool relu = false, hasBias = false, hasResidual = false;
  /// Held in the runtime's convolution layout (runtime/src/Convolution.h).
  bool blockedInput = false, blockedResidual = false, blockedOutput = false;
  /// Operands rounded to bf16, summed in f32; the blocked tensors marked
  /// here hold bf16 elements (the rest f32).
  bool bf16 = false;
  bool inputBf16 = false, residualBf16 = false, outputBf16 = false;
  /// F16 or BF16: a narrow convolution, every tensor of that type (plain
  /// NCHW), products summed in f32. F32: as above.
  DType element = DType::F32;
  /// The residual is the output's buffer, held alike: the convolution adds
  /// the destination's contents.
  bool residualInPlace = false;
  BufferRef input, filter, bias, residual, output;
  /// The batch (n) counted per call.
  RowExtent rows;
};

/// Max or average pooling next to the convolution library (shapes, sizes
/// and layouts checked at load): input [n, c, h, w], output [n, c, oh, ow].
struct PoolCommand {
  /// Average (else maximum); its divisor counts the padding up to
  /// padBottom and padRight with includePad.
  bool average = false, includePad = false;
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  /// Held in the runtime's convolution layout (runtime/src/Convolution.h),
  /// and then possibly bf16 (else f32, NCHW).
  bool blockedInput = false, blockedOutput = false;
  bool inputBf16 = false, outputBf16 = false;
  BufferRef input, output;
  /// The batch (n) counted per call.
  RowExtent rows;
};

/// Fused attention (shapes, sizes and types checked at load): for each of
/// `batch` leading indices (the leading dimensions `leading`, row-major),
/// output [lq, dv] = softmax(scale * query [lq, d] key [lk, d]^T + mask)
/// value [lk, dv], all of `dtype` (F32, F16 or BF16), summed in f32.
struct AttentionCommand {
  std::vector<int64_t> leading;
  int64_t batch = 1, lq = 0, lk = 0, d = 0, dv = 0;
  double scale = 1.0;
  bool causal = false, hasMask = false;
  DType dtype = DType::F32;
  /// I1 (keep where true) or `dtype` (added).
  DType maskDtype = DType::I1;
  /// The mask's element strides along the scores' dimensions
  /// (leading..., lq, lk): 0 where it broadcasts.
  std::vector<int64_t> maskStrides;
  BufferRef query, key, value, mask, output;
  /// The first leading dimension counted per call.
  RowExtent rows;
};

/// A CUDA kernel library: PTX text (NUL-terminated) or a cubin, pointing
/// into the file.
struct GpuLibrary {
  enum Format { Ptx, Cubin } format = Ptx;
  /// The compute capability it was compiled for, as a number (90 for
  /// sm_90).
  int computeCapability = 0;
  std::string arch;
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// One launch of a CUDA kernel (see the schema's GpuLaunch).
struct GpuLaunch {
  std::string symbol;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  /// Dynamic shared memory requested at launch (bytes).
  uint32_t dynamicSharedBytes = 0;
};

/// A CUDA kernel's launches and the scratch memory they share.
struct GpuKernel {
  std::vector<GpuLaunch> launches;
  uint64_t scratchBytes = 0;
  std::vector<uint64_t> scratchOffsets;
};

using Command =
    std::variant<DispatchCommand, GemmCommand, CopyCommand, CollectiveCommand,
                 ConvCommand, PoolCommand, WaitCommand, AttentionCommand>;

struct Function {
  std::vector<Command> commands;
};

struct Constant {
  /// Null for a parameter only other devices' programs read (not bound in
  /// this process).
  const uint8_t *data = nullptr;
  size_t size = 0;
  /// Set for a parameter: its name in the archive and its type.
  std::string parameter;
  TensorSpec spec;
  /// A parameter's piece: the block of spec.shape at `pieceOffsets` in the
  /// archive's tensor of shape `pieceOf` (both empty: the whole tensor).
  std::vector<int64_t> pieceOffsets, pieceOf;
  /// A piece by SBP: the binding device's piece of the `pieceOf` tensor
  /// under this SBP on the mesh; `pieceOffsets` is set when a rank binds
  /// it (`boundRank`).
  std::vector<SbpEntry> pieceSbp;
  /// The block `pieceSbp` cuts (the archive's tensor, or a block of it at
  /// `blockOffsets`).
  std::vector<int64_t> sbpOf, blockOffsets;
  int64_t boundRank = -1;
  /// Filled when a rank binds the executable: the offsets of its piece of a
  /// `pieceOf` tensor under `pieceSbp`, less those under `pieceWithin`.
  bool deviceOffsets = false;
  std::vector<SbpEntry> pieceWithin;
  /// The mesh devices whose programs read it (empty: every device).
  std::vector<int64_t> ranks;
  /// The archive's tensor, until the parameter is bound (a parameter of
  /// some devices only is bound by the Session of one of them).
  const SafeTensor *source = nullptr;
  /// Parameters joined along `concatAxis` (host.parameter_concat): the
  /// indices of earlier parameter constants, assembled once their bytes
  /// are bound.
  std::vector<uint32_t> concatParts;
  int64_t concatAxis = 0;
  /// A parameter only joins read: dropped (data null) once they are
  /// assembled.
  bool joinedOnly = false;
};

} // namespace detail

namespace detail {
/// Points `constant` (a parameter whose archive tensor is `source`) at its
/// bytes: in place in the mapped archive, or a copy made once (a piece, a
/// conversion to bf16, or a tensor the archive did not align).
Status bindParameter(Executable::Impl &impl, Constant &constant);
/// Assembles the joined parameters whose parts are bound: those every
/// device reads (`rank` < 0, at load) or device `rank`'s (bindRank).
Status assembleParameterConcats(Executable::Impl &impl, int64_t rank);
} // namespace detail

struct Executable::Impl {
  /// The file, 64-byte aligned; constants usually point into it.
  AlignedBuffer file;
  /// Copies of constants that were not 64-byte aligned in the file.
  std::vector<AlignedBuffer> constantCopies;
  std::vector<detail::Constant> constants;
  ExecutableTarget target = ExecutableTarget::Cpu;
  /// CPU: the loaded ELF library and the CPU it was compiled for.
  KernelLibrary library;
  std::string cpuArch;
  /// CUDA: the PTX and cubin libraries, and each kernel's launches (the
  /// device loads them).
  std::vector<detail::GpuLibrary> gpuLibraries;
  std::vector<detail::GpuKernel> gpuKernels;
  /// The device mesh of mesh functions (empty: one device).
  std::vector<int64_t> mesh;
  /// The mapped parameter archive parameters point into.
  std::unique_ptr<SafeTensorsFile> parameters;
  /// Serializes binding the parameters of a device (Executable::bindRank).
  std::mutex bindMutex;
  /// CPU: each kernel's entry point.
  std::vector<detail::KernelFn> kernels;
  /// Each kernel's symbol, for profiles and messages.
  std::vector<std::string> kernelNames;
  /// Each kernel's outputs (its last `numOutputs` bindings), the bindings'
  /// element types when the executable gives them (else empty), and what it
  /// computes, for check-numerics messages.
  struct KernelMeta {
    uint32_t numOutputs = 0;
    std::vector<DType> bindingDtypes;
    std::string description;
  };
  std::vector<KernelMeta> kernelMeta;
  std::vector<FunctionSignature> signatures;
  std::vector<detail::Function> functions;
};

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_EXECUTABLEIMPL_H
