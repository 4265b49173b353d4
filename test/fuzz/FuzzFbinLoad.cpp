//===- FuzzFbinLoad.cpp - libFuzzer target for the .fbin loader -----------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Executable::loadBytes on the input (re-stamped as FbinFuzz.h explains),
// then the signatures of a loaded executable are read back. Any error
// Status is fine; a crash or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "FbinFuzz.h"

#include "flow/runtime/Executable.h"

#include <cstdint>
#include <cstdlib>

using namespace flow;
using namespace flow::runtime;

static fuzz::TrustedLibraries trusted;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  trusted.loadOrAbort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes = fuzz::prepareInput(data, size, trusted);
  StatusOr<std::unique_ptr<Executable>> exe = Executable::loadBytes(bytes);
  if (!exe)
    return 0;
  for (const FunctionSignature &sig : (*exe)->functions()) {
    for (const TensorSpec &spec : sig.inputs)
      if (spec.byteSize() > kMaxBufferBytes)
        abort();
    for (const TensorSpec &spec : sig.outputs)
      if (spec.byteSize() > kMaxBufferBytes)
        abort();
    StatusOr<size_t> index = (*exe)->findFunction(sig.name);
    if (!index)
      abort();
  }
  (void)(*exe)->numKernels();
  (void)(*exe)->numConstants();
  return 0;
}
