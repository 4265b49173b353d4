//===- Executable.h - Writing .fbin executables -----------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TARGET_EXECUTABLE_H
#define FLOW_TARGET_EXECUTABLE_H

#include "flow/Support/MemoryPlan.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <array>
#include <string>
#include <vector>

namespace mlir {
namespace flow {

/// What the host schedule needs to know about one compiled kernel.
struct KernelInfo {
  /// The entry point's symbol in the kernel library.
  std::string symbol;
  /// Buffers the kernel reads and writes, in call order.
  unsigned numBindings = 0;
  /// Workgroups it can be split into (1: it runs whole).
  int64_t maxWorkgroups = 1;
  /// Bytes of each binding (its static shape), and how many trailing
  /// bindings it writes.
  std::vector<uint64_t> bindingSizes;
  unsigned numOutputs = 0;
  /// Each binding's element type as the executable's DType values (empty
  /// when one has no such type), and the ops the kernel computes with their
  /// source locations, for the runtime's messages.
  std::vector<uint8_t> bindingDtypes;
  std::string description;
  /// GPU kernels: the launches of one dispatch, in order (one per stage,
  /// flow-map-kernels-to-gpu), each with its entry point, blocks and
  /// threads per block (3-D) and the static shared memory of a block; and
  /// the scratch memory they share: its bytes and where each scratch
  /// buffer (the launches' arguments after the bindings) starts in it.
  struct GpuLaunch {
    std::string symbol;
    std::array<int64_t, 3> grid = {1, 1, 1};
    std::array<int64_t, 3> block = {1, 1, 1};
    int64_t sharedBytes = 0;
    /// Dynamic shared memory requested at launch (bytes).
    int64_t dynamicSharedBytes = 0;
  };
  std::vector<GpuLaunch> launches;
  int64_t scratchBytes = 0;
  std::vector<uint64_t> scratchOffsets;
};

/// Figures about the executable, for the compile report.
struct ExecutableStats {
  /// Largest arena of any function, in bytes.
  int64_t arenaBytes = 0;
  /// Sum over functions of the sizes of every transient buffer: what the
  /// arena would need without reuse.
  int64_t transientBytes = 0;
  int64_t numDispatches = 0;
  int64_t numGemms = 0;
  int64_t numConvs = 0;
  int64_t numAttentions = 0;
  /// Max and average pools run by the runtime next to its convolutions.
  int64_t numPools = 0;
  /// Dispatches run tile by tile as epilogues of the GEMM before them.
  int64_t numGemmEpilogues = 0;
  int64_t numCopies = 0;
  int64_t constantBytes = 0;
  int64_t numCollectives = 0;
  /// Collectives in flight while later commands run (host.wait).
  int64_t numAsyncCollectives = 0;
  /// Every collective: its device program, op, mesh axes, the bytes each
  /// device exchanges through it (all-gather, all-to-all: the whole
  /// result; all-reduce, reduce-scatter: the tensor reduced), and whether
  /// it runs while later commands do.
  struct Collective {
    std::string function, op;
    std::vector<int64_t> meshAxes;
    int64_t bytes = 0;
    bool async = false;
  };
  std::vector<Collective> collectives;
  /// Bytes each device receives from its collectives (their outputs).
  int64_t collectiveBytes = 0;
  /// Bytes of the parameters read from the archive.
  int64_t parameterBytes = 0;
  /// Each function's arena plan: its buffers and the packing's figures.
  struct FunctionPlan {
    std::string function;
    std::vector<PlannedBuffer> buffers;
    MemoryPlanResult result;
  };
  std::vector<FunctionPlan> plans;
  /// The lower bound of the function with the largest arena (most bytes
  /// alive at one point), and how many buffers took over an operand's slice
  /// in place, over all functions.
  int64_t arenaLowerBound = 0;
  int64_t numInPlace = 0;
};

/// The executable's DType value (runtime/schema/executable.fbs) of an element
/// type; nullopt for a type executables do not carry.
std::optional<uint8_t> executableDType(Type elementType);

struct KernelLibraryBlob;

/// Serializes the host schedule in `host` (public functions of flow.constant,
/// flow.parameter, flow.reshape, f32 flow.matmul, collectives and calls to
/// kernels, with the buffers flow-plan-memory gave them) into a .fbin for
/// `target` (the executable's Target value): commands, the arena of each
/// function, constants, the kernels' ABI and launch shapes, and the kernel
/// libraries (each with its format, the CPU or GPU it was compiled for and
/// what it needs of it). Errors are reported on the offending op.
FailureOr<std::vector<uint8_t>>
writeExecutable(ModuleOp host, const llvm::StringMap<KernelInfo> &kernels,
                ArrayRef<KernelLibraryBlob> libraries, uint8_t target,
                ExecutableStats &stats);

} // namespace flow
} // namespace mlir

#endif // FLOW_TARGET_EXECUTABLE_H
