//===- Layout.h - The runtime's blocked convolution layout ------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A rule the compiler and the runtime both apply, written once: which
// tensors may be held in the runtime's blocked convolution layout
// (runtime/src/Convolution.h). The compiler marks buffers blocked by it and
// the runtime refuses a command that breaks it. Header-only and plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_LAYOUT_H
#define FLOW_RUNTIME_RULES_LAYOUT_H

#include <cstdint>

namespace flow {
namespace rules {

/// A blocked tensor's channels come in whole blocks of this many (a session
/// blocks them by 16 or 8, both of which divide it).
constexpr int64_t kBlockedChannels = 16;

/// Whether a tensor of `channels` channels may be held blocked.
inline bool blockable(int64_t channels) {
  return channels % kBlockedChannels == 0;
}

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_LAYOUT_H
