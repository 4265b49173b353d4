//===- FuzzState.cpp - libFuzzer target for the training-state reader -----===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// What `flow-run --state=FILE` (and the Python step's `load`) do with a
// state file before a step runs: SafeTensorsFile::parse, then every tensor
// of an element type Flow runs is copied into a HostTensor and checked as a
// training state (checkStateValue: finite values, a non-negative step count
// and second moments). Any error is fine; a crash or a sanitizer report is
// a bug.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/TrainingState.h"

#include <cstdint>
#include <cstdlib>

using namespace flow::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StatusOr<std::unique_ptr<SafeTensorsFile>> file =
      SafeTensorsFile::parse(data, size);
  if (!file)
    return 0;
  for (const auto &[name, tensor] : (*file)->tensors()) {
    if (!tensor.supported)
      continue;
    HostTensor value;
    value.dtype = tensor.dtype;
    value.shape = tensor.shape;
    value.data.assign(tensor.data, tensor.data + tensor.size);
    Status s = checkStateValue(name, value);
    // An error always says which state.
    if (!s && s.message().find(name) == std::string::npos)
      abort();
  }
  return 0;
}
