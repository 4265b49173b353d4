//===- FuzzSafeTensors.cpp - libFuzzer target for safetensors -------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// SafeTensorsFile::parse on the input bytes, then every tensor it lists is
// looked up by name and each of its bytes read (ASan reports a tensor that
// points outside the input).
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/SafeTensors.h"

#include <cstdint>
#include <cstdlib>

using namespace flow::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StatusOr<std::unique_ptr<SafeTensorsFile>> file =
      SafeTensorsFile::parse(data, size);
  if (!file)
    return 0;
  volatile uint8_t sink = 0;
  for (const auto &[name, tensor] : (*file)->tensors()) {
    if ((*file)->find(name) != &tensor)
      abort();
    if (tensor.size > 0 &&
        (tensor.data < data || tensor.data + tensor.size > data + size))
      abort();
    uint64_t elements = 1;
    for (int64_t dim : tensor.shape) {
      if (dim < 0)
        abort();
      elements *= uint64_t(dim);
    }
    if (tensor.supported && elements * dtypeSize(tensor.dtype) != tensor.size)
      abort();
    uint8_t sum = 0;
    for (size_t i = 0; i < tensor.size; ++i)
      sum += tensor.data[i];
    sink = sink + sum;
    (void)tensor.str();
  }
  return 0;
}
