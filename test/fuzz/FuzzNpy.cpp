//===- FuzzNpy.cpp - libFuzzer target for the .npy parser -----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// parseNpy on the input bytes. Any error Status is fine; a crash, a
// sanitizer report or a tensor whose data does not match its shape is a bug.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Npy.h"

#include <cstdint>
#include <cstdlib>

using namespace flow::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StatusOr<HostTensor> tensor = parseNpy(data, size, "fuzz.npy");
  if (!tensor) {
    if (tensor.status().message().find("fuzz.npy") == std::string::npos)
      abort(); // Every error names the file.
    return 0;
  }
  int64_t elements = tensor->numElements();
  if (elements < 0 ||
      tensor->data.size() != uint64_t(elements) * dtypeSize(tensor->dtype))
    abort();
  // A parsed tensor serializes and parses back to the same tensor.
  std::vector<uint8_t> again = serializeNpy(*tensor);
  StatusOr<HostTensor> back = parseNpy(again.data(), again.size(), "again");
  if (!back || back->dtype != tensor->dtype || back->shape != tensor->shape ||
      back->data != tensor->data)
    abort();
  return 0;
}
