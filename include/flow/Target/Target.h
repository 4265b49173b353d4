//===- Target.h - The target interface --------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
// A target turns a module of kernels in linalg form into kernel libraries:
// it names the phases that lower them (each a pass pipeline flow-compile
// can stop after), reads each kernel's ABI (bindings, launch shape) and
// serializes the result. Targets are found by name (`--target=`) in a
// registry; CPU (linalg -> LLVM -> ELF) and CUDA (linalg -> gpu -> NVVM ->
// PTX, and cubin where ptxas is found) are the two built in.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TARGET_TARGET_H
#define FLOW_TARGET_TARGET_H

#include "flow/Target/CPU.h"
#include "flow/Target/Executable.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace flow {

struct CudaTargetOptions {
  /// The GPU's compute capability, as `sm_XY` (`sm_90`: H100, H200).
  std::string arch = "sm_90";
  /// Threads per block of a generated kernel.
  int64_t blockSize = 256;
  /// The CUDA toolkit (libdevice for math functions, ptxas for cubins);
  /// empty: $FLOW_CUDA_PATH, else /usr/local/cuda.
  std::string toolkitPath;
  /// Let f32 library GEMMs multiply in TF32 (10-bit mantissas, f32 sums):
  /// faster on tensor cores, less exact; off unless the user asks
  /// (`--allow-tf32`, as torch.backends.cuda.matmul.allow_tf32).
  bool allowTf32 = false;
};

struct TargetOptions {
  CpuTargetOptions cpu;
  CudaTargetOptions cuda;
};

/// Code for one target in an executable: `data` in `format` (the
/// executable's KernelFormat: ELF, PTX or CUBIN), compiled for `arch` (an
/// LLVM CPU name, or `sm_XY`), which needs `features` of the machine
/// running it (CPU: the features the runtime checks).
struct KernelLibraryBlob {
  uint8_t format = 0;
  std::string arch;
  std::vector<std::string> features;
  std::vector<uint8_t> data;
};

/// A phase of kernel code generation: its name (`--compile-to=NAME`) and
/// the pipeline it runs on the module of kernels.
struct KernelPhase {
  std::string name;
  std::function<void(OpPassManager &)> build;
};

class Target {
public:
  virtual ~Target();

  /// The name `--target=` takes.
  virtual StringRef getName() const = 0;
  /// The executable's Target value (runtime/schema/executable.fbs).
  virtual uint8_t getExecutableTarget() const = 0;
  /// Checks the options; errors are reported on `module`.
  virtual LogicalResult verifyOptions(ModuleOp module,
                                      const TargetOptions &options) const;
  /// Whether library convolutions keep their activations in the CPU
  /// convolution library's blocked layouts, with the pools next to them run
  /// by the runtime (flow-choose-conv-layouts, flow-library-pools).
  virtual bool usesBlockedConvLayouts() const = 0;
  /// Whether the target's runtime device runs `host.conv` commands;
  /// without one, convolutions become im2col and a library GEMM
  /// (flow-conv-to-gemm) whatever CompileOptions::libraryConv says.
  virtual bool hasConvolutionLibrary() const = 0;
  /// Whether that library takes only one padding per spatial dimension
  /// (cuDNN): convolutions padded differently on two sides become im2col
  /// and a GEMM (flow-conv-to-gemm{only-asymmetric}).
  virtual bool convolutionLibraryNeedsSymmetricPadding() const {
    return false;
  }
  /// Whether the runtime device's GEMM library applies bias and activation
  /// epilogues (host.gemm's `bias` and `activation`).
  virtual bool hasGemmLibraryEpilogues() const = 0;
  /// Whether the GEMM library also runs f16 and bf16 products (f16 x f16
  /// and bf16 x bf16, summed in f32, into their own type or f32); without
  /// it only f32 and bf16-into-f32 products are library GEMMs.
  virtual bool hasNarrowGemmLibrary() const = 0;
  /// Whether the convolution library also runs f16 and bf16 convolutions
  /// (every tensor of the element type, summed in f32: cuDNN's tensor
  /// cores); without it they become im2col and a GEMM, or kernels.
  virtual bool hasNarrowConvolutionLibrary() const { return false; }
  /// Whether the runtime runs flow.attention as one library command
  /// (host.attention); without it the op becomes matmul, softmax and
  /// matmul (flow-decompose-attention).
  virtual bool hasAttentionLibrary() const { return false; }
  /// The phases after `linalg`, in order.
  virtual std::vector<KernelPhase>
  getKernelPhases(const TargetOptions &options) const = 0;
  /// After this phase each kernel's ABI is read (getKernelInfos).
  virtual StringRef getAbiPhase() const = 0;
  /// Each kernel's ABI, keyed by the kernel's name.
  virtual llvm::StringMap<KernelInfo> getKernelInfos(ModuleOp kernels) const = 0;
  /// A phase after the last kernel phase whose result is text (CUDA:
  /// `ptx`), printed by `--compile-to` instead of IR; empty if none.
  virtual StringRef getTextPhase() const { return ""; }
  /// Serializes the module the last kernel phase produced into kernel
  /// libraries; `text`, if given, receives the text phase's output.
  virtual FailureOr<std::vector<KernelLibraryBlob>>
  serialize(ModuleOp kernels, const TargetOptions &options,
            std::string *text) const = 0;
};

/// Registers `target` under its name (replacing one of the same name).
void registerTarget(std::unique_ptr<Target> target);
/// The target named `name`, or null.
const Target *lookupTarget(StringRef name);
/// Every registered target's name, sorted.
std::vector<std::string> getTargetNames();
/// Registers the built-in targets (idempotent, thread-safe): cpu, cuda, and
/// cuda-emulated (the CUDA target's kernels, as mapped onto thread blocks,
/// run on the CPU: for testing that mapping without a GPU).
void registerBuiltinTargets();
std::unique_ptr<Target> createCpuTarget();
std::unique_ptr<Target> createCudaTarget();
std::unique_ptr<Target> createCudaEmulatedTarget();

/// Adds the pass pipeline `text` (flow-opt's spelling, inside
/// `builtin.module(...)`) to `pm`; the texts are Flow's own, so one that
/// does not parse is a bug and aborts.
void addFlowPipeline(OpPassManager &pm, StringRef text);

/// The part of a kernel's ABI every target records alike
/// (flow-record-kernel-abi): bindings, their sizes and element types, and
/// how many it writes; `symbol` as given.
KernelInfo readKernelAbi(Operation *kernel, FunctionType type,
                         StringRef symbol);

} // namespace flow
} // namespace mlir

#endif // FLOW_TARGET_TARGET_H
