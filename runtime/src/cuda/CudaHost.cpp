//===- CudaHost.cpp - The CUDA device's host-side logic -------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "CudaHost.h"

#include "../Executor.h"

#include <cctype>
#include <string_view>

using namespace flow::runtime;
using namespace flow::runtime::cuda;

StatusOr<size_t>
cuda::chooseLibrary(const std::vector<detail::GpuLibrary> &libraries,
                    int deviceCC, const std::string &deviceName) {
  // A cubin runs on its own compute capability and on later minors of its
  // major; PTX for this compute capability or an older one is compiled for
  // the device by the driver. Arch-specific code ("sm_90a") runs on its own
  // compute capability only. The closest cubin wins, else the closest PTX.
  auto rank = [&](const detail::GpuLibrary &l) -> int {
    bool specific = !l.arch.empty() && l.arch.back() == 'a';
    if (l.computeCapability > deviceCC ||
        (specific && l.computeCapability != deviceCC))
      return -1;
    if (l.format == detail::GpuLibrary::Cubin)
      return l.computeCapability / 10 == deviceCC / 10
                 ? 1000 + l.computeCapability
                 : -1;
    return l.computeCapability;
  };
  int bestRank = -1;
  size_t best = 0;
  for (size_t i = 0; i < libraries.size(); ++i)
    if (int r = rank(libraries[i]); r > bestRank) {
      bestRank = r;
      best = i;
    }
  if (bestRank >= 0)
    return best;
  std::string built;
  for (const detail::GpuLibrary &l : libraries)
    built += (built.empty() ? "" : ", ") +
             std::string(l.format == detail::GpuLibrary::Ptx ? "PTX" : "cubin") +
             " for " + l.arch;
  std::string arch = "sm_" + std::to_string(deviceCC);
  return Status::error("the kernels cannot run on " + deviceName +
                       " (compute capability " + std::to_string(deviceCC / 10) +
                       "." + std::to_string(deviceCC % 10) + "): the executable "
                       "holds " + (built.empty() ? "no kernel library" : built) +
                       "; recompile with flow-compile --target=cuda "
                       "--gpu-arch=" + arch);
}

std::optional<size_t>
cuda::chooseFallbackPtx(const std::vector<detail::GpuLibrary> &libraries,
                        int deviceCC) {
  std::optional<size_t> best;
  for (size_t i = 0; i < libraries.size(); ++i) {
    const detail::GpuLibrary &l = libraries[i];
    bool specific = !l.arch.empty() && l.arch.back() == 'a';
    if (l.format != detail::GpuLibrary::Ptx || l.computeCapability > deviceCC ||
        (specific && l.computeCapability != deviceCC))
      continue;
    if (!best || l.computeCapability > libraries[*best].computeCapability)
      best = i;
  }
  return best;
}

int cuda::ptxIsaVersion(const detail::GpuLibrary &library) {
  if (library.format != detail::GpuLibrary::Ptx || !library.data)
    return 0;
  std::string_view text(reinterpret_cast<const char *>(library.data),
                        library.size);
  size_t at = text.find(".version");
  if (at == std::string_view::npos)
    return 0;
  at += 8;
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
    ++at;
  int major = 0, minor = 0;
  size_t i = at;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
       ++i)
    major = major * 10 + (text[i] - '0');
  if (i == at || i >= text.size() || text[i] != '.')
    return 0;
  size_t m = ++i;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
       ++i)
    minor = minor * 10 + (text[i] - '0');
  if (i == m || minor > 9)
    return 0;
  return major * 10 + minor;
}

int cuda::cudaVersionForPtxIsa(int isa) {
  // NVIDIA's PTX ISA release notes: the CUDA version that introduced each
  // ISA version.
  static const std::pair<int, int> introduced[] = {
      {70, 11000}, {71, 11010}, {72, 11020}, {73, 11030}, {74, 11040},
      {75, 11050}, {76, 11060}, {77, 11070}, {78, 11080}, {80, 12000},
      {81, 12010}, {82, 12020}, {83, 12030}, {84, 12040}, {85, 12050},
      {86, 12070}, {87, 12080}, {88, 12090}, {90, 13000}, {91, 13010}};
  for (auto [ptx, cuda] : introduced)
    if (isa <= ptx)
      return cuda;
  return 0;
}

std::string cuda::cudaVersionName(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

uint64_t DeviceFrame::address(const detail::BufferRef &ref) const {
  uint64_t base = 0;
  switch (ref.space) {
  case detail::Space::Input:
    base = inputs[ref.index];
    break;
  case detail::Space::Output:
    base = outputs[ref.index];
    break;
  case detail::Space::Arena:
    base = arena;
    break;
  case detail::Space::Constant:
    base = constants[ref.index];
    break;
  case detail::Space::Symbols:
    // Loading refuses size symbols in a CUDA executable.
    break;
  }
  return base ? base + ref.offset : 0;
}

LaunchArguments::LaunchArguments(const detail::DispatchCommand &cmd,
                                 const detail::GpuKernel &kernel,
                                 const DeviceFrame &frame, uint64_t scratch) {
  values.reserve(cmd.bindings.size() + kernel.scratchOffsets.size());
  for (const detail::BufferRef &ref : cmd.bindings)
    values.push_back(frame.address(ref));
  for (uint64_t offset : kernel.scratchOffsets)
    values.push_back(scratch + offset);
  for (uint64_t &value : values)
    params.push_back(&value);
}

GemmPlan cuda::planGemm(const detail::GemmCommand &cmd) {
  GemmPlan plan;
  const uint64_t m = cmd.m, n = cmd.n, k = cmd.k;
  plan.m = n;
  plan.n = m;
  plan.k = k;
  plan.abType = cmd.abDtype;
  plan.cType = cmd.cDtype;
  plan.tf32 = cmd.allowTf32;
  plan.elementBytes = static_cast<int>(dtypeSize(cmd.abDtype));
  plan.cElementBytes = static_cast<int>(dtypeSize(cmd.cDtype));
  switch (cmd.activation) {
  case detail::GemmCommand::None:
    plan.epilogue = cmd.hasBias ? GemmPlan::Bias : GemmPlan::Default;
    break;
  case detail::GemmCommand::Relu:
    plan.epilogue = cmd.hasBias ? GemmPlan::ReluBias : GemmPlan::Relu;
    break;
  case detail::GemmCommand::GeluTanh:
    plan.epilogue = cmd.hasBias ? GemmPlan::GeluTanhBias : GemmPlan::GeluTanh;
    break;
  }
  // The command's B (row-major k x n, or n x k transposed) is column-major
  // n x k (or k x n): cuBLASLt's first operand.
  plan.transposeFirst = cmd.transposeB;
  plan.firstRows = cmd.transposeB ? k : n;
  plan.firstCols = cmd.transposeB ? n : k;
  plan.firstLd = plan.firstRows;
  // The command's A (row-major m x k, or k x m) is column-major k x m (or
  // m x k): the second operand.
  plan.transposeSecond = cmd.transposeA;
  plan.secondRows = cmd.transposeA ? m : k;
  plan.secondCols = cmd.transposeA ? k : m;
  plan.secondLd = plan.secondRows;
  plan.cRows = n;
  plan.cCols = m;
  plan.cLd = n;
  // The innermost batch dimension is the strided batch; outer dimensions
  // fold into it while both operands' strides continue evenly, and the
  // rest become one call per index.
  const int64_t matrixC = int64_t(m) * n;
  size_t rank = cmd.batchShape.size();
  size_t folded = rank; // batch dimensions [folded, rank) are in the batch
  if (rank > 0) {
    plan.batchCount = cmd.batchShape[rank - 1];
    plan.firstStride = cmd.bBatchStrides[rank - 1];
    plan.secondStride = cmd.aBatchStrides[rank - 1];
    folded = rank - 1;
    while (folded > 0) {
      size_t d = folded - 1;
      int64_t count = plan.batchCount;
      if (cmd.bBatchStrides[d] != plan.firstStride * count ||
          cmd.aBatchStrides[d] != plan.secondStride * count)
        break;
      plan.batchCount *= cmd.batchShape[d];
      folded = d;
    }
  }
  plan.cStride = matrixC;
  // One call per index of batch dimensions [0, folded), row-major.
  int64_t outer = 1;
  for (size_t d = 0; d < folded; ++d)
    outer *= cmd.batchShape[d];
  for (int64_t index = 0; index < outer; ++index) {
    GemmPlan::Call call;
    int64_t rest = index;
    for (size_t d = folded; d-- > 0;) {
      int64_t i = rest % cmd.batchShape[d];
      rest /= cmd.batchShape[d];
      call.first += i * cmd.bBatchStrides[d];
      call.second += i * cmd.aBatchStrides[d];
    }
    call.c = index * plan.batchCount * matrixC;
    plan.calls.push_back(call);
  }
  // Alignments: the lowest set bit of every byte offset a pointer can take.
  auto alignment = [](uint64_t bits) {
    bits |= 256;
    return static_cast<uint32_t>(bits & ~(bits - 1));
  };
  uint64_t firstBits = cmd.b.offset, secondBits = cmd.a.offset,
           cBits = cmd.c.offset;
  if (plan.batchCount > 1) {
    firstBits |= uint64_t(plan.firstStride) * plan.elementBytes;
    secondBits |= uint64_t(plan.secondStride) * plan.elementBytes;
    cBits |= uint64_t(plan.cStride) * plan.cElementBytes;
  }
  for (const GemmPlan::Call &call : plan.calls) {
    firstBits |= uint64_t(call.first) * plan.elementBytes;
    secondBits |= uint64_t(call.second) * plan.elementBytes;
    cBits |= uint64_t(call.c) * plan.cElementBytes;
  }
  plan.firstAlignment = alignment(firstBits);
  plan.secondAlignment = alignment(secondBits);
  plan.cAlignment = alignment(cBits);
  plan.biasAlignment = alignment(cmd.hasBias ? cmd.bias.offset : 0);
  return plan;
}

Status cuda::checkCudaCommands(const Executable::Impl &impl) {
  for (size_t f = 0; f < impl.functions.size(); ++f)
    for (size_t i = 0; i < impl.functions[f].commands.size(); ++i) {
      const detail::Command &command = impl.functions[f].commands[i];
      std::string ctx = "function '" + impl.signatures[f].name +
                        "' command " + std::to_string(i);
      if (const auto *col = std::get_if<detail::CollectiveCommand>(&command)) {
        // Reductions need a type NCCL reduces; the rest move bytes.
        bool reduces = col->kind == detail::CollectiveCommand::AllReduce ||
                       col->kind == detail::CollectiveCommand::ReduceScatter;
        if (reduces && (col->dtype == DType::I16 || col->dtype == DType::U16 ||
                        col->dtype == DType::I1))
          return Status::error(ctx + " reduces " + dtypeName(col->dtype) +
                               " elements, which NCCL cannot (recompile: "
                               "Flow's compiler reduces them in a wider type "
                               "for CUDA)");
      } else if (const auto *g = std::get_if<detail::GemmCommand>(&command)) {
        if (g->k == 0 && g->m > 0 && g->n > 0 && g->batchCount > 0 &&
            g->hasEpilogue())
          return Status::error(ctx + " (gemm): an empty product (k = 0) with "
                                     "a bias or activation; the CUDA device "
                                     "does not run it");
      } else if (const auto *conv =
                     std::get_if<detail::ConvCommand>(&command)) {
        if (StatusOr<ConvPlan> plan = planConv(*conv); !plan)
          return Status::error(ctx + " (conv): " + plan.status().message());
      } else if (std::holds_alternative<detail::PoolCommand>(command) ||
                 std::holds_alternative<detail::AttentionCommand>(command)) {
        std::string kind, what;
        detail::describeCommand(impl, command, kind, what);
        return Status::error(ctx + " (" + kind + " " + what +
                             ") is a library call the CUDA device does not "
                             "run yet");
      }
    }
  return Status::ok();
}

StatusOr<ConvPlan> cuda::planConv(const detail::ConvCommand &cmd) {
  if (cmd.padTop != cmd.padBottom || cmd.padLeft != cmd.padRight)
    return Status::error(
        "padding [" + std::to_string(cmd.padTop) + ", " +
        std::to_string(cmd.padLeft) + ", " + std::to_string(cmd.padBottom) +
        ", " + std::to_string(cmd.padRight) +
        "] differs between two sides, which cuDNN does not take (Flow's "
        "compiler makes such convolutions GEMMs for CUDA)");
  if (cmd.blockedInput || cmd.blockedResidual || cmd.blockedOutput ||
      cmd.bf16)
    return Status::error("blocked layouts and mixed-precision bf16 "
                         "convolutions are the CPU library's; the CUDA "
                         "device runs NCHW f32, f16 and bf16 ones");
  ConvPlan plan;
  plan.fused = cmd.relu;
  plan.residualWeight = cmd.hasResidual ? 1.0f : 0.0f;
  plan.copyResidual = !plan.fused && cmd.hasResidual && !cmd.residualInPlace;
  plan.zeroBias = plan.fused && !cmd.hasBias;
  plan.padH = static_cast<int>(cmd.padTop);
  plan.padW = static_cast<int>(cmd.padLeft);
  return plan;
}
