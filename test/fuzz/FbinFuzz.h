//===- FbinFuzz.h - Shared code of the .fbin fuzz targets -------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A mutated .fbin almost never carries a valid checksum, so the loader would
// refuse it at once and the checks behind the checksum would never be
// fuzzed. prepareInput() therefore re-stamps the checksum of an input the
// FlatBuffers verifier accepts, but only when loading it cannot dlopen code
// that was not vetted:
//
//  - it has no kernels (the loader dlopens nothing), or
//  - each of its kernel libraries is byte-identical to a trusted library:
//    the test kernel library built beside the targets (FLOW_FUZZ_KERNELS),
//    or the library of a checked-in seed (FLOW_FUZZ_SEED_DIRS) whose own
//    checksum is valid.
//
// Any other input is loaded with a checksum that is wrong (if it is right,
// libFuzzer forged it from the loader's comparison, and a bit of it is
// flipped), so the checksum refuses it. A forged kernel library is the
// documented trust boundary (a malformed ELF can crash dlopen), not a bug
// for the fuzzers to report.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_TEST_FUZZ_FBINFUZZ_H
#define FLOW_TEST_FUZZ_FBINFUZZ_H

#include "flow/runtime/Checksum.h"
#include "flow/runtime/executable_generated.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <dirent.h>

namespace flow {
namespace fuzz {

inline std::vector<uint8_t> readFileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// Whether \p data holds a buffer the loader's FlatBuffers verifier accepts
/// (same limits as runtime/src/ExecutableLoad.cpp).
inline bool verifiesAsExecutable(const uint8_t *data, size_t size) {
  if (size < 8 || size >= FLATBUFFERS_MAX_BUFFER_SIZE ||
      !flatbuffers::BufferHasIdentifier(data, fbs::ExecutableIdentifier()))
    return false;
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/10000000);
  return fbs::VerifyExecutableBuffer(verifier);
}

/// The kernel libraries a re-stamped input may carry.
class TrustedLibraries {
public:
  /// Reads the test kernel library and the libraries of the seeds.
  void load() {
    add(readFileBytes(FLOW_FUZZ_KERNELS));
    std::string dirs = FLOW_FUZZ_SEED_DIRS;
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos)
        end = dirs.size();
      addSeeds(dirs.substr(start, end - start));
      start = end + 1;
    }
  }

  /// load(), stopping the fuzzer when the test kernel library is missing
  /// (rebuild it): every fbin target's LLVMFuzzerInitialize.
  void loadOrAbort() {
    load();
    if (size() == 0)
      abort();
  }

  bool contains(const uint8_t *data, size_t size) const {
    return libraries.count(std::vector<uint8_t>(data, data + size)) != 0;
  }
  size_t size() const { return libraries.size(); }

private:
  void add(std::vector<uint8_t> bytes) {
    if (!bytes.empty())
      libraries.insert(std::move(bytes));
  }
  /// Adds the library of every file in \p dir that has kernels and a valid
  /// checksum. (A file without kernels may have been re-stamped around any
  /// library, so its library is not trusted; one with kernels was either
  /// checked in or re-stamped around a library already trusted.)
  void addSeeds(const std::string &dir) {
    DIR *d = opendir(dir.c_str());
    if (!d)
      return;
    while (const dirent *entry = readdir(d)) {
      if (entry->d_name[0] == '.')
        continue;
      std::vector<uint8_t> file = readFileBytes(dir + "/" + entry->d_name);
      if (!verifiesAsExecutable(file.data(), file.size()))
        continue;
      std::optional<size_t> offset = runtime::checksumFieldOffset(file.data());
      if (!offset || *offset + 8 > file.size())
        continue;
      uint64_t stored;
      std::memcpy(&stored, file.data() + *offset, sizeof(stored));
      if (stored != runtime::fileChecksum(file.data(), file.size(), *offset))
        continue;
      const fbs::Executable *exe = fbs::GetExecutable(file.data());
      if (exe->kernels() && exe->kernels()->size() > 0 &&
          exe->kernel_libraries())
        for (const fbs::KernelLibrary *library : *exe->kernel_libraries())
          if (library->data())
            add(std::vector<uint8_t>(library->data()->begin(),
                                     library->data()->end()));
    }
    closedir(d);
  }

  std::set<std::vector<uint8_t>> libraries;
};

/// A copy of the input, its checksum re-stamped when that is safe (see the
/// file comment).
inline std::vector<uint8_t> prepareInput(const uint8_t *data, size_t size,
                                         const TrustedLibraries &trusted) {
  std::vector<uint8_t> bytes(data, data + size);
  // Safe to load: it verifies, and it dlopens nothing or a trusted library.
  auto safe = [&](const std::vector<uint8_t> &file) {
    if (!verifiesAsExecutable(file.data(), file.size()))
      return false;
    const fbs::Executable *exe = fbs::GetExecutable(file.data());
    const auto *kernels = exe->kernels();
    if (!kernels || kernels->size() == 0 || !exe->kernel_libraries())
      return true;
    // Every library it holds must be trusted (the loader dlopens the one it
    // takes).
    for (const fbs::KernelLibrary *library : *exe->kernel_libraries()) {
      const auto *data = library->data();
      if (data && data->size() > 0 && !trusted.contains(data->data(),
                                                        data->size()))
        return false;
    }
    return true;
  };
  if (!safe(bytes)) {
    // Never load an untrusted library: the loader's checksum comparison is
    // instrumented, so libFuzzer can copy the expected value into the input
    // (its comparison feedback) and forge the checksum of a mutated
    // library, which dlopen may then crash on. A file whose checksum is
    // right gets one bit of it flipped, so that the loader still refuses
    // it (after the checks before the checksum) and never dlopens it.
    if (verifiesAsExecutable(bytes.data(), bytes.size())) {
      std::optional<size_t> offset =
          runtime::checksumFieldOffset(bytes.data());
      if (offset && *offset + 8 <= bytes.size()) {
        uint64_t stored;
        std::memcpy(&stored, bytes.data() + *offset, sizeof(stored));
        if (stored ==
            runtime::fileChecksum(bytes.data(), bytes.size(), *offset))
          bytes[*offset] ^= 1;
      }
    }
    return bytes;
  }
  // A mutated vtable may put the checksum field inside another field, the
  // kernel library included: stamping would then write into the library
  // and turn a trusted one into a forged one. So the stamped file must be
  // safe too.
  std::vector<uint8_t> stamped = bytes;
  runtime::stampChecksum(stamped.data(), stamped.size());
  return safe(stamped) ? stamped : bytes;
}

} // namespace fuzz
} // namespace flow

#endif // FLOW_TEST_FUZZ_FBINFUZZ_H
