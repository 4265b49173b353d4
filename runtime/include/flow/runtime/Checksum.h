//===- Checksum.h - The .fbin checksum --------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// FNV-1a 64, the hash an executable's `checksum` field holds: over the bytes
// of `kernel_library` followed by the `data` bytes of every constant, in
// order. Header-only, so that writers of .fbin files (the compiler) can use it
// without linking the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_CHECKSUM_H
#define FLOW_RUNTIME_CHECKSUM_H

#include <cstddef>
#include <cstdint>

namespace flow {
namespace runtime {

/// The FNV-1a 64 offset basis: the hash of no bytes.
constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;

/// Continues the FNV-1a 64 hash \p hash over \p size bytes at \p data; start
/// with kFnv1a64Basis and chain calls to hash several blocks as one stream.
inline uint64_t fnv1a64(const void *data, size_t size,
                        uint64_t hash = kFnv1a64Basis) {
  constexpr uint64_t kPrime = 1099511628211ull;
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * kPrime;
  return hash;
}

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_CHECKSUM_H
