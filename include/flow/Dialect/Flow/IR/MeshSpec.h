//===- MeshSpec.h - What the planner knows of a mesh's hardware -*- C++ -*-===//
//
// Part of the Flow project.
//
// A mesh description: per mesh axis, the bandwidth a device has for a
// collective along it and the latency of one collective call; per device,
// its arithmetic throughput, its memory and the bandwidth of that memory.
// The SBP planner turns its costs into seconds with it: an op takes the
// longer of its share of the work at the device's throughput and its
// pieces' bytes (read and written) at the memory's bandwidth. Built-in
// presets, or a JSON file:
//
//   {"name": "two-nodes",
//    "axes": [{"bandwidth_gb_per_s": 50, "latency_us": 15},
//             {"bandwidth_gb_per_s": 450, "latency_us": 3}],
//    "device": {"tflops": 67, "memory_gib": 80, "memory_gb_per_s": 3350}}
//
// "axes" lists the mesh axes outermost first; a single entry stands for
// every axis. Without "memory_gb_per_s" ops are timed by their work alone.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_DIALECT_FLOW_IR_MESHSPEC_H
#define FLOW_DIALECT_FLOW_IR_MESHSPEC_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir {
namespace flow {

struct MeshSpec {
  struct Axis {
    /// Bytes per second each device sends (and receives) in a collective
    /// along the axis.
    double bandwidth = 0;
    /// Seconds one collective call along the axis costs beyond its bytes.
    double latency = 0;
  };
  std::string name;
  /// Outermost axis first; one entry stands for every axis.
  SmallVector<Axis, 2> axes;
  /// Per device: f32 FLOP/s of matrix products, bytes of memory, bytes
  /// per second read and written in memory (0: not modeled).
  double flops = 0;
  double memoryBytes = 0;
  double memoryBandwidth = 0;

  const Axis &axis(unsigned i) const {
    return axes.size() == 1 ? axes.front() : axes[i];
  }
  /// Whether the description fits a mesh of `rank` axes (one axis entry,
  /// or one per axis); says why not in `error`.
  bool fits(unsigned rank, std::string &error) const;
};

/// The preset the planner uses unless told otherwise: 2-core CPU
/// processes over MPI, as measured on the machine Flow is developed on.
const MeshSpec &defaultMeshSpec();

/// The names of the built-in presets.
SmallVector<StringRef> meshSpecPresets();

/// A preset by name, or else a JSON file by path; nullopt with the reason
/// in `error`.
std::optional<MeshSpec> loadMeshSpec(StringRef nameOrPath, std::string &error);

/// A mesh description from JSON text (the format above).
std::optional<MeshSpec> parseMeshSpec(StringRef json, std::string &error);

} // namespace flow
} // namespace mlir

#endif // FLOW_DIALECT_FLOW_IR_MESHSPEC_H
