//===- Executable.cpp - Host schedule to a .fbin executable ---------------===//
//
// Part of the Flow project.
//
// Each host schedule (flow-build-host-schedule, flow-plan-memory) becomes a
// function of the executable, op by op: its arguments are the caller's
// inputs and outputs, constants and parameters live in the executable,
// slices in the function's arena, views share their source's bytes, and
// each command becomes one command of the list. This file only serializes.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Host/IR/HostOps.h"
#include "flow/Target/Executable.h"

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowShapes.h"
#include "flow/Target/Target.h"
#include "flow/runtime/Checksum.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/executable_generated.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include <set>

#include <type_traits>

using namespace mlir;
using namespace mlir::flow;
namespace fb = ::flow::fbs;

/// The executable format version this writer produces: the one the runtime
/// reads.
static constexpr uint32_t kFormatVersion = ::flow::runtime::kExecutableVersion;

std::optional<uint8_t> mlir::flow::executableDType(Type t) {
  auto pick = [](fb::DType d) { return std::optional<uint8_t>(uint8_t(d)); };
  if (t.isF32())
    return pick(fb::DType::F32);
  if (t.isF16())
    return pick(fb::DType::F16);
  if (t.isBF16())
    return pick(fb::DType::BF16);
  if (t.isF64())
    return pick(fb::DType::F64);
  if (t.isInteger(1))
    return pick(fb::DType::I1);
  auto integer = dyn_cast<IntegerType>(t);
  if (!integer)
    return std::nullopt;
  static const fb::DType kSigned[] = {fb::DType::I8, fb::DType::I16,
                                      fb::DType::I32, fb::DType::I64};
  static const fb::DType kUnsigned[] = {fb::DType::U8, fb::DType::U16,
                                        fb::DType::U32, fb::DType::U64};
  unsigned width = integer.getWidth();
  if (width != 8 && width != 16 && width != 32 && width != 64)
    return std::nullopt;
  unsigned index = llvm::Log2_32(width) - 3;
  return pick(integer.isUnsigned() ? kUnsigned[index] : kSigned[index]);
}

static FailureOr<fb::DType> dtypeOf(Type t) {
  if (std::optional<uint8_t> d = executableDType(t))
    return static_cast<fb::DType>(*d);
  return failure();
}

/// True if \p value fits the executable's 32-bit (uint) fields.
static bool fitsU32(uint64_t value) { return value <= UINT32_MAX; }

/// True if the tensor's byte size is representable (at most 2^48 bytes).
static bool fitsInMemory(RankedTensorType type) {
  int64_t bytes = 1;
  for (int64_t d : type.getShape()) {
    if (d < 0 || (d > 0 && bytes > (int64_t(1) << 48) / d))
      return false;
    bytes *= d;
  }
  return bytes <= (int64_t(1) << 45); // times at most 8 bytes per element
}

/// Row-major little-endian bytes of a constant, one byte per i1.
static FailureOr<std::vector<uint8_t>> constantBytes(HostConstantOp op) {
  auto type = cast<ShapedType>(op.getValue().getType());
  std::vector<uint8_t> bytes;
  bytes.reserve(storageBytes(type));
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    if (type.getElementType().isInteger(1)) {
      for (bool b : dense.getValues<bool>())
        bytes.push_back(b ? 1 : 0);
      return bytes;
    }
    ArrayRef<char> raw = dense.getRawData();
    int64_t count = dense.isSplat() ? type.getNumElements() : 1;
    for (int64_t i = 0; i < count; ++i)
      bytes.insert(bytes.end(), raw.begin(), raw.end());
    return bytes;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(op.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return op.emitError("constant refers to a resource with no data");
    ArrayRef<char> raw = blob->getData();
    if ((int64_t)raw.size() != storageBytes(type))
      return op.emitError("constant resource holds ")
             << raw.size() << " bytes, expected " << storageBytes(type);
    bytes.assign(raw.begin(), raw.end());
    return bytes;
  }
  return op.emitError("unsupported constant attribute kind");
}

namespace {
/// One constant of the executable: inline bytes, or a parameter of the
/// archive (by name, with its type).
struct ConstantEntry {
  std::vector<uint8_t> data;
  std::string parameter;
  RankedTensorType type;
  /// A parameter's piece (both empty: the whole tensor), or with `pieceSbp`
  /// the running device's piece of a tensor of shape `pieceOf`.
  std::vector<int64_t> pieceOffsets, pieceOf;
  std::vector<SbpDim> pieceSbp;
  /// With both offsets and an SBP: the shape of the block the SBP cuts.
  std::vector<int64_t> pieceSbpOf;
  /// Device offsets (host.piece_offsets): filled by the runtime from
  /// `pieceSbp`, `pieceWithin` and `pieceOf`; no data.
  bool deviceOffsets = false;
  std::vector<SbpDim> pieceWithin;
  /// The mesh devices whose programs read it; `everyRank` when a program
  /// of every device (or of no mesh) does.
  std::set<int64_t> ranks;
  bool everyRank = false;
  /// Parameters joined at bind (host.parameter_concat): the indices of
  /// the part entries and the axis.
  std::vector<uint32_t> concatParts;
  int64_t concatAxis = 0;
  /// Whether a command reads it: a parameter only joins read may be
  /// dropped once joined (Constant.joined_only).
  bool readByCommand = false;
};

/// The executable's constants; parameters are shared by every use.
struct ConstantTable {
  std::vector<ConstantEntry> entries;
  llvm::StringMap<unsigned> parameterIndex;
};

/// The extent of a command's rows that vary per call (`flow.rows`), or
/// empty.
static std::string rowsOf(Operation *op) {
  auto rows = op->getAttrOfType<StringAttr>(FlowDialect::getRowsAttrName());
  return rows ? rows.str() : std::string();
}

/// Serializes one host schedule: its buffers, then its commands.
class FunctionWriter {
public:
  FunctionWriter(flatbuffers::FlatBufferBuilder &fbb,
                 const llvm::StringMap<KernelInfo> &kernels,
                 const llvm::StringMap<unsigned> &kernelIndex,
                 ConstantTable &constants, ExecutableStats &stats)
      : fbb(fbb), kernels(kernels), kernelIndex(kernelIndex),
        constants(constants), stats(stats) {}

  FailureOr<flatbuffers::Offset<fb::Function>> write(func::FuncOp func);

private:
  /// Where a buffer of the schedule lives.
  struct Slot {
    fb::Space space;
    uint32_t index = 0;
    int64_t offset = 0;
  };

  fb::BufferRef ref(Value v) {
    const Slot &s = slots.lookup(bufferRoot(v));
    if (s.space == fb::Space::Constant)
      constants.entries[s.index].readByCommand = true;
    return fb::BufferRef(s.space, s.index, s.offset,
                         storageBytes(cast<ShapedType>(v.getType())));
  }
  LogicalResult buffer(Operation &op, int64_t arenaBytes);
  FailureOr<RankedTensorType> newConstantType(Operation &op, StringRef what);
  FailureOr<flatbuffers::Offset<void>> dispatch(HostDispatchOp op);
  flatbuffers::Offset<void> gemm(HostGemmOp op);
  flatbuffers::Offset<void> attention(HostAttentionOp op);
  flatbuffers::Offset<void> conv(HostConvOp op);
  /// HostMaxPoolOp or HostAvgPoolOp.
  template <typename PoolOp> flatbuffers::Offset<void> pool(PoolOp op);
  FailureOr<flatbuffers::Offset<void>> collective(HostCollectiveOp op);
  void recordPlan(func::FuncOp func, HostArenaOp arena);

  flatbuffers::FlatBufferBuilder &fbb;
  const llvm::StringMap<KernelInfo> &kernels;
  const llvm::StringMap<unsigned> &kernelIndex;
  ConstantTable &constants;
  ExecutableStats &stats;
  llvm::DenseMap<Value, Slot> slots;
};
} // namespace

/// The function's arena plan, for the report and the plot.
void FunctionWriter::recordPlan(func::FuncOp func, HostArenaOp arena) {
  ExecutableStats::FunctionPlan plan;
  plan.function = func.getSymName().str();
  ArenaPlanAttr attr = arena.getPlan();
  plan.result.arenaBytes = attr.getBytes();
  plan.result.lowerBound = attr.getLowerBound();
  plan.result.unplannedBytes = attr.getUnplanned();
  plan.result.heuristic = attr.getHeuristic().str();
  for (Operation *user : arena->getUsers()) {
    auto slice = dyn_cast<HostSliceOp>(user);
    if (!slice)
      continue;
    PlannedBuffer b;
    b.size = storageBytes(slice.getType());
    b.begin = slice.getFirst();
    b.end = slice.getLast();
    b.offset = slice.getOffset();
    b.reuses = slice.getInPlace() ? 0 : -1;
    // Named after the first command writing it.
    Operation *writer = nullptr;
    for (Operation *op = slice->getNextNode(); op && !writer;
         op = op->getNextNode())
      if (isHostCommand(op) &&
          llvm::any_of(op->getOperands(), [&](Value v) {
            return bufferRoot(v) == slice.getResult();
          }))
        writer = op;
    b.name = bufferName(writer ? writer : slice.getOperation());
    stats.transientBytes += b.size;
    stats.numInPlace += slice.getInPlace();
    plan.buffers.push_back(std::move(b));
  }
  llvm::sort(plan.buffers, [](const PlannedBuffer &x, const PlannedBuffer &y) {
    return std::tie(x.begin, x.end, x.offset) <
           std::tie(y.begin, y.end, y.offset);
  });
  if (plan.result.arenaBytes >= stats.arenaBytes)
    stats.arenaLowerBound = plan.result.lowerBound;
  stats.arenaBytes = std::max(stats.arenaBytes, plan.result.arenaBytes);
  stats.plans.push_back(std::move(plan));
}

/// The tensor type of the constant `op` (a parameter or a join of them)
/// adds to the table, or an error naming `what` when the executable cannot
/// hold it.
FailureOr<RankedTensorType> FunctionWriter::newConstantType(Operation &op,
                                                            StringRef what) {
  auto buffer = cast<MemRefType>(op.getResult(0).getType());
  auto type = RankedTensorType::get(buffer.getShape(), buffer.getElementType());
  if (!fitsInMemory(type) || failed(dtypeOf(type.getElementType())))
    return op.emitError() << what << " type " << type
                          << " cannot be stored in an executable";
  if (!fitsU32(constants.entries.size()))
    return op.emitError("an executable holds at most 2^32-1 constants");
  return type;
}

/// Records where the buffer `op` defines lives.
LogicalResult FunctionWriter::buffer(Operation &op, int64_t arenaBytes) {
  if (auto constant = dyn_cast<HostConstantOp>(op)) {
    FailureOr<std::vector<uint8_t>> bytes = constantBytes(constant);
    if (failed(bytes))
      return failure();
    if (!fitsU32(constants.entries.size()))
      return constant.emitError("an executable holds at most 2^32-1 "
                                "constants");
    stats.constantBytes += bytes->size();
    slots[constant.getResult()] = {fb::Space::Constant,
                                   (uint32_t)constants.entries.size(), 0};
    constants.entries.push_back({std::move(*bytes), "", {}});
    return success();
  }
  if (auto parameter = dyn_cast<HostParameterOp>(op)) {
    FailureOr<RankedTensorType> checked = newConstantType(op, "parameter");
    if (failed(checked))
      return failure();
    RankedTensorType type = *checked;
    // One entry per name, element type and piece: a bf16 use of an f32
    // weight (mixed precision) is converted by the runtime at load.
    std::string key = parameter.getName().str() + "@";
    llvm::raw_string_ostream os(key);
    os << type.getElementType();
    if (auto offsets = parameter.getPieceOffsets()) {
      os << "@piece";
      for (int64_t o : *offsets)
        os << "," << o;
      os << "@" << type;
    }
    // Pieces by SBP of uneven splits differ in shape between devices; the
    // block an SBP cuts is part of the piece too.
    if (SbpAttr sbp = parameter.getPieceSbpAttr()) {
      os << "@" << sbp << "@" << type << "@of";
      ArrayRef<int64_t> block = *parameter.getPieceSbpOf();
      for (int64_t n : block)
        os << "," << n;
    }
    auto [it, inserted] =
        constants.parameterIndex.try_emplace(key, constants.entries.size());
    if (inserted) {
      ConstantEntry entry{{}, parameter.getName().str(), type, {}, {}, {}};
      if (auto offsets = parameter.getPieceOffsets()) {
        entry.pieceOffsets = offsets->vec();
        entry.pieceOf = parameter.getPieceOf()->vec();
      }
      if (SbpAttr sbp = parameter.getPieceSbpAttr()) {
        entry.pieceSbp.assign(sbp.getDims().begin(), sbp.getDims().end());
        // The SBP cuts the archive's tensor, or the block its offsets
        // start.
        if (entry.pieceOffsets.empty())
          entry.pieceOf = parameter.getPieceSbpOf()->vec();
        else
          entry.pieceSbpOf = parameter.getPieceSbpOf()->vec();
      }
      constants.entries.push_back(std::move(entry));
      stats.parameterBytes += storageBytes(type);
    } else if (constants.entries[it->second].type != type) {
      return parameter.emitError("parameter '")
             << parameter.getName() << "' is used with type " << type
             << " here and " << constants.entries[it->second].type
             << " elsewhere";
    }
    ConstantEntry &entry = constants.entries[it->second];
    auto ranks = parameter->getParentOfType<func::FuncOp>()
                     ->getAttrOfType<DenseI64ArrayAttr>(
                         FlowDialect::getRanksAttrName());
    if (ranks)
      entry.ranks.insert(ranks.asArrayRef().begin(), ranks.asArrayRef().end());
    else
      entry.everyRank = true;
    slots[parameter.getResult()] = {fb::Space::Constant, it->second, 0};
    return success();
  }
  if (auto concat = dyn_cast<HostParameterConcatOp>(op)) {
    FailureOr<RankedTensorType> checked =
        newConstantType(op, "joined parameter");
    if (failed(checked))
      return failure();
    RankedTensorType type = *checked;
    std::vector<uint32_t> parts;
    std::string key = "concat@" + std::to_string(concat.getAxis());
    for (Value part : concat.getParts()) {
      auto it = slots.find(part);
      if (it == slots.end() || it->second.space != fb::Space::Constant)
        return concat.emitError("joins a buffer that is not a parameter");
      parts.push_back(it->second.index);
      key += "," + std::to_string(it->second.index);
    }
    auto [it, inserted] =
        constants.parameterIndex.try_emplace(key, constants.entries.size());
    if (inserted) {
      ConstantEntry entry;
      entry.type = type;
      entry.concatParts = std::move(parts);
      entry.concatAxis = concat.getAxis();
      constants.entries.push_back(std::move(entry));
      stats.parameterBytes += storageBytes(type);
    }
    // Read by the devices that read its parts.
    ConstantEntry &entry = constants.entries[it->second];
    for (uint32_t part : entry.concatParts) {
      const ConstantEntry &p = constants.entries[part];
      entry.everyRank |= p.everyRank;
      entry.ranks.insert(p.ranks.begin(), p.ranks.end());
    }
    slots[concat.getResult()] = {fb::Space::Constant, it->second, 0};
    return success();
  }
  if (auto offsets = dyn_cast<HostPieceOffsetsOp>(op)) {
    if (!fitsU32(constants.entries.size()))
      return offsets.emitError("an executable holds at most 2^32-1 "
                               "constants");
    MemRefType buffer = offsets.getType();
    ConstantEntry entry;
    entry.type =
        RankedTensorType::get(buffer.getShape(), buffer.getElementType());
    entry.deviceOffsets = true;
    entry.pieceOf = offsets.getOf().vec();
    entry.pieceSbp.assign(offsets.getSbp().getDims().begin(),
                          offsets.getSbp().getDims().end());
    if (SbpAttr within = offsets.getWithinAttr())
      entry.pieceWithin.assign(within.getDims().begin(),
                               within.getDims().end());
    auto ranks = op.getParentOfType<func::FuncOp>()
                     ->getAttrOfType<DenseI64ArrayAttr>(
                         FlowDialect::getRanksAttrName());
    if (!ranks)
      return offsets.emitError("a device's offsets are read only by the "
                               "device programs of a mesh function");
    entry.ranks.insert(ranks.asArrayRef().begin(), ranks.asArrayRef().end());
    slots[offsets.getResult()] = {fb::Space::Constant,
                                  (uint32_t)constants.entries.size(), 0};
    constants.entries.push_back(std::move(entry));
    return success();
  }
  if (auto sizes = dyn_cast<HostSymbolsOp>(op)) {
    slots[sizes.getResult()] = {fb::Space::Symbols, 0, 0};
    return success();
  }
  if (auto slice = dyn_cast<HostSliceOp>(op)) {
    if (slice.getArena().getType().getDimSize(0) != arenaBytes)
      return slice.emitError("slices an arena other than its function's");
    slots[slice.getResult()] = {fb::Space::Arena, 0, slice.getOffset()};
    return success();
  }
  if (isa<HostAllocOp>(op))
    return op.emitError("transient buffer has no place in the arena: run "
                        "flow-plan-memory before writing the executable");
  return op.emitError("the executable cannot hold '")
         << op.getName() << "' in a host schedule";
}

FailureOr<flatbuffers::Offset<void>>
FunctionWriter::dispatch(HostDispatchOp op) {
  auto info = kernels.find(op.getKernel());
  if (info == kernels.end())
    return op.emitError("dispatch of '")
           << op.getKernel() << "', which is not a compiled kernel";
  std::vector<fb::BufferRef> bindings;
  uint64_t work = 0;
  for (Value v : op->getOperands()) {
    bindings.push_back(ref(v));
    work += cast<MemRefType>(v.getType()).getNumElements();
  }
  if (bindings.size() != info->second.numBindings)
    return op.emitError("kernel '")
           << op.getKernel() << "' takes " << info->second.numBindings
           << " buffers but is dispatched with " << bindings.size();
  for (auto [i, b] : llvm::enumerate(bindings))
    if (b.size() != info->second.bindingSizes[i])
      return op.emitError("kernel '")
             << op.getKernel() << "' binding " << i << " holds "
             << info->second.bindingSizes[i] << " bytes, not " << b.size();
  if (op.getGemmEpilogue())
    ++stats.numGemmEpilogues;
  std::string rows = rowsOf(op);
  return fb::CreateDispatchDirect(fbb, kernelIndex.lookup(op.getKernel()),
                                  info->second.maxWorkgroups, &bindings, work,
                                  op.getGemmEpilogue(),
                                  rows.empty() ? nullptr : rows.c_str())
      .Union();
}

flatbuffers::Offset<void> FunctionWriter::gemm(HostGemmOp op) {
  MemRefType a = op.getLhs().getType(), b = op.getRhs().getType(),
             c = op.getOut().getType();
  int64_t batch = c.getRank() - 2;
  std::vector<int64_t> batchShape(c.getShape().begin(), c.getShape().end() - 2);
  // Element strides of each operand's matrices over the result's batch
  // dimensions (0 where the operand broadcasts).
  auto strides = [&](MemRefType t) {
    std::vector<int64_t> out(batch, 0);
    int64_t offset = batch - (t.getRank() - 2);
    int64_t stride =
        t.getDimSize(t.getRank() - 1) * t.getDimSize(t.getRank() - 2);
    for (int64_t d = t.getRank() - 3; d >= 0; --d) {
      if (!(t.getDimSize(d) == 1 && c.getDimSize(offset + d) != 1))
        out[offset + d] = stride;
      stride *= t.getDimSize(d);
    }
    return out;
  };
  std::vector<int64_t> aStrides = strides(a), bStrides = strides(b);
  fb::BufferRef ra = ref(op.getLhs()), rb = ref(op.getRhs()),
                rc = ref(op.getOut());
  fb::DType abType = *dtypeOf(a.getElementType()),
            cType = *dtypeOf(c.getElementType());
  fb::BufferRef bias = op.getBias() ? ref(op.getBias()) : fb::BufferRef();
  fb::GemmActivation activation = fb::GemmActivation::None;
  switch (op.getActivation()) {
  case GemmActivation::none:
    break;
  case GemmActivation::relu:
    activation = fb::GemmActivation::Relu;
    break;
  case GemmActivation::gelu_tanh:
    activation = fb::GemmActivation::GeluTanh;
    break;
  }
  auto rows = op->getAttrOfType<StringAttr>(FlowDialect::getRowsAttrName());
  return fb::CreateGemmDirect(
             fbb, op.getM(), op.getN(), op.getK(), op.getTransposeLhs(),
             op.getTransposeRhs(), &batchShape, &aStrides, &bStrides, &ra, &rb,
             &rc, abType, op.getBias() ? &bias : nullptr, activation, cType,
             op.getAllowTf32(), rows ? rows.str().c_str() : nullptr)
      .Union();
}

flatbuffers::Offset<void> FunctionWriter::conv(HostConvOp op) {
  auto shape = [](Value v) {
    ArrayRef<int64_t> s = cast<MemRefType>(v.getType()).getShape();
    return std::vector<int64_t>(s.begin(), s.end());
  };
  auto vec = [](ArrayRef<int64_t> a) {
    return std::vector<int64_t>(a.begin(), a.end());
  };
  std::vector<int64_t> in = shape(op.getInput()), filter = shape(op.getFilter()),
                       out = shape(op.getOut()), strides = vec(op.getStrides()),
                       padding = vec(op.getPadding()),
                       dilations = vec(op.getDilations());
  fb::BufferRef input = ref(op.getInput()), weights = ref(op.getFilter()),
                output = ref(op.getOut()), bias, residual;
  if (op.getBias())
    bias = ref(op.getBias());
  if (op.getResidual())
    residual = ref(op.getResidual());
  // F32 or BF16, or F16 or BF16 throughout (a narrow convolution: its
  // filter's type is the element type): the verifier allows no other.
  fb::DType element = *dtypeOf(op.getFilter().getType().getElementType());
  auto dtype = [&](Value v) {
    return v ? *dtypeOf(cast<MemRefType>(v.getType()).getElementType())
             : element;
  };
  std::string rows = rowsOf(op);
  return fb::CreateConvDirect(fbb, &in, &filter, &out, &strides, &padding,
                              &dilations, op.getGroups(), op.getRelu(), &input,
                              &weights, op.getBias() ? &bias : nullptr,
                              op.getResidual() ? &residual : nullptr, &output,
                              op.getBlockedInput(), op.getBlockedResidual(),
                              op.getBlockedOutput(), op.getBf16(),
                              dtype(op.getInput()), dtype(op.getResidual()),
                              dtype(op.getOut()), element,
                              rows.empty() ? nullptr : rows.c_str())
      .Union();
}

flatbuffers::Offset<void> FunctionWriter::attention(HostAttentionOp op) {
  auto shape = [](Value v) {
    return cast<MemRefType>(v.getType()).getShape().vec();
  };
  std::vector<int64_t> q = shape(op.getQuery()), k = shape(op.getKey()),
                       v = shape(op.getValue()), mask;
  fb::BufferRef query = ref(op.getQuery()), key = ref(op.getKey()),
                value = ref(op.getValue()), output = ref(op.getOut()), m;
  // F32, F16 or BF16, and I1 or that type for the mask: the verifier
  // allows no other.
  fb::DType dtype = *dtypeOf(op.getQuery().getType().getElementType());
  fb::DType maskType = fb::DType::I1;
  if (Value maskValue = op.getMask()) {
    mask = shape(maskValue);
    m = ref(maskValue);
    maskType = *dtypeOf(cast<MemRefType>(maskValue.getType()).getElementType());
  }
  std::string rows = rowsOf(op);
  return fb::CreateAttentionDirect(
             fbb, &q, &k, &v, op.getMask() ? &mask : nullptr, dtype, maskType,
             op.getScale().convertToDouble(), op.getCausal(), &query, &key,
             &value, op.getMask() ? &m : nullptr, &output,
             rows.empty() ? nullptr : rows.c_str())
      .Union();
}

template <typename PoolOp>
flatbuffers::Offset<void> FunctionWriter::pool(PoolOp op) {
  auto vec = [](ArrayRef<int64_t> a) {
    return std::vector<int64_t>(a.begin(), a.end());
  };
  MemRefType in = op.getInput().getType(), out = op.getOut().getType();
  std::vector<int64_t> inShape = vec(in.getShape()),
                       outShape = vec(out.getShape()),
                       kernel = vec(op.getKernel()),
                       strides = vec(op.getStrides()),
                       padding = vec(op.getPadding());
  fb::BufferRef input = ref(op.getInput()), output = ref(op.getOut());
  // F32 or BF16: the verifiers allow no other.
  fb::DType inType = *dtypeOf(in.getElementType()),
            outType = *dtypeOf(out.getElementType());
  std::string rows = rowsOf(op);
  const char *rowsText = rows.empty() ? nullptr : rows.c_str();
  if constexpr (std::is_same_v<PoolOp, HostAvgPoolOp>) {
    return fb::CreateAvgPoolDirect(
               fbb, &inShape, &outShape, &kernel, &strides, &padding,
               op.getCountIncludePad(), &input, &output, op.getBlockedInput(),
               op.getBlockedOutput(), inType, outType, rowsText)
        .Union();
  } else {
    std::vector<int64_t> dilations = vec(op.getDilations());
    return fb::CreateMaxPoolDirect(fbb, &inShape, &outShape, &kernel, &strides,
                                   &padding, &dilations, &input, &output,
                                   op.getBlockedInput(), op.getBlockedOutput(),
                                   inType, outType, rowsText)
        .Union();
  }
}

FailureOr<flatbuffers::Offset<void>>
FunctionWriter::collective(HostCollectiveOp op) {
  MemRefType inType = op.getInput().getType(), outType = op.getOutput().getType();
  FailureOr<fb::DType> dtype = dtypeOf(inType.getElementType());
  if (failed(dtype))
    return op.emitError("unsupported element type for a collective");
  static const fb::CollectiveKind kinds[] = {
      fb::CollectiveKind::AllReduce, fb::CollectiveKind::AllGather,
      fb::CollectiveKind::ReduceScatter, fb::CollectiveKind::AllToAll};
  fb::CollectiveKind kind = kinds[static_cast<int>(op.getKind())];
  fb::Reduction reduction = op.getReduction() == ReductionKind::max
                                ? fb::Reduction::Max
                                : fb::Reduction::Sum;
  std::vector<int64_t> meshAxes = op.getMeshAxes().vec();
  std::vector<int64_t> inShape = inType.getShape().vec();
  std::vector<int64_t> outShape = outType.getShape().vec();
  fb::BufferRef in = ref(op.getInput()), out = ref(op.getOutput());
  // What the device exchanges: the gathered or exchanged result, or the
  // tensor that is reduced.
  int64_t bytes = op.getKind() == CollectiveKind::reduce_scatter
                      ? storageBytes(inType)
                      : storageBytes(outType);
  stats.collectiveBytes += bytes;
  static const char *const names[] = {"all_reduce", "all_gather",
                                      "reduce_scatter", "all_to_all"};
  stats.collectives.push_back(
      {op->getParentOfType<func::FuncOp>().getSymName().str(),
       names[static_cast<int>(op.getKind())], meshAxes, bytes,
       op.getAsync()});
  stats.numAsyncCollectives += op.getAsync();
  return fb::CreateCollectiveDirect(
             fbb, kind, reduction, &meshAxes, *dtype, &inShape, &outShape,
             op.getDim().value_or(0), op.getSplitDim().value_or(0),
             op.getConcatDim().value_or(0), &in, &out, op.getAsync())
      .Union();
}

FailureOr<flatbuffers::Offset<fb::Function>>
FunctionWriter::write(func::FuncOp func) {
  auto numOutputsAttr =
      func->getAttrOfType<IntegerAttr>(FlowDialect::getHostOutputsAttrName());
  if (!numOutputsAttr || !func.getBody().hasOneBlock())
    return func.emitError("function is not a host schedule: run "
                          "flow-build-host-schedule and flow-plan-memory "
                          "before writing the executable");
  Block &body = func.getBody().front();
  int64_t numOutputs = numOutputsAttr.getInt();
  int64_t numInputs = func.getNumArguments() - numOutputs;
  auto signature = [&](TypeRange types, unsigned first)
      -> FailureOr<std::vector<flatbuffers::Offset<fb::TensorType>>> {
    std::vector<flatbuffers::Offset<fb::TensorType>> out;
    for (auto [i, t] : llvm::enumerate(types)) {
      auto buffer = dyn_cast<MemRefType>(t);
      FailureOr<fb::DType> dtype = failure();
      if (buffer && buffer.hasStaticShape() &&
          fitsInMemory(RankedTensorType::get(buffer.getShape(),
                                             buffer.getElementType())))
        dtype = dtypeOf(buffer.getElementType());
      if (failed(dtype)) {
        func.emitError("function signature type ")
            << t
            << " is not supported: Flow executables take tensors of static "
               "shape (at most 2^48 bytes) of a Flow element type";
        return failure();
      }
      std::vector<int64_t> shape = buffer.getShape().vec();
      // Rows that vary from call to call: each dimension's extent.
      std::vector<std::string> texts;
      if (auto symbolic = func.getArgAttrOfType<TypeAttr>(
              first + i, FlowDialect::getSymbolicTypeAttrName())) {
        FailureOr<Extents> extents = getExtents(symbolic.getValue());
        if (failed(extents))
          return func.emitError("argument #")
                 << first + i << " has a symbolic type without extents";
        for (const Extent &e : *extents)
          texts.push_back(e.str());
      }
      auto shapeVector = fbb.CreateVector(shape);
      auto extentVector = texts.empty()
                              ? flatbuffers::Offset<flatbuffers::Vector<
                                    flatbuffers::Offset<flatbuffers::String>>>()
                              : fbb.CreateVectorOfStrings(texts);
      out.push_back(
          fb::CreateTensorType(fbb, *dtype, shapeVector, extentVector));
    }
    return out;
  };
  TypeRange argTypes = func.getArgumentTypes();
  auto inputs = signature(argTypes.take_front(numInputs), 0);
  auto outputs = signature(argTypes.drop_front(numInputs), numInputs);
  if (failed(inputs) || failed(outputs))
    return failure();
  if (!fitsU32(numInputs) || !fitsU32(numOutputs))
    return func.emitError("a function of the executable takes at most 2^32-1 "
                          "inputs and outputs");
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    slots[arg] = (int64_t)i < numInputs
                     ? Slot{fb::Space::Input, (uint32_t)i, 0}
                     : Slot{fb::Space::Output, (uint32_t)(i - numInputs), 0};

  auto arenas = llvm::to_vector(body.getOps<HostArenaOp>());
  if (arenas.size() != 1)
    return func.emitError("host schedule has ")
           << arenas.size()
           << " arenas, not one: run flow-plan-memory before writing the "
              "executable";
  int64_t arenaBytes = arenas.front().getPlan().getBytes();
  recordPlan(func, arenas.front());

  std::vector<flatbuffers::Offset<void>> commands;
  std::vector<fb::Command> commandTypes;
  // Each collective's position among the commands, for its wait.
  llvm::DenseMap<Operation *, uint32_t> collectiveAt;
  for (Operation &op : body) {
    if (isa<HostArenaOp, HostViewOp, func::ReturnOp>(op))
      continue;
    if (auto d = dyn_cast<HostDispatchOp>(op)) {
      auto c = dispatch(d);
      if (failed(c))
        return failure();
      commands.push_back(*c);
      commandTypes.push_back(fb::Command::Dispatch);
      ++stats.numDispatches;
    } else if (auto g = dyn_cast<HostGemmOp>(op)) {
      commands.push_back(gemm(g));
      commandTypes.push_back(fb::Command::Gemm);
      ++stats.numGemms;
    } else if (auto c = dyn_cast<HostConvOp>(op)) {
      commands.push_back(conv(c));
      commandTypes.push_back(fb::Command::Conv);
      ++stats.numConvs;
    } else if (auto a = dyn_cast<HostAttentionOp>(op)) {
      commands.push_back(attention(a));
      commandTypes.push_back(fb::Command::Attention);
      ++stats.numAttentions;
    } else if (auto p = dyn_cast<HostMaxPoolOp>(op)) {
      commands.push_back(pool(p));
      commandTypes.push_back(fb::Command::MaxPool);
      ++stats.numPools;
    } else if (auto p = dyn_cast<HostAvgPoolOp>(op)) {
      commands.push_back(pool(p));
      commandTypes.push_back(fb::Command::AvgPool);
      ++stats.numPools;
    } else if (auto copy = dyn_cast<HostCopyOp>(op)) {
      fb::BufferRef src = ref(copy.getSource()), dst = ref(copy.getTarget());
      auto rows =
          copy->getAttrOfType<StringAttr>(FlowDialect::getRowsAttrName());
      commands.push_back(
          fb::CreateCopyDirect(fbb, &src, &dst,
                               rows ? rows.str().c_str() : nullptr)
              .Union());
      commandTypes.push_back(fb::Command::Copy);
      ++stats.numCopies;
    } else if (auto c = dyn_cast<HostCollectiveOp>(op)) {
      if (!func->hasAttr(FlowDialect::getRanksAttrName()))
        return op.emitError("collectives run in the device programs of mesh "
                            "functions (give the function a 'flow.mesh')");
      auto command = collective(c);
      if (failed(command))
        return failure();
      collectiveAt[c] = static_cast<uint32_t>(commands.size());
      commands.push_back(*command);
      commandTypes.push_back(fb::Command::Collective);
      ++stats.numCollectives;
    } else if (auto wait = dyn_cast<HostWaitOp>(op)) {
      auto at = collectiveAt.find(wait.getCollective());
      if (at == collectiveAt.end())
        return op.emitError("waits for no asynchronous collective");
      commands.push_back(fb::CreateWait(fbb, at->second).Union());
      commandTypes.push_back(fb::Command::Wait);
    } else if (failed(buffer(op, arenaBytes))) {
      return failure();
    }
  }
  // A device program of a mesh function: who runs it, and the global
  // signature.
  std::vector<int64_t> ranks;
  std::string globalName;
  std::vector<flatbuffers::Offset<fb::Placement>> globalInputs, globalOutputs;
  if (auto r = func->getAttrOfType<DenseI64ArrayAttr>(
          FlowDialect::getRanksAttrName())) {
    ranks = r.asArrayRef().vec();
    if (auto name = func->getAttrOfType<StringAttr>(
            FlowDialect::getPartitionOfAttrName()))
      globalName = name.str();
    auto place = [&](StringRef attrName,
                     std::vector<flatbuffers::Offset<fb::Placement>> &out) {
      auto list = func->getAttrOfType<ArrayAttr>(attrName);
      if (!list)
        return;
      for (Attribute entry : list) {
        auto pair = cast<ArrayAttr>(entry);
        auto type = cast<RankedTensorType>(cast<TypeAttr>(pair[0]).getValue());
        std::vector<int64_t> shape = type.getShape().vec();
        auto tensorType = fb::CreateTensorTypeDirect(
            fbb, *dtypeOf(type.getElementType()), &shape);
        std::vector<fb::SbpEntry> sbp;
        for (SbpDim d : cast<SbpAttr>(pair[1]).getDims())
          sbp.emplace_back(static_cast<fb::SbpKind>(d.kind), d.dim);
        out.push_back(fb::CreatePlacementDirect(fbb, tensorType, &sbp));
      }
    };
    place(FlowDialect::getGlobalInputsAttrName(), globalInputs);
    place(FlowDialect::getGlobalOutputsAttrName(), globalOutputs);
  }
  // The state table: each state input, and the output written into it in
  // place (flow-tie-state).
  std::vector<flatbuffers::Offset<fb::State>> state;
  for (int64_t i = 0; i < numInputs; ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(
        i, FlowDialect::getStateAttrName());
    if (!name)
      continue;
    int64_t output = -1;
    for (int64_t j = 0; j < numOutputs; ++j)
      if (auto tied = func.getArgAttrOfType<IntegerAttr>(
              numInputs + j, FlowDialect::getTiedInputAttrName());
          tied && tied.getInt() == i)
        output = j;
    bool zeros = static_cast<bool>(
        func.getArgAttr(i, FlowDialect::getStateInitAttrName()));
    state.push_back(fb::CreateStateDirect(fbb, name.str().c_str(), i, output,
                                          zeros));
  }
  // The inputs a gather reads as indices (flow-check-index-inputs).
  std::vector<flatbuffers::Offset<fb::IndexCheck>> indexChecks;
  for (int64_t i = 0; i < numInputs; ++i) {
    auto check = func.getArgAttrOfType<DictionaryAttr>(
        i, FlowDialect::getIndexCheckAttrName());
    if (!check)
      continue;
    auto bound = check.getAs<IntegerAttr>("bound");
    auto ignore = check.getAs<IntegerAttr>("ignore");
    auto what = check.getAs<StringAttr>("what");
    auto lower = check.getAs<IntegerAttr>("lower");
    if (!bound)
      continue;
    indexChecks.push_back(fb::CreateIndexCheckDirect(
        fbb, i, bound.getInt(), ignore ? ignore.getInt() : 0,
        static_cast<bool>(ignore),
        what ? what.getValue().str().c_str() : nullptr,
        lower ? lower.getInt() : 0));
  }
  // The size symbols a call binds.
  std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
  if (auto dims =
          func->getAttrOfType<ArrayAttr>(FlowDialect::getDimsAttrName()))
    for (Attribute entry : dims) {
      auto dim = cast<DimAttr>(entry);
      symbols.push_back(fb::CreateSymbolDirect(fbb, dim.getName().str().c_str(),
                                               dim.getMin(), dim.getMax()));
    }
  return fb::CreateFunctionDirect(
      fbb, func.getSymName().str().c_str(), &*inputs, &*outputs, &commandTypes,
      &commands, arenaBytes, ranks.empty() ? nullptr : &ranks,
      globalName.empty() ? nullptr : globalName.c_str(),
      globalInputs.empty() && ranks.empty() ? nullptr : &globalInputs,
      globalOutputs.empty() && ranks.empty() ? nullptr : &globalOutputs,
      state.empty() ? nullptr : &state,
      indexChecks.empty() ? nullptr : &indexChecks,
      symbols.empty() ? nullptr : &symbols);
}

FailureOr<std::vector<uint8_t>> mlir::flow::writeExecutable(
    ModuleOp host, const llvm::StringMap<KernelInfo> &kernels,
    ArrayRef<KernelLibraryBlob> libraries, uint8_t target,
    ExecutableStats &stats) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  // Kernels, in a fixed order.
  std::vector<std::string> names;
  for (const auto &entry : kernels)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  llvm::StringMap<unsigned> kernelIndex;
  std::vector<flatbuffers::Offset<fb::Kernel>> kernelTables;
  if (!fitsU32(names.size()))
    return host.emitError("an executable holds at most 2^32-1 kernels");
  for (auto [i, name] : llvm::enumerate(names)) {
    kernelIndex[name] = i;
    const KernelInfo &info = kernels.find(name)->second;
    // Schema fields of 32 bits: refuse what they cannot hold, never
    // truncate it.
    if (info.maxWorkgroups < 1 || !fitsU32(info.maxWorkgroups) ||
        !fitsU32(info.numBindings) || !fitsU32(info.numOutputs))
      return host.emitError("kernel '")
             << name
             << "' does not fit the executable format: " << info.maxWorkgroups
             << " workgroups, " << info.numBindings
             << " buffers (each must be in [1, 2^32-1])";
    std::vector<fb::DType> dtypes;
    for (uint8_t d : info.bindingDtypes)
      dtypes.push_back(static_cast<fb::DType>(d));
    // A GPU kernel's launches; CPU kernels have none.
    std::vector<flatbuffers::Offset<fb::GpuLaunch>> launches;
    for (const KernelInfo::GpuLaunch &l : info.launches) {
      for (int64_t d : llvm::concat<const int64_t>(l.grid, l.block))
        if (d < 1 || !fitsU32(d))
          return host.emitError("kernel '")
                 << name << "' has a launch extent of " << d
                 << " (each must be in [1, 2^32-1])";
      if (l.sharedBytes < 0 || !fitsU32(l.sharedBytes) ||
          l.dynamicSharedBytes < 0 || !fitsU32(l.dynamicSharedBytes))
        return host.emitError("kernel '")
               << name << "' uses " << l.sharedBytes
               << " bytes of shared memory";
      fb::Launch shape(l.grid[0], l.grid[1], l.grid[2], l.block[0],
                       l.block[1], l.block[2], l.sharedBytes);
      launches.push_back(fb::CreateGpuLaunchDirect(
          fbb, l.symbol.c_str(), &shape, l.dynamicSharedBytes));
    }
    if (target == static_cast<uint8_t>(fb::Target::CUDA) && launches.empty())
      return host.emitError("kernel '") << name << "' has no GPU launch";
    kernelTables.push_back(fb::CreateKernelDirect(
        fbb, info.symbol.c_str(), info.numBindings, &info.bindingSizes,
        info.numOutputs, dtypes.empty() ? nullptr : &dtypes,
        info.description.empty() ? nullptr : info.description.c_str(),
        launches.empty() ? nullptr : &launches, info.scratchBytes,
        info.scratchOffsets.empty() ? nullptr : &info.scratchOffsets));
  }

  ConstantTable constants;
  std::vector<flatbuffers::Offset<fb::Function>> functions;
  for (func::FuncOp func : host.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    FunctionWriter writer(fbb, kernels, kernelIndex, constants, stats);
    auto fn = writer.write(func);
    if (failed(fn))
      return failure();
    functions.push_back(*fn);
  }
  if (functions.empty())
    return host.emitError("the module has no public function to compile");

  std::vector<flatbuffers::Offset<fb::Constant>> constantTables;
  auto sbpEntries = [](ArrayRef<SbpDim> dims) {
    std::vector<fb::SbpEntry> entries;
    for (SbpDim d : dims)
      entries.emplace_back(static_cast<fb::SbpKind>(d.kind), d.dim);
    return entries;
  };
  for (const ConstantEntry &entry : constants.entries) {
    if (entry.deviceOffsets) {
      std::vector<int64_t> shape = entry.type.getShape().vec();
      auto type = fb::CreateTensorTypeDirect(fbb, fb::DType::I64, &shape);
      std::vector<int64_t> ranks(entry.ranks.begin(), entry.ranks.end());
      std::vector<fb::SbpEntry> sbp = sbpEntries(entry.pieceSbp),
                                within = sbpEntries(entry.pieceWithin);
      constantTables.push_back(fb::CreateConstant(
          fbb, 0, 0, type, 0, fbb.CreateVector(entry.pieceOf),
          fbb.CreateVector(ranks), fbb.CreateVectorOfStructs(sbp),
          /*device_offsets=*/true,
          within.empty() ? 0 : fbb.CreateVectorOfStructs(within)));
      continue;
    }
    // A parameter's or a join's type, and the devices that read it (none
    // listed: every one).
    auto tensorType = [&] {
      std::vector<int64_t> shape = entry.type.getShape().vec();
      return fb::CreateTensorTypeDirect(
          fbb, *dtypeOf(entry.type.getElementType()), &shape);
    };
    auto readers = [&]() -> flatbuffers::Offset<flatbuffers::Vector<int64_t>> {
      if (entry.everyRank || entry.ranks.empty())
        return 0;
      return fbb.CreateVector(
          std::vector<int64_t>(entry.ranks.begin(), entry.ranks.end()));
    };
    if (!entry.concatParts.empty()) {
      auto type = tensorType();
      auto parts = fbb.CreateVector(entry.concatParts);
      auto ranks = readers();
      constantTables.push_back(fb::CreateConstant(fbb, 0, 0, type, 0, 0, ranks,
                                                  0, false, 0, 0, parts,
                                                  entry.concatAxis));
      continue;
    }
    if (!entry.parameter.empty()) {
      auto type = tensorType();
      auto ranks = readers();
      std::vector<fb::SbpEntry> sbp = sbpEntries(entry.pieceSbp);
      constantTables.push_back(fb::CreateConstant(
          fbb, 0, fbb.CreateString(entry.parameter), type,
          entry.pieceOffsets.empty() ? 0 : fbb.CreateVector(entry.pieceOffsets),
          entry.pieceOf.empty() ? 0 : fbb.CreateVector(entry.pieceOf), ranks,
          sbp.empty() ? 0 : fbb.CreateVectorOfStructs(sbp), false, 0,
          entry.pieceSbpOf.empty() ? 0 : fbb.CreateVector(entry.pieceSbpOf), 0,
          0, /*joined_only=*/!entry.readByCommand));
      continue;
    }
    const std::vector<uint8_t> &data = entry.data;
    fbb.ForceVectorAlignment(data.size(), 1, 64);
    constantTables.push_back(fb::CreateConstant(fbb, fbb.CreateVector(data)));
  }
  flatbuffers::Offset<flatbuffers::String> archive;
  if (auto path =
          host->getAttrOfType<StringAttr>(FlowDialect::getParametersAttrName()))
    archive = fbb.CreateString(path.getValue().str());
  else if (!constants.parameterIndex.empty())
    return host.emitError("the module uses flow.parameter but has no '")
           << FlowDialect::getParametersAttrName()
           << "' attribute naming its parameter archive";
  std::vector<flatbuffers::Offset<fb::KernelLibrary>> libraryTables;
  for (const KernelLibraryBlob &blob : libraries) {
    fbb.ForceVectorAlignment(blob.data.size(), 1, 64);
    auto data = fbb.CreateVector(blob.data.data(), blob.data.size());
    libraryTables.push_back(fb::CreateKernelLibrary(
        fbb, static_cast<fb::KernelFormat>(blob.format),
        fbb.CreateString(blob.arch), fbb.CreateVectorOfStrings(blob.features),
        data));
  }
  // The mesh of the device programs (they share one).
  std::vector<int64_t> meshShape;
  for (func::FuncOp func : host.getOps<func::FuncOp>()) {
    auto ref =
        func->getAttrOfType<FlatSymbolRefAttr>(FlowDialect::getMeshAttrName());
    if (!ref || !func->hasAttr(FlowDialect::getRanksAttrName()))
      continue;
    MeshOp mesh = lookupMesh(func, ref);
    if (!mesh)
      return func.emitError("'flow.mesh' names no mesh");
    std::vector<int64_t> shape = mesh.getShape().vec();
    if (!meshShape.empty() && shape != meshShape)
      return func.emitError("functions on different meshes cannot share an "
                            "executable");
    meshShape = shape;
  }
  auto root = fb::CreateExecutable(
      fbb, kFormatVersion, static_cast<fb::Target>(target),
      fbb.CreateVector(functions), fbb.CreateVector(kernelTables),
      fbb.CreateVector(constantTables), ::flow::runtime::kChecksumPlaceholder,
      archive, meshShape.empty() ? 0 : fbb.CreateVector(meshShape),
      libraryTables.empty() ? 0 : fbb.CreateVector(libraryTables));
  fb::FinishExecutableBuffer(fbb, root);
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(),
                             fbb.GetBufferPointer() + fbb.GetSize());
  if (!::flow::runtime::stampChecksum(bytes.data(), bytes.size()))
    return host.emitError("internal error: the executable has no checksum "
                          "field");
  return bytes;
}
