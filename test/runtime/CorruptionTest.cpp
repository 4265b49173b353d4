//===- CorruptionTest.cpp - Corrupt executables never crash the runtime ---===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Loads thousands of damaged copies of the sample executable: random byte
// edits, truncations, and random values in every field. Each must load or
// fail with a message; whatever loads is run. Run under AddressSanitizer,
// this also checks that neither loading nor running touches memory outside
// its buffers.
//
// Edited files get their checksum recomputed (unless the edit reached the
// kernel library, which would be a forgery), so the checks behind the
// checksum are what is tested. Every file that loads is run: the loader
// holds every dispatch to its kernel's metadata and the metadata to the ABI
// table compiled into the kernel library, so no edit can make a kernel touch
// memory outside its buffers.
//
// FLOW_CORRUPTION_ITERATIONS and FLOW_CORRUPTION_SEED change the number of
// damaged files per test and the random seed, for longer fuzzing sessions.
//
//===----------------------------------------------------------------------===//

#include "FbinBuilder.h"

#include "flow/runtime/Session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <random>

using namespace flow::runtime;
using namespace flow::test;

namespace {

uint64_t envOr(const char *name, uint64_t fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::strtoull(value, nullptr, 10) : fallback;
}

struct Counts {
  int attempts = 0, loaded = 0, ran = 0, runErrors = 0;
};

/// Loads \p bytes and, if that works and is safe, runs every function.
void loadAndRun(std::vector<uint8_t> bytes,
                const std::vector<uint8_t> &original, Counts &counts) {
  ++counts.attempts;
  restampUnlessLibraryChanged(bytes, original);
  StatusOr<std::unique_ptr<Executable>> exe = Executable::loadBytes(bytes);
  if (!exe) {
    EXPECT_FALSE(exe.status().message().empty());
    return;
  }
  ++counts.loaded;
  std::shared_ptr<const Executable> shared = std::move(*exe);
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(shared, RuntimeOptions{2});
  ASSERT_TRUE(session);
  for (const FunctionSignature &sig : shared->functions()) {
    // Keep the allocations of damaged signatures small.
    size_t bytesNeeded = sig.arenaSize;
    for (const TensorSpec &spec : sig.inputs)
      bytesNeeded += spec.byteSize();
    for (const TensorSpec &spec : sig.outputs)
      bytesNeeded += spec.byteSize();
    if (bytesNeeded > (64u << 20))
      continue;
    std::vector<HostTensor> inputs;
    for (const TensorSpec &spec : sig.inputs) {
      HostTensor t;
      t.dtype = spec.dtype;
      t.shape = spec.shape;
      t.data.assign(spec.byteSize(), 0x3f);
      inputs.push_back(std::move(t));
    }
    ++counts.ran;
    StatusOr<std::vector<HostTensor>> out = (*session)->run(sig.name, inputs);
    counts.runErrors += !out;
  }
}

TEST(CorruptionTest, RandomByteEditsAndTruncations) {
  const std::vector<uint8_t> original = build(sampleSpec());
  const auto *library = firstLibrary(fbs::GetExecutable(original.data()));
  size_t libraryBegin = library->data() - original.data();
  size_t libraryEnd = libraryBegin + library->size();
  size_t outside = original.size() - library->size();

  std::mt19937_64 rng(envOr("FLOW_CORRUPTION_SEED", 20240601));
  auto below = [&](uint64_t n) { return n ? rng() % n : 0; };
  Counts counts;
  uint64_t iterations = envOr("FLOW_CORRUPTION_ITERATIONS", 4000);
  for (uint64_t iteration = 0; iteration < iterations; ++iteration) {
    std::vector<uint8_t> bytes = original;
    int edits = 1 + static_cast<int>(below(4));
    for (int e = 0; e < edits; ++e) {
      // Mostly edit the tables; the library is guarded by the checksum.
      size_t pos = below(outside);
      if (below(5) == 0)
        pos = libraryBegin + below(library->size());
      else if (pos >= libraryBegin)
        pos += libraryEnd - libraryBegin;
      size_t length = below(3) == 0 ? 1 + below(8) : 1;
      for (size_t i = pos; i < pos + length && i < bytes.size(); ++i) {
        switch (below(4)) {
        case 0:
          bytes[i] = static_cast<uint8_t>(rng());
          break;
        case 1:
          bytes[i] ^= static_cast<uint8_t>(1u << below(8));
          break;
        case 2:
          bytes[i] = 0;
          break;
        default:
          bytes[i] = 0xff;
          break;
        }
      }
    }
    loadAndRun(bytes, original, counts);
    if (HasFatalFailure())
      return;
  }
  for (size_t length = 0; length < original.size(); length += 5)
    loadAndRun(
        std::vector<uint8_t>(original.begin(), original.begin() + length),
        original, counts);
  // Also with trailing garbage.
  std::vector<uint8_t> longer = original;
  longer.resize(original.size() + 100, 0xa5);
  loadAndRun(longer, original, counts);

  EXPECT_GE(counts.attempts, std::min<int>(iterations, 3000));
  // Some edits land where they change nothing the loader refuses.
  EXPECT_GT(counts.loaded, 0);
  RecordProperty("loaded", counts.loaded);
  RecordProperty("ran", counts.ran);
  std::printf("%d attempts, %d loaded, %d ran (%d run errors)\n",
              counts.attempts, counts.loaded, counts.ran, counts.runErrors);
}

TEST(CorruptionTest, RandomFieldValues) {
  const std::vector<uint8_t> original = build(sampleSpec());
  std::mt19937_64 rng(envOr("FLOW_CORRUPTION_SEED", 7));
  auto below = [&](uint64_t n) { return n ? rng() % n : 0; };
  const int64_t interesting[] = {0,
                                 1,
                                 2,
                                 3,
                                 4,
                                 5,
                                 15,
                                 16,
                                 17,
                                 63,
                                 64,
                                 65,
                                 -1,
                                 -4,
                                 128,
                                 INT_MAX,
                                 INT64_MAX,
                                 INT64_MIN,
                                 int64_t(1) << 32};
  auto value = [&]() -> int64_t {
    return below(3) ? interesting[below(std::size(interesting))]
                    : static_cast<int64_t>(rng());
  };
  auto editRef = [&](std::optional<RefSpec> &ref) {
    if (!ref || below(6) == 0) {
      ref.reset();
      if (below(2))
        ref = RefSpec();
      return;
    }
    switch (below(4)) {
    case 0:
      ref->space = static_cast<Space>(below(5));
      break;
    case 1:
      ref->index = static_cast<uint32_t>(below(3));
      break;
    case 2:
      ref->offset = static_cast<uint64_t>(value());
      break;
    default:
      ref->size = static_cast<uint64_t>(value());
      break;
    }
  };

  Counts counts;
  uint64_t iterations = envOr("FLOW_CORRUPTION_ITERATIONS", 3000);
  for (uint64_t iteration = 0; iteration < iterations; ++iteration) {
    ExecutableSpec spec = sampleSpec();
    FunctionSpec &f = spec.functions[0];
    int edits = 1 + static_cast<int>(below(3));
    for (int e = 0; e < edits; ++e) {
      switch (below(8)) {
      case 0: {
        TypeSpec &t = below(2) ? f.inputs[below(2)] : f.outputs[below(2)];
        if (below(2))
          t.dtype = static_cast<DType>(below(7));
        else if (!t.shape.empty())
          t.shape[below(t.shape.size())] = value();
        break;
      }
      case 1:
        f.arenaSize = static_cast<uint64_t>(value());
        break;
      case 2: {
        auto &d = std::get<DispatchSpec>(f.commands[below(2) ? 0 : 2]);
        d.work = static_cast<uint64_t>(value());
        d.maxWorkgroups = static_cast<uint32_t>(value());
        break;
      }
      case 3:
      case 4:
      case 5: {
        GemmSpec &g = std::get<GemmSpec>(f.commands[1]);
        switch (below(7)) {
        case 0:
          g.m = value();
          break;
        case 1:
          g.n = value();
          break;
        case 2:
          g.k = value();
          break;
        case 3:
          g.transposeA = below(2);
          g.transposeB = below(2);
          break;
        case 4: {
          size_t rank = below(3);
          g.batchShape.resize(rank);
          g.aBatchStrides.resize(rank + (below(8) == 0));
          g.bBatchStrides.resize(rank);
          for (int64_t &v : g.batchShape)
            v = below(2) ? static_cast<int64_t>(below(4)) : value();
          for (int64_t &v : g.aBatchStrides)
            v = below(2) ? static_cast<int64_t>(below(20)) : value();
          for (int64_t &v : g.bBatchStrides)
            v = below(2) ? static_cast<int64_t>(below(20)) : value();
          break;
        }
        default: {
          std::optional<RefSpec> *refs[] = {&g.a, &g.b, &g.c};
          editRef(*refs[below(3)]);
          break;
        }
        }
        break;
      }
      case 6: {
        CopySpec &c = std::get<CopySpec>(f.commands[3]);
        editRef(below(2) ? c.src : c.dst);
        break;
      }
      default:
        spec.constants[0].resize(below(2) ? below(128) : 64);
        break;
      }
    }
    loadAndRun(build(spec), original, counts);
    if (HasFatalFailure())
      return;
  }
  EXPECT_GT(counts.ran, static_cast<int>(iterations / 30));
  std::printf("%d attempts, %d loaded, %d ran (%d run errors)\n",
              counts.attempts, counts.loaded, counts.ran, counts.runErrors);
}

} // namespace
