//===- FuzzMeshSpec.cpp - libFuzzer target for mesh descriptions ----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// parseMeshSpec on the input bytes, as `--mesh-spec=FILE` reads a JSON mesh
// description: any error is fine; a crash, a sanitizer report (deep nesting
// once overflowed the JSON parser's stack) or an accepted description with
// a non-positive or non-finite figure is a bug.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/MeshSpec.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

using namespace mlir::flow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  std::optional<MeshSpec> spec = parseMeshSpec(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), error);
  if (!spec) {
    if (error.empty())
      abort();
    return 0;
  }
  if (spec->axes.empty() || !(spec->flops > 0) || !std::isfinite(spec->flops) ||
      !(spec->memoryBytes > 0))
    abort();
  for (const MeshSpec::Axis &axis : spec->axes)
    if (!(axis.bandwidth > 0) || !std::isfinite(axis.bandwidth) ||
        !(axis.latency >= 0))
      abort();
  return 0;
}
