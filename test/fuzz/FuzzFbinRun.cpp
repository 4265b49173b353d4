//===- FuzzFbinRun.cpp - libFuzzer target: load and run .fbin files -------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Loads the input (re-stamped as FbinFuzz.h explains) and runs every
// function once on zero-filled inputs of its declared shapes, on one thread.
// Executables whose inputs, outputs and arenas together exceed 16 MiB are
// only loaded. Any error Status is fine; a crash or a sanitizer report is a
// bug: everything a command touches must have been checked at load time.
//
//===----------------------------------------------------------------------===//

#include "FbinFuzz.h"

#include "flow/runtime/Executable.h"
#include "flow/runtime/Session.h"

#include <cstdint>
#include <cstdlib>

using namespace flow;
using namespace flow::runtime;

namespace {
fuzz::TrustedLibraries trusted;

/// The most memory the run of one input may ask for.
constexpr uint64_t kMaxRunBytes = 16u << 20;

/// Adds the bytes of \p specs to \p total; false on overflow.
bool addBytes(const std::vector<TensorSpec> &specs, uint64_t &total) {
  for (const TensorSpec &spec : specs)
    if (__builtin_add_overflow(total, uint64_t(spec.byteSize()), &total))
      return false;
  return true;
}

std::vector<TensorSpec> specsOf(const std::vector<Placement> &placements) {
  std::vector<TensorSpec> specs;
  for (const Placement &p : placements)
    specs.push_back(p.spec);
  return specs;
}

std::vector<HostTensor> zeros(const std::vector<TensorSpec> &specs) {
  std::vector<HostTensor> tensors;
  for (const TensorSpec &spec : specs) {
    HostTensor t;
    t.dtype = spec.dtype;
    t.shape = spec.shape;
    t.data.assign(spec.byteSize(), 0);
    tensors.push_back(std::move(t));
  }
  return tensors;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  trusted.loadOrAbort();
  // Convolutions on Flow's own (instrumented) reference path, not a
  // library's.
  setenv("FLOW_CONV", "reference", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes = fuzz::prepareInput(data, size, trusted);
  StatusOr<std::unique_ptr<Executable>> loaded = Executable::loadBytes(bytes);
  if (!loaded)
    return 0;
  std::shared_ptr<const Executable> exe = std::move(*loaded);
  uint64_t total = 0;
  for (const FunctionSignature &sig : exe->functions()) {
    if (!addBytes(sig.inputs, total) || !addBytes(sig.outputs, total) ||
        !addBytes(specsOf(sig.globalInputs), total) ||
        !addBytes(specsOf(sig.globalOutputs), total) ||
        __builtin_add_overflow(total, sig.arenaSize, &total))
      return 0;
  }
  if (total > kMaxRunBytes)
    return 0;
  RuntimeOptions options;
  options.threads = 1;
  StatusOr<std::unique_ptr<Session>> session = Session::create(exe, options);
  if (!session)
    return 0;
  for (const FunctionSignature &sig : exe->functions()) {
    if (sig.ranks.empty()) {
      StatusOr<std::vector<HostTensor>> out =
          (*session)->run(sig.name, zeros(sig.inputs));
      (void)out;
      if (sig.state.empty())
        continue;
      // Again with the session's state, updated in place.
      std::vector<bool> isState(sig.inputs.size(), false);
      for (const StateSpec &state : sig.state) {
        isState[state.input] = true;
        (void)(*session)->setState(state.name,
                                   zeros({sig.inputs[state.input]})[0]);
      }
      std::vector<TensorSpec> rest;
      for (size_t i = 0; i < sig.inputs.size(); ++i)
        if (!isState[i])
          rest.push_back(sig.inputs[i]);
      out = (*session)->step(sig.name, zeros(rest));
      (void)out;
      continue;
    }
    StatusOr<std::vector<HostTensor>> out =
        (*session)->runGlobal(sig.globalName, zeros(specsOf(sig.globalInputs)));
    (void)out;
  }
  return 0;
}
