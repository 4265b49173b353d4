//===- CUDA.h - CUDA code generation ----------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TARGET_CUDA_H
#define FLOW_TARGET_CUDA_H

#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
namespace flow {
struct CudaTargetOptions;

/// The CUDA target's kernel phases: `bufferized` (kernels on memrefs, their
/// ABI recorded, still linalg), `gpu` (each kernel a gpu.func mapped onto
/// thread blocks, flow-map-kernels-to-gpu) and `nvvm` (the LLVM and NVVM
/// dialects, for `options.arch`).
void buildKernelCudaBufferizePipeline(OpPassManager &pm);
void buildKernelGpuPipeline(OpPassManager &pm,
                            const CudaTargetOptions &options);
void buildKernelNvvmPipeline(OpPassManager &pm,
                             const CudaTargetOptions &options);

/// The compute capability `sm_XY` names (90 for sm_90), or nullopt when
/// `arch` is not of that form.
std::optional<int> parseComputeCapability(StringRef arch);

/// The shared memory a block of \p arch may opt in to (bytes, the CUDA
/// programming guide's table of compute capabilities): 64 KiB on sm_75,
/// 163 KiB on sm_80 and sm_87, 99 KiB on sm_86, sm_89 and sm_12x, 227 KiB
/// on sm_90 and sm_100/103/110.
int64_t maxSharedBytesPerBlock(StringRef arch);

/// The architectures the CUDA target compiles for: those of CUDA 13's
/// ptxas, sm_75 (Turing) and newer.
ArrayRef<StringRef> getGpuArchs();

/// Why `arch` cannot be the CUDA target's --gpu-arch (not `sm_XY`, or not
/// one of getGpuArchs()); std::nullopt when it can.
std::optional<std::string> checkGpuArch(StringRef arch);

/// The CUDA toolkit `options` name, else $FLOW_CUDA_PATH, else
/// /usr/local/cuda.
std::string cudaToolkitPath(const CudaTargetOptions &options);

/// Registers the dialect translations and GPU target attributes the CUDA
/// target needs.
void registerCudaTargetTranslations(DialectRegistry &registry);

} // namespace flow
} // namespace mlir

#endif // FLOW_TARGET_CUDA_H
