//===- Executable.cpp - Host schedule to a .fbin executable ---------------===//
//
// Part of the Flow project.
//
// Each public function becomes a command list. Every SSA value gets a
// buffer: inputs and outputs are the caller's, constants live in the
// executable, reshapes are views of their operand, and everything a command
// computes is where flow-plan-memory put it: an output, or a slice of the
// function's arena. This file only serializes.
//
//===----------------------------------------------------------------------===//

#include "flow/Target/Executable.h"
#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/runtime/Checksum.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/executable_generated.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::flow;
namespace fb = ::flow::fbs;

/// The executable format version this writer produces: the one the runtime
/// reads.
static constexpr uint32_t kFormatVersion = ::flow::runtime::kExecutableVersion;
/// Alignment of every arena slice.
static constexpr int64_t kAlignment = 64;

static FailureOr<fb::DType> dtypeOf(Type t) {
  if (t.isF32())
    return fb::DType::F32;
  if (t.isF16())
    return fb::DType::F16;
  if (t.isBF16())
    return fb::DType::BF16;
  if (t.isInteger(64))
    return fb::DType::I64;
  if (t.isInteger(32))
    return fb::DType::I32;
  if (t.isInteger(1))
    return fb::DType::I1;
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
static FailureOr<std::vector<uint8_t>> constantBytes(ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
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

/// Collectives run on the host schedule, between kernels and GEMMs.
static bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op);
}

namespace {
/// One constant of the executable: inline bytes, or a parameter of the
/// archive (by name, with its type).
struct ConstantEntry {
  std::vector<uint8_t> data;
  std::string parameter;
  RankedTensorType type;
};

/// The executable's constants; parameters are shared by every use.
struct ConstantTable {
  std::vector<ConstantEntry> entries;
  llvm::StringMap<unsigned> parameterIndex;
};

/// Writes one function: assigns buffers, plans the arena, emits commands.
class FunctionWriter {
public:
  FunctionWriter(flatbuffers::FlatBufferBuilder &fbb,
                 const llvm::StringMap<KernelInfo> &kernels,
                 const llvm::StringMap<unsigned> &kernelIndex,
                 ConstantTable &constants, ExecutableStats &stats)
      : fbb(fbb), kernels(kernels), kernelIndex(kernelIndex),
        constants(constants), stats(stats) {}

  FailureOr<flatbuffers::Offset<fb::Function>> write(func::FuncOp func);
  FailureOr<flatbuffers::Offset<void>> collective(Operation &op);

private:
  /// A value's buffer; arena offsets are filled in after planning.
  struct Slot {
    fb::Space space;
    uint32_t index = 0;
    int64_t offset = 0;
    int64_t size = 0;
  };

  fb::BufferRef ref(Value v) {
    Value root = bufferRoot(v);
    Slot &s = slots[root];
    return fb::BufferRef(s.space, s.index, s.offset,
                         storageBytes(cast<RankedTensorType>(v.getType())));
  }
  void recordPlan(func::FuncOp func, ArenaPlanAttr arena);

  flatbuffers::FlatBufferBuilder &fbb;
  const llvm::StringMap<KernelInfo> &kernels;
  const llvm::StringMap<unsigned> &kernelIndex;
  ConstantTable &constants;
  ExecutableStats &stats;
  llvm::MapVector<Value, Slot> slots;
};
} // namespace

/// The function's arena plan as flow-plan-memory recorded it, for the
/// report and the plot.
void FunctionWriter::recordPlan(func::FuncOp func, ArenaPlanAttr arena) {
  ExecutableStats::FunctionPlan plan;
  plan.function = func.getSymName().str();
  plan.result.arenaBytes = arena.getBytes();
  plan.result.lowerBound = arena.getLowerBound();
  plan.result.unplannedBytes = arena.getUnplanned();
  plan.result.heuristic = arena.getHeuristic().str();
  func.walk([&](Operation *op) {
    auto list = op->getAttrOfType<ArrayAttr>(FlowDialect::getBuffersAttrName());
    if (!list)
      return;
    for (Attribute a : list) {
      auto slice = dyn_cast<ArenaSliceAttr>(a);
      if (!slice)
        continue;
      PlannedBuffer b;
      b.size = slice.getSize();
      b.begin = slice.getFirst();
      b.end = slice.getLast();
      b.offset = slice.getOffset();
      b.reuses = slice.getInPlace() ? 0 : -1;
      b.name = bufferName(op);
      stats.transientBytes += b.size;
      stats.numInPlace += slice.getInPlace();
      plan.buffers.push_back(std::move(b));
    }
  });
  if (plan.result.arenaBytes >= stats.arenaBytes)
    stats.arenaLowerBound = plan.result.lowerBound;
  stats.arenaBytes = std::max(stats.arenaBytes, plan.result.arenaBytes);
  stats.plans.push_back(std::move(plan));
}

FailureOr<flatbuffers::Offset<fb::Function>>
FunctionWriter::write(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto signature = [&](TypeRange types)
      -> FailureOr<std::vector<flatbuffers::Offset<fb::TensorType>>> {
    std::vector<flatbuffers::Offset<fb::TensorType>> out;
    for (Type t : types) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      FailureOr<fb::DType> dtype = failure();
      if (tensor && tensor.hasStaticShape() && fitsInMemory(tensor))
        dtype = dtypeOf(tensor.getElementType());
      if (failed(dtype)) {
        func.emitError("function signature type ")
            << t
            << " is not supported: Flow executables take tensors of static "
               "shape (at most 2^48 bytes) of f32, f16, bf16, i64, i32 or i1";
        return failure();
      }
      std::vector<int64_t> shape = tensor.getShape().vec();
      out.push_back(fb::CreateTensorTypeDirect(fbb, *dtype, &shape));
    }
    return out;
  };
  auto inputs = signature(func.getArgumentTypes());
  auto outputs = signature(func.getResultTypes());
  if (failed(inputs) || failed(outputs))
    return failure();

  if (!fitsU32(func.getNumArguments()) || !fitsU32(func.getNumResults()))
    return func.emitError("a function of the executable takes at most 2^32-1 "
                          "inputs and outputs");
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    slots[arg] = {fb::Space::Input, (uint32_t)i, 0,
                  storageBytes(cast<RankedTensorType>(arg.getType()))};

  // The buffers flow-plan-memory chose: a slice of the arena, or an output
  // the command writes straight into (returned values in no output buffer
  // are copied there at the end).
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto arena =
      func->getAttrOfType<ArenaPlanAttr>(FlowDialect::getArenaAttrName());
  if (!arena)
    return func.emitError("function has no memory plan: run flow-plan-memory "
                          "before writing the executable");
  if (arena.getBytes() < 0)
    return func.emitError("arena size must be non-negative");

  // Assign buffers in program order.
  for (Operation &op : body) {
    if (isa<ReshapeOp, AnnotateOp, func::ReturnOp>(op))
      continue;
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      FailureOr<std::vector<uint8_t>> bytes = constantBytes(constant);
      if (failed(bytes))
        return failure();
      if (!fitsU32(constants.entries.size()))
        return constant.emitError("an executable holds at most 2^32-1 "
                                  "constants");
      stats.constantBytes += bytes->size();
      slots[constant.getResult()] = {fb::Space::Constant,
                                     (uint32_t)constants.entries.size(), 0,
                                     (int64_t)bytes->size()};
      constants.entries.push_back({std::move(*bytes), "", {}});
      continue;
    }
    if (auto parameter = dyn_cast<ParameterOp>(op)) {
      auto type = cast<RankedTensorType>(parameter.getType());
      if (!fitsInMemory(type) || failed(dtypeOf(type.getElementType())))
        return parameter.emitError("parameter type ")
               << type << " cannot be stored in an executable";
      if (!fitsU32(constants.entries.size()))
        return parameter.emitError("an executable holds at most 2^32-1 "
                                   "constants");
      auto [it, inserted] = constants.parameterIndex.try_emplace(
          parameter.getName(), constants.entries.size());
      if (inserted) {
        constants.entries.push_back({{}, parameter.getName().str(), type});
        stats.parameterBytes += storageBytes(type);
      } else if (constants.entries[it->second].type != type) {
        return parameter.emitError("parameter '")
               << parameter.getName() << "' is used with type " << type
               << " here and " << constants.entries[it->second].type
               << " elsewhere";
      }
      slots[parameter.getResult()] = {fb::Space::Constant, it->second, 0,
                                      storageBytes(type)};
      continue;
    }
    if (isCollective(&op) && !func->hasAttr(FlowDialect::getRanksAttrName()))
      return op.emitError("'")
             << op.getName()
             << "' has no single-device lowering: collectives run in the "
                "device programs of mesh functions (give the function a "
                "'flow.mesh')";
    if (!isa<func::CallOp, MatmulOp>(op) && !isCollective(&op))
      return op.emitError("the CPU executable cannot run '")
             << op.getName() << "' on the host";
    auto list = op.getAttrOfType<ArrayAttr>(FlowDialect::getBuffersAttrName());
    if (!list || list.size() != op.getNumResults())
      return op.emitError("has no buffers: run flow-plan-memory before "
                          "writing the executable");
    for (auto [result, buffer] : llvm::zip(op.getResults(), list)) {
      int64_t size = storageBytes(cast<RankedTensorType>(result.getType()));
      if (auto output = dyn_cast<OutputBufferAttr>(buffer)) {
        if (output.getIndex() < 0 ||
            output.getIndex() >= (int64_t)ret.getNumOperands() ||
            storageBytes(cast<RankedTensorType>(
                ret.getOperand(output.getIndex()).getType())) != size)
          return op.emitError("buffer ")
                 << output << " is not an output of this size";
        slots[result] = {fb::Space::Output, (uint32_t)output.getIndex(), 0,
                         size};
        continue;
      }
      auto slice = cast<ArenaSliceAttr>(buffer);
      if (slice.getSize() != size || slice.getOffset() < 0 ||
          slice.getOffset() % kAlignment ||
          slice.getOffset() + size > arena.getBytes())
        return op.emitError("buffer ")
               << slice << " does not hold this " << size
               << "-byte result within the arena of " << arena.getBytes()
               << " bytes";
      slots[result] = {fb::Space::Arena, 0, slice.getOffset(), size};
    }
  }
  recordPlan(func, arena);

  // Commands.
  std::vector<flatbuffers::Offset<void>> commands;
  std::vector<fb::Command> commandTypes;
  for (Operation &op : body) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto info = kernels.find(call.getCallee());
      if (info == kernels.end())
        return call.emitError("call to '")
               << call.getCallee() << "', which is not a compiled kernel";
      std::vector<fb::BufferRef> bindings;
      uint64_t work = 0;
      for (Value v :
           llvm::concat<Value>(call.getOperands(), call.getResults())) {
        bindings.push_back(ref(v));
        work += cast<RankedTensorType>(v.getType()).getNumElements();
      }
      if (bindings.size() != info->second.numBindings)
        return call.emitError("kernel '")
               << call.getCallee() << "' takes " << info->second.numBindings
               << " buffers but is called with " << bindings.size();
      for (auto [i, b] : llvm::enumerate(bindings))
        if (b.size() != info->second.bindingSizes[i])
          return call.emitError("kernel '")
                 << call.getCallee() << "' binding " << i << " holds "
                 << info->second.bindingSizes[i] << " bytes, not " << b.size();
      commands.push_back(
          fb::CreateDispatchDirect(fbb, kernelIndex.lookup(call.getCallee()),
                                   info->second.maxWorkgroups, &bindings, work)
              .Union());
      commandTypes.push_back(fb::Command::Dispatch);
      ++stats.numDispatches;
    } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
      auto a = cast<RankedTensorType>(matmul.getLhs().getType());
      auto b = cast<RankedTensorType>(matmul.getRhs().getType());
      auto c = cast<RankedTensorType>(matmul.getType());
      int64_t rank = c.getRank(), batch = rank - 2;
      std::vector<int64_t> batchShape(c.getShape().begin(),
                                      c.getShape().end() - 2);
      auto strides = [&](RankedTensorType t) {
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
      int64_t m = c.getDimSize(rank - 2), n = c.getDimSize(rank - 1);
      int64_t k = matmul.getTransposeLhs() ? a.getDimSize(a.getRank() - 2)
                                           : a.getDimSize(a.getRank() - 1);
      fb::BufferRef ra = ref(matmul.getLhs()), rb = ref(matmul.getRhs()),
                    rc = ref(matmul.getResult());
      commands.push_back(
          fb::CreateGemmDirect(fbb, m, n, k, matmul.getTransposeLhs(),
                               matmul.getTransposeRhs(), &batchShape, &aStrides,
                               &bStrides, &ra, &rb, &rc)
              .Union());
      commandTypes.push_back(fb::Command::Gemm);
      ++stats.numGemms;
    } else if (isCollective(&op)) {
      FailureOr<flatbuffers::Offset<void>> c = collective(op);
      if (failed(c))
        return failure();
      commands.push_back(*c);
      commandTypes.push_back(fb::Command::Collective);
      ++stats.numCollectives;
    }
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    const Slot &slot = slots[bufferRoot(v)];
    if (slot.space == fb::Space::Output && slot.index == i &&
        slot.size == storageBytes(cast<RankedTensorType>(v.getType())))
      continue;
    fb::BufferRef src = ref(v);
    fb::BufferRef dst(fb::Space::Output, (uint32_t)i, 0, src.size());
    commands.push_back(fb::CreateCopy(fbb, &src, &dst).Union());
    commandTypes.push_back(fb::Command::Copy);
    ++stats.numCopies;
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
  return fb::CreateFunctionDirect(
      fbb, func.getSymName().str().c_str(), &*inputs, &*outputs, &commandTypes,
      &commands, arena.getBytes(), ranks.empty() ? nullptr : &ranks,
      globalName.empty() ? nullptr : globalName.c_str(),
      globalInputs.empty() && ranks.empty() ? nullptr : &globalInputs,
      globalOutputs.empty() && ranks.empty() ? nullptr : &globalOutputs);
}

FailureOr<flatbuffers::Offset<void>> FunctionWriter::collective(Operation &op) {
  Value input = op.getOperand(0), output = op.getResult(0);
  auto inType = cast<RankedTensorType>(input.getType());
  auto outType = cast<RankedTensorType>(output.getType());
  FailureOr<fb::DType> dtype = dtypeOf(inType.getElementType());
  if (failed(dtype))
    return op.emitError("unsupported element type for a collective");
  fb::CollectiveKind kind = fb::CollectiveKind::AllReduce;
  fb::Reduction reduction = fb::Reduction::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  ArrayRef<int64_t> axes;
  if (auto r = dyn_cast<AllReduceOp>(op)) {
    axes = r.getMeshAxes();
    reduction = r.getKind() == ReductionKind::max ? fb::Reduction::Max
                                                  : fb::Reduction::Sum;
  } else if (auto g = dyn_cast<AllGatherOp>(op)) {
    kind = fb::CollectiveKind::AllGather;
    axes = g.getMeshAxes();
    dim = g.getDim();
  } else if (auto s = dyn_cast<ReduceScatterOp>(op)) {
    kind = fb::CollectiveKind::ReduceScatter;
    axes = s.getMeshAxes();
    dim = s.getDim();
    reduction = s.getKind() == ReductionKind::max ? fb::Reduction::Max
                                                  : fb::Reduction::Sum;
  } else {
    auto a = cast<AllToAllOp>(op);
    kind = fb::CollectiveKind::AllToAll;
    axes = a.getMeshAxes();
    splitDim = a.getSplitDim();
    concatDim = a.getConcatDim();
  }
  std::vector<int64_t> meshAxes = axes.vec();
  std::vector<int64_t> inShape = inType.getShape().vec();
  std::vector<int64_t> outShape = outType.getShape().vec();
  fb::BufferRef in = ref(input), out = ref(output);
  // What the device exchanges: the gathered or exchanged result, or the
  // tensor that is reduced.
  int64_t bytes =
      isa<ReduceScatterOp>(op) ? storageBytes(inType) : storageBytes(outType);
  stats.collectiveBytes += bytes;
  stats.collectives.push_back(
      {op.getParentOfType<func::FuncOp>().getSymName().str(),
       op.getName().stripDialect().str(), meshAxes, bytes});
  return fb::CreateCollectiveDirect(fbb, kind, reduction, &meshAxes, *dtype,
                                    &inShape, &outShape, dim, splitDim,
                                    concatDim, &in, &out)
      .Union();
}

FailureOr<std::vector<uint8_t>> mlir::flow::writeExecutable(
    ModuleOp host, const llvm::StringMap<KernelInfo> &kernels,
    ArrayRef<uint8_t> kernelLibrary, ExecutableStats &stats) {
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
    kernelTables.push_back(
        fb::CreateKernelDirect(fbb, info.symbol.c_str(), info.numBindings,
                               &info.bindingSizes, info.numOutputs));
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
  for (const ConstantEntry &entry : constants.entries) {
    if (!entry.parameter.empty()) {
      std::vector<int64_t> shape = entry.type.getShape().vec();
      auto type = fb::CreateTensorTypeDirect(
          fbb, *dtypeOf(entry.type.getElementType()), &shape);
      constantTables.push_back(
          fb::CreateConstant(fbb, 0, fbb.CreateString(entry.parameter), type));
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
  fbb.ForceVectorAlignment(kernelLibrary.size(), 1, 64);
  auto library = fbb.CreateVector(kernelLibrary.data(), kernelLibrary.size());
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
      fbb, kFormatVersion, fb::Target::CPU, fbb.CreateVector(functions),
      fbb.CreateVector(kernelTables), library, fbb.CreateVector(constantTables),
      ::flow::runtime::kChecksumPlaceholder, archive,
      meshShape.empty() ? 0 : fbb.CreateVector(meshShape));
  fb::FinishExecutableBuffer(fbb, root);
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(),
                             fbb.GetBufferPointer() + fbb.GetSize());
  if (!::flow::runtime::stampChecksum(bytes.data(), bytes.size()))
    return host.emitError("internal error: the executable has no checksum "
                          "field");
  return bytes;
}
