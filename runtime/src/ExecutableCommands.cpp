//===- ExecutableCommands.cpp - Checking an executable's commands ---------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The checks of each command of a function (dispatch, GEMM, copy,
// collective, convolution, pooling), which decode it into the plain
// structs of ExecutableImpl.h: every buffer reference inside its buffer,
// every size in range and every output shape the one its operands give.
//
//===----------------------------------------------------------------------===//

#include "ExecutableChecker.h"

#include "flow/runtime/rules/Attention.h"
#include "flow/runtime/rules/Layout.h"
#include "flow/runtime/rules/Pieces.h"
#include "flow/runtime/rules/Window.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <tuple>
#include <type_traits>

using namespace flow::runtime;
using namespace flow::runtime::detail;

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
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = out.inputShape[d], o = out.outputShape[d];
    bool ok = in == o;
    if (out.kind == detail::CollectiveCommand::AllGather && d == out.dim)
      ok = flow::rules::isPiece(in, o, group);
    if (out.kind == detail::CollectiveCommand::ReduceScatter && d == out.dim)
      ok = in >= group && flow::rules::isPiece(o, in, group);
    if (out.kind == detail::CollectiveCommand::AllToAll &&
        out.splitDim != out.concatDim) {
      if (d == out.splitDim)
        ok = in >= group && flow::rules::isPiece(o, in, group);
      if (d == out.concatDim)
        ok = flow::rules::isPiece(in, o, group);
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
  case fbs::Command::Attention:
    out = detail::AttentionCommand();
    return verifyAttention(ctx + " (attention)",
                           *static_cast<const fbs::Attention *>(value),
                           std::get<detail::AttentionCommand>(out));
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
  case detail::Space::Symbols:
    if (out.index != 0)
      return Status::error(ctx + ": " + what + " refers to size symbols " +
                           index + "; their index must be 0");
    limit = 8 * sizes.symbols.size();
    buffer = "the size symbols";
    if (writable)
      return Status::error(ctx + ": " + what +
                           " writes to the size symbols, which are read-only");
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
  if (Status s = verifyRowExtent(ctx, cmd.rows(), -1, out.rows); !s)
    return s;
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
  for (size_t d = 0; d < rank && out.rowsDim < 0; ++d)
    if (out.batchShape[d] != 1)
      out.rowsDim = static_cast<int>(d);
  if (Status s = verifyRowExtent(
          ctx, cmd.rows(),
          out.rowsDim < 0 ? out.m : out.batchShape[out.rowsDim], out.rows);
      !s)
    return s;
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
      out.oh != flow::rules::windowExtent(out.h, out.padTop, out.padBottom,
                                          out.dilationH, out.kh, out.strideH) ||
      out.ow != flow::rules::windowExtent(out.w, out.padLeft, out.padRight,
                                          out.dilationW, out.kw, out.strideW))
    return Status::error(ctx + ": output_shape does not follow from the "
                               "input, filter, strides, padding and "
                               "dilations");
  out.relu = cmd.relu();
  out.blockedInput = cmd.blocked_input();
  out.blockedOutput = cmd.blocked_output();
  out.blockedResidual = cmd.blocked_residual();
  out.bf16 = cmd.bf16();
  if ((out.blockedInput && !flow::rules::blockable(out.c)) ||
      ((out.blockedOutput || out.blockedResidual) &&
       !flow::rules::blockable(out.o)))
    return Status::error(ctx + ": a blocked tensor needs a multiple of 16 "
                               "channels");
  // A narrow convolution: f16 or bf16 throughout, plain NCHW.
  fbs::DType element = cmd.element_dtype();
  if (element != fbs::DType::F32) {
    if (element != fbs::DType::F16 && element != fbs::DType::BF16)
      return Status::error(ctx + ": element type " +
                           fbs::EnumNameDType(element) +
                           "; a convolution runs F32, F16 or BF16");
    if (out.bf16 || out.blockedInput || out.blockedOutput ||
        out.blockedResidual)
      return Status::error(ctx + ": an " +
                           std::string(fbs::EnumNameDType(element)) +
                           " convolution is neither blocked nor bf16");
    for (auto [dtype, name] : {std::pair{cmd.input_dtype(), "input"},
                               {cmd.residual_dtype(), "residual"},
                               {cmd.output_dtype(), "output"}})
      if (dtype != element)
        return Status::error(ctx + ": the " + name + " holds " +
                             fbs::EnumNameDType(dtype) + " elements in an " +
                             fbs::EnumNameDType(element) + " convolution");
    out.element = element == fbs::DType::F16 ? DType::F16 : DType::BF16;
  }
  // Element types: f32, or bf16 for a blocked tensor of a bf16 command.
  for (auto [dtype, blocked, name, isBf16] :
       {std::tuple{cmd.input_dtype(), out.blockedInput, "input",
                   &out.inputBf16},
        {cmd.residual_dtype(), out.blockedResidual, "residual",
         &out.residualBf16},
        {cmd.output_dtype(), out.blockedOutput, "output", &out.outputBf16}}) {
    if (out.element != DType::F32)
      break;
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
  bool narrow = out.element != DType::F32;
  auto bytes = [&](std::initializer_list<int64_t> dims, uint64_t &b,
                   bool half = false) {
    b = half || narrow ? 2 : sizeof(float);
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
                uint64_t(out.o) * (narrow ? 2 : sizeof(float)), out.bias,
                &out.hasBias},
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
    size_t align = narrow ? 2 : sizeof(float);
    if (op.out.offset % align)
      return Status::error(ctx + ": " + op.name + " offset " +
                           std::to_string(op.out.offset) +
                           " is not a multiple of " + std::to_string(align));
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
  return verifyRowExtent(ctx, cmd.rows(), out.n, out.rows);
}

Status Checker::verifyAttention(const std::string &ctx,
                                const fbs::Attention &cmd,
                                detail::AttentionCommand &out) {
  // More dimensions than any model has: a guard against nonsense only.
  constexpr size_t kMaxRank = 16;
  auto read = [&](const flatbuffers::Vector<int64_t> *v, const char *name,
                  std::vector<int64_t> &values) -> Status {
    if (!isAligned(v))
      return misaligned(ctx + ": " + name);
    values.clear();
    if (!v) // only the mask's may be missing (checked below)
      return Status::ok();
    size_t length = v->size();
    if (length > kMaxRank)
      return Status::error(ctx + ": " + name + " has " +
                           std::to_string(length) + " dimensions (at most " +
                           std::to_string(kMaxRank) + ")");
    return readSizes(ctx, v, name, length, 1, values);
  };
  std::vector<int64_t> q, k, v, mask, shape;
  for (Status s : {read(cmd.query_shape(), "query_shape", q),
                   read(cmd.key_shape(), "key_shape", k),
                   read(cmd.value_shape(), "value_shape", v),
                   read(cmd.mask_shape(), "mask_shape", mask)})
    if (!s)
      return s;
  out.hasMask = cmd.mask() != nullptr;
  if (!out.hasMask && !mask.empty())
    return Status::error(ctx + ": mask_shape without a mask");
  std::string error = flow::rules::attentionShapeError(
      q, k, v, out.hasMask ? &mask : nullptr, shape);
  if (!error.empty())
    return Status::error(ctx + ": " + error);
  fbs::DType dtype = cmd.dtype(), maskDtype = cmd.mask_dtype();
  if (dtype != fbs::DType::F32 && dtype != fbs::DType::F16 &&
      dtype != fbs::DType::BF16)
    return Status::error(ctx + ": element type " +
                         std::string(fbs::EnumNameDType(dtype)) +
                         "; attention runs F32, F16 or BF16");
  if (out.hasMask && maskDtype != fbs::DType::I1 && maskDtype != dtype)
    return Status::error(ctx + ": a mask of " +
                         std::string(fbs::EnumNameDType(maskDtype)) +
                         " elements; it holds I1 or the element type " +
                         fbs::EnumNameDType(dtype));
  if (!std::isfinite(cmd.scale()))
    return Status::error(ctx + ": scale " + std::to_string(cmd.scale()) +
                         " is not finite");
  size_t rank = q.size();
  out.leading.assign(q.begin(), q.end() - 2);
  out.lq = q[rank - 2], out.d = q[rank - 1];
  out.lk = k[rank - 2], out.dv = v[rank - 1];
  out.scale = cmd.scale();
  out.causal = cmd.causal();
  out.dtype = static_cast<DType>(dtype);
  out.maskDtype = static_cast<DType>(maskDtype);
  // Bytes of each tensor: every dimension is below 2^31, the products are
  // checked.
  uint64_t size = dtypeSize(out.dtype);
  auto bytes = [&](const std::vector<int64_t> &dims, uint64_t element,
                   uint64_t &b) {
    b = element;
    for (int64_t d : dims)
      if (!mulOk(b, static_cast<uint64_t>(d), b))
        return false;
    return b <= kMaxBufferBytes;
  };
  uint64_t qBytes, kBytes, vBytes, maskBytes = 0, outBytes, batch = 1;
  if (!bytes(q, size, qBytes) || !bytes(k, size, kBytes) ||
      !bytes(v, size, vBytes) || !bytes(shape, size, outBytes) ||
      (out.hasMask && !bytes(mask, dtypeSize(out.maskDtype), maskBytes)) ||
      !bytes(out.leading, 1, batch))
    return Status::error(ctx + ": tensor sizes overflow");
  out.batch = static_cast<int64_t>(batch);
  // The mask's strides along the scores' dimensions (0: broadcast).
  if (out.hasMask) {
    out.maskStrides.assign(rank, 0);
    int64_t stride = 1;
    for (size_t i = mask.size(); i-- > 0;) {
      size_t at = rank - mask.size() + i;
      out.maskStrides[at] = mask[i] == 1 ? 0 : stride;
      stride *= mask[i];
    }
  }
  struct Operand {
    const char *name;
    const fbs::BufferRef *ref;
    bool writable;
    uint64_t bytes;
    detail::BufferRef &out;
  };
  for (const Operand &op :
       {Operand{"query", cmd.query(), false, qBytes, out.query},
        Operand{"key", cmd.key(), false, kBytes, out.key},
        Operand{"value", cmd.value(), false, vBytes, out.value},
        Operand{"mask", cmd.mask(), false, maskBytes, out.mask},
        Operand{"output", cmd.output(), true, outBytes, out.output}}) {
    if (&op.out == &out.mask && !out.hasMask)
      continue;
    if (Status s = verifyRef(ctx, op.name, op.ref, op.writable, op.out); !s)
      return s;
    if (op.out.size != op.bytes)
      return Status::error(
          ctx + ": " + op.name + " has " + std::to_string(op.out.size) +
          " bytes but its shape needs " + std::to_string(op.bytes));
    uint64_t align = &op.out == &out.mask ? dtypeSize(out.maskDtype) : size;
    if (op.out.offset % align)
      return Status::error(ctx + ": " + op.name + " offset " +
                           std::to_string(op.out.offset) +
                           " is not a multiple of " + std::to_string(align));
  }
  // The output is written while every operand is still read.
  for (const auto &[ref, name] : {std::pair{&out.query, "query"},
                                  {&out.key, "key"},
                                  {&out.value, "value"},
                                  {&out.mask, "mask"}}) {
    if (ref == &out.mask && !out.hasMask)
      continue;
    const detail::BufferRef &o = out.output;
    if (ref->space == o.space && ref->index == o.index && ref->size > 0 &&
        o.size > 0 && ref->offset < o.offset + o.size &&
        o.offset < ref->offset + ref->size)
      return Status::error(ctx + ": the output overlaps the " + name);
  }
  return verifyRowExtent(ctx, cmd.rows(),
                         out.leading.empty() ? 0 : out.leading[0], out.rows);
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
    if (padding[i] >=
        flow::rules::dilatedWindow(kernel[i % 2], dilations[i % 2]))
      return Status::error(ctx + ": padding " + std::to_string(padding[i]) +
                           " is not smaller than the window");
  // Both axes rounded down, or both up (ceil mode).
  auto fitsWith = [&](bool ceil) {
    for (int axis = 0; axis < 2; ++axis)
      if (outShape[2 + axis] !=
          flow::rules::windowExtent(in[2 + axis], padding[axis],
                                    padding[axis + 2], dilations[axis],
                                    kernel[axis], strides[axis], ceil))
        return false;
    return outShape[0] == out.n && outShape[1] == out.c;
  };
  if (!fitsWith(false) && !fitsWith(true))
    return Status::error(ctx + ": output_shape does not follow from the "
                               "input, kernel, strides, padding and "
                               "dilations");
  out.blockedInput = cmd.blocked_input();
  out.blockedOutput = cmd.blocked_output();
  if ((out.blockedInput || out.blockedOutput) && !flow::rules::blockable(out.c))
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
  return verifyRowExtent(ctx, cmd.rows(), out.n, out.rows);
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
  if (cmd.rows()) {
    // The rows' upper bound divides the bytes: each row is a run of them.
    if (Status s = verifyRowExtent(ctx, cmd.rows(), -1, out.rows); !s)
      return s;
    if (out.rows.max <= 0 || out.src.size % out.rows.max != 0)
      return Status::error(ctx + ": " + std::to_string(out.src.size) +
                           " bytes are not rows of extent " +
                           cmd.rows()->str());
  }
  return Status::ok();
}

Status Checker::verifyRowExtent(const std::string &ctx,
                                const flatbuffers::String *text, int64_t max,
                                detail::RowExtent &out) {
  if (!text)
    return Status::ok();
  ::flow::rules::Extent e;
  std::string error;
  if (!::flow::rules::Extent::parse(text->str(), e, error) || e.isConstant())
    return Status::error(ctx + ": rows '" + printable(text->str()) +
                         "' are not an extent over size symbols" +
                         (error.empty() ? "" : " (" + error + ")"));
  auto find = [&](const std::string &name) -> int64_t {
    for (size_t i = 0; i < sizes.symbols.size(); ++i)
      if (sizes.symbols[i].name == name)
        return static_cast<int64_t>(i);
    return -1;
  };
  int64_t lo, hi;
  bool ok = e.bounds(
      [&](const std::string &name, int64_t &a, int64_t &b) {
        int64_t i = find(name);
        if (i < 0)
          return false;
        a = sizes.symbols[i].min;
        b = sizes.symbols[i].max;
        return true;
      },
      lo, hi);
  if (!ok)
    return Status::error(ctx + ": rows " + e.str() +
                         " use a size symbol the function does not declare, "
                         "or overflow");
  if (lo < 0 || hi < 1 || (max >= 0 && hi != max))
    return Status::error(ctx + ": rows " + e.str() + " range over [" +
                         std::to_string(lo) + ", " + std::to_string(hi) +
                         "], but the command is sized for " +
                         std::to_string(max) + " rows");
  out = detail::rowExtentOf(e, sizes.symbols, hi);
  return Status::ok();
}

detail::RowExtent detail::rowExtentOf(const ::flow::rules::Extent &extent,
                                      const std::vector<SizeSymbol> &symbols,
                                      int64_t max) {
  RowExtent out;
  out.max = max;
  for (const auto &[monomial, coefficient] : extent.terms()) {
    std::vector<uint32_t> positions;
    for (const std::string &name : monomial)
      for (size_t i = 0; i < symbols.size(); ++i)
        if (symbols[i].name == name)
          positions.push_back(static_cast<uint32_t>(i));
    out.terms.emplace_back(coefficient, positions);
  }
  return out;
}
