//===- Sha256.h - SHA-256 of a byte range -----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// SHA-256 (FIPS 180-4), for the allow-list of trusted executables: the digest
// is the one `sha256sum` prints, so users list files with that tool.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SHA256_H
#define FLOW_RUNTIME_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace flow {
namespace runtime {

/// The SHA-256 digest of \p size bytes at \p data, as 64 lowercase hex
/// digits.
std::string sha256Hex(const void *data, size_t size);

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SHA256_H
