//===- Checksum.h - The .fbin checksum --------------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// An executable's `checksum` field holds FNV-1a 64 over every byte of the
// file, with the field's own eight bytes read as zeros: one changed byte
// anywhere (metadata, padding, kernel library, constants) is a mismatch.
// Header-only, so that writers of .fbin files (the compiler, tests, fuzz
// targets) stamp files without linking the runtime.
//
// The checksum catches corruption, not forgery: anyone can recompute it.
// An executable holds native code and is to be trusted like a shared library
// (see docs/compile-and-run.md, "Trust").
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_CHECKSUM_H
#define FLOW_RUNTIME_CHECKSUM_H

#include "flow/runtime/executable_generated.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

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

/// The byte offset of the `checksum` field in the executable at \p data, or
/// nothing when the field is absent. \p data must hold a buffer the
/// FlatBuffers verifier accepted (or one the writer just finished).
inline std::optional<size_t> checksumFieldOffset(const uint8_t *data) {
  const auto *table =
      reinterpret_cast<const flatbuffers::Table *>(fbs::GetExecutable(data));
  const uint8_t *field = table->GetAddressOf(fbs::Executable::VT_CHECKSUM);
  if (!field)
    return std::nullopt;
  return static_cast<size_t>(field - data);
}

/// The checksum of the \p size-byte file at \p data whose checksum field is
/// at \p fieldOffset (with fieldOffset + 8 <= size).
inline uint64_t fileChecksum(const uint8_t *data, size_t size,
                             size_t fieldOffset) {
  static const uint8_t kZeros[8] = {};
  uint64_t hash = fnv1a64(data, fieldOffset);
  hash = fnv1a64(kZeros, sizeof(kZeros), hash);
  return fnv1a64(data + fieldOffset + 8, size - fieldOffset - 8, hash);
}

/// Writes the checksum of the finished executable at \p data into its
/// checksum field. Returns false when the file has no checksum field (the
/// writer must store a non-default placeholder so that the field exists).
inline bool stampChecksum(uint8_t *data, size_t size) {
  std::optional<size_t> offset = checksumFieldOffset(data);
  if (!offset || *offset + 8 > size)
    return false;
  uint64_t hash = fileChecksum(data, size, *offset);
  std::memcpy(data + *offset, &hash, sizeof(hash)); // little-endian file
  return true;
}

/// A placeholder for the checksum field while the file is built: any value
/// but the schema default (0), which FlatBuffers would leave out.
constexpr uint64_t kChecksumPlaceholder = ~0ull;

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_CHECKSUM_H
