//===- CPU.h - CPU code generation ------------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TARGET_CPU_H
#define FLOW_TARGET_CPU_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace flow {

struct CpuTargetOptions {
  /// LLVM CPU name; "host" means the machine compiling.
  std::string cpu = "host";
  /// LLVM optimization level for the kernels.
  unsigned optLevel = 3;
};

/// A target CPU as a kernel library sees it.
struct CpuKernelFeatures {
  /// LLVM's name for it.
  std::string name;
  /// Which of the features the runtime checks (flow/runtime/CpuFeatures.h)
  /// it has: what a library compiled for it may need of the CPU running it.
  std::vector<std::string> features;

  /// True when it rounds f32 to bf16 in one instruction (AVX-512 BF16 or
  /// AVX-NE-CONVERT); without, LLVM would call compiler-rt for it, and
  /// kernels expand it first (flow-expand-bf16).
  bool convertsBf16() const;
};

/// `cpu` ("host": the machine compiling) as a kernel library sees it.
CpuKernelFeatures cpuKernelFeatures(llvm::StringRef cpu);

/// Why `cpu` cannot be the CPU kernels are compiled for (not a processor
/// LLVM knows for this machine's architecture, or one without 64-bit
/// code); std::nullopt when it can ("host" always can).
std::optional<std::string> checkCpuName(llvm::StringRef cpu);

/// Translates `module` (LLVM dialect, kernels with entry points) to LLVM IR,
/// optimizes it, emits an object for x86-64 and links it into an ELF shared
/// object with lld. Errors are reported on `module`.
FailureOr<std::vector<uint8_t>>
buildCpuKernelLibrary(ModuleOp module, const CpuTargetOptions &options);

struct KernelCpuLLVMPipelineOptions {
  /// Compute bf16 in f32 and round to bf16 with integer operations
  /// (flow-expand-bf16), for a CPU without bf16 conversion instructions.
  bool expandBf16 = false;
  /// Lower vector ops the kernels hold (the CPU's own kernels have none
  /// until LLVM vectorizes them; emulated GPU kernels do).
  bool lowerVectors = false;
};

/// The CPU's kernel phases: `bufferized` (kernels on memrefs, as loops
/// split over workgroups, their ABI recorded) and `llvm` (the LLVM dialect,
/// with the entry points the runtime calls).
void buildKernelBufferizePipeline(OpPassManager &pm);
void buildKernelCpuLLVMPipeline(
    OpPassManager &pm, const KernelCpuLLVMPipelineOptions &options = {});

/// Registers the dialect translations buildCpuKernelLibrary needs.
void registerCpuTargetTranslations(DialectRegistry &registry);

} // namespace flow
} // namespace mlir

#endif // FLOW_TARGET_CPU_H
