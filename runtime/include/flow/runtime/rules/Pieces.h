//===- Pieces.h - The pieces of a dimension split over devices --*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A rule the compiler and the runtime both apply, written once: a
// dimension of n elements split over `parts` devices is cut as evenly as it
// can be, in device order, the first n % parts pieces one element longer.
// The compiler's localPiece and the runtime's (flow/runtime/Executable.h),
// the runtime's collectives and the checks of a collective's shapes all
// follow it. Header-only and plain C++17: the compiler includes it without
// linking the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_PIECES_H
#define FLOW_RUNTIME_RULES_PIECES_H

#include <algorithm>
#include <cstdint>

namespace flow {
namespace rules {

/// The length of piece `index` (0 <= index < parts) of `n` elements cut
/// into `parts` pieces: n / parts, one more for the first n % parts pieces
/// (so 0 for the last ones where n < parts).
inline int64_t pieceSize(int64_t n, int64_t parts, int64_t index) {
  return n / parts + (index < n % parts ? 1 : 0);
}

/// Where piece `index` of `n` elements cut into `parts` pieces starts: the
/// lengths of the pieces before it.
inline int64_t pieceOffset(int64_t n, int64_t parts, int64_t index) {
  return index * (n / parts) + std::min(index, n % parts);
}

/// Whether `piece` can be one device's piece of `whole` elements cut into
/// `parts` pieces: floor(whole / parts) or ceil(whole / parts) long.
inline bool isPiece(int64_t piece, int64_t whole, int64_t parts) {
  return piece == whole / parts || piece == (whole + parts - 1) / parts;
}

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_PIECES_H
