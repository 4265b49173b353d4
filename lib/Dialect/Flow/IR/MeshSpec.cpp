//===- MeshSpec.cpp - Mesh descriptions: presets and JSON files -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/MeshSpec.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::flow;

bool MeshSpec::fits(unsigned rank, std::string &error) const {
  if (axes.size() == 1 || axes.size() == rank)
    return true;
  error = "mesh description '" + name + "' describes " +
          std::to_string(axes.size()) + " mesh axes, the mesh has " +
          std::to_string(rank);
  return false;
}

namespace {
constexpr double kGB = 1e9, kGiB = 1024.0 * 1024 * 1024, kUs = 1e-6;

MeshSpec make(StringRef name, ArrayRef<MeshSpec::Axis> axes, double tflops,
              double memoryGiB, double memoryGBPerS) {
  MeshSpec spec;
  spec.name = name.str();
  spec.axes.assign(axes.begin(), axes.end());
  spec.flops = tflops * 1e12;
  spec.memoryBytes = memoryGiB * kGiB;
  spec.memoryBandwidth = memoryGBPerS * kGB;
  return spec;
}

/// The presets. cpu-mpi was measured on the 2-core AVX-512 machine Flow is
/// developed on, one process per core: an all-reduce of 32 MB between 2
/// ranks takes about 65 ms beyond the same call on one device (about
/// 0.5 GB/s per rank), a small collective's call about 3 us
/// (bench/mesh_call_overhead.py), f32 GEMM about 125 GFLOP/s per core
/// (MLIR22.md: 250 on both), 24 GB shared by the two processes, 13 GB/s
/// of memory traffic (read and written) per process with both copying at
/// once (one process alone: 18). The GPU
/// presets take the vendors' published figures: H100 and H200 SXM, 67
/// TFLOP/s of f32 without tensor cores (Flow's f32 GEMMs leave TF32 off
/// unless --allow-tf32), 80 and 141 GB of HBM at 3.35 and 4.8 TB/s;
/// NVLink 4, 450 GB/s per direction per GPU; an
/// InfiniBand NDR port (400 Gb/s, 50 GB/s) per GPU between nodes. The
/// latencies (10 us within a node, 20 us across) are typical of NCCL's
/// small collectives, not measured here.
const SmallVector<MeshSpec> &presets() {
  static const SmallVector<MeshSpec> all = {
      make("cpu-mpi", {{0.5 * kGB, 3 * kUs}}, 0.125, 12, 13),
      make("h100-nvlink", {{450 * kGB, 10 * kUs}}, 67, 80, 3350),
      make("h200-nvlink", {{450 * kGB, 10 * kUs}}, 67, 141, 4800),
      make("h100-nodes", {{50 * kGB, 20 * kUs}, {450 * kGB, 10 * kUs}}, 67,
           80, 3350),
  };
  return all;
}
} // namespace

const MeshSpec &mlir::flow::defaultMeshSpec() { return presets().front(); }

SmallVector<StringRef> mlir::flow::meshSpecPresets() {
  SmallVector<StringRef> names;
  for (const MeshSpec &spec : presets())
    names.push_back(spec.name);
  return names;
}

namespace {
/// The deepest nesting of arrays and objects in \p json (strings skipped),
/// stopping early past \p limit: llvm::json's parser recurses once per
/// level, so a hostile file must be measured before it is parsed.
int nestingDepth(StringRef json, int limit) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit)
        return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// A mesh description is a few objects deep and a few hundred bytes long.
constexpr int kMaxMeshSpecDepth = 32;
constexpr uint64_t kMaxMeshSpecBytes = 1 << 20;
} // namespace

std::optional<MeshSpec> mlir::flow::parseMeshSpec(StringRef json,
                                                  std::string &error) {
  if (nestingDepth(json, kMaxMeshSpecDepth) > kMaxMeshSpecDepth) {
    error = "nested more than " + std::to_string(kMaxMeshSpecDepth) +
            " levels deep; a mesh description is an object of axes and a "
            "device";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value) {
    error = "not JSON: " + llvm::toString(value.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = value->getAsObject();
  if (!root) {
    error = "a mesh description is a JSON object";
    return std::nullopt;
  }
  // A positive number at `key` of `object`, in `unit`s.
  auto positive = [&](const llvm::json::Object &object, StringRef key,
                      StringRef where, double unit,
                      double &out) -> bool {
    std::optional<double> n = object.getNumber(key);
    // (Finite in the unit too: 1e300 GB/s is no bandwidth.)
    if (!n || !std::isfinite(*n) || *n <= 0 || !std::isfinite(*n * unit)) {
      error = (where + " needs \"" + key + "\", a positive number").str();
      return false;
    }
    out = *n * unit;
    return true;
  };
  MeshSpec spec;
  spec.name = root->getString("name").value_or("custom").str();
  const llvm::json::Array *axes = root->getArray("axes");
  if (!axes || axes->empty()) {
    error = "a mesh description needs \"axes\", a list of "
            "{\"bandwidth_gb_per_s\", \"latency_us\"} (outermost axis first)";
    return std::nullopt;
  }
  for (auto [i, entry] : llvm::enumerate(*axes)) {
    const llvm::json::Object *axis = entry.getAsObject();
    std::string where = "axis " + std::to_string(i);
    if (!axis) {
      error = where + " is not an object";
      return std::nullopt;
    }
    MeshSpec::Axis a;
    if (!positive(*axis, "bandwidth_gb_per_s", where, kGB, a.bandwidth))
      return std::nullopt;
    // A latency may be zero.
    std::optional<double> latency = axis->getNumber("latency_us");
    if (!latency || !std::isfinite(*latency) || *latency < 0) {
      error = where + " needs \"latency_us\", a number >= 0";
      return std::nullopt;
    }
    a.latency = *latency * kUs;
    spec.axes.push_back(a);
  }
  const llvm::json::Object *device = root->getObject("device");
  if (!device) {
    error = "a mesh description needs \"device\": {\"tflops\", "
            "\"memory_gib\"}";
    return std::nullopt;
  }
  if (!positive(*device, "tflops", "device", 1e12, spec.flops) ||
      !positive(*device, "memory_gib", "device", kGiB, spec.memoryBytes))
    return std::nullopt;
  if (device->get("memory_gb_per_s") &&
      !positive(*device, "memory_gb_per_s", "device", kGB,
                spec.memoryBandwidth))
    return std::nullopt;
  return spec;
}

std::optional<MeshSpec> mlir::flow::loadMeshSpec(StringRef nameOrPath,
                                                 std::string &error) {
  for (const MeshSpec &spec : presets())
    if (spec.name == nameOrPath)
      return spec;
  // Only a regular file of a sensible size is read: a FIFO would wait for
  // a writer and a device such as /dev/zero never ends.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(nameOrPath, status) &&
      llvm::sys::fs::exists(status)) {
    if (status.type() != llvm::sys::fs::file_type::regular_file) {
      error = "'" + nameOrPath.str() +
              "' is not a regular file: a mesh description is read from a "
              "JSON file";
      return std::nullopt;
    }
    if (status.getSize() > kMaxMeshSpecBytes) {
      error = "'" + nameOrPath.str() + "' is " +
              std::to_string(status.getSize()) +
              " bytes: a mesh description is a JSON file of at most " +
              std::to_string(kMaxMeshSpecBytes) + " bytes";
      return std::nullopt;
    }
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(nameOrPath);
  if (!file) {
    std::string names;
    for (StringRef name : meshSpecPresets())
      names += (names.empty() ? "" : ", ") + name.str();
    error = "'" + nameOrPath.str() + "' is neither a preset (" + names +
            ") nor a readable file";
    return std::nullopt;
  }
  std::optional<MeshSpec> spec = parseMeshSpec((*file)->getBuffer(), error);
  if (!spec)
    error = nameOrPath.str() + ": " + error;
  return spec;
}
