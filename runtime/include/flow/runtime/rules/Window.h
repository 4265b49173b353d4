//===- Window.h - Sliding windows of pooling and convolution ----*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// Rules the compiler and the runtime both apply, written once: how many
// positions a window takes along one axis of a convolution or a pooling
// (the compiler infers result shapes by it, the runtime checks a command's
// output shape by it) and how far a dilated window reaches. Header-only and
// plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_WINDOW_H
#define FLOW_RUNTIME_RULES_WINDOW_H

#include <cstdint>

namespace flow {
namespace rules {

/// The elements a window of `kernel` taps, `dilation` apart, spans.
inline int64_t dilatedWindow(int64_t kernel, int64_t dilation) {
  return dilation * (kernel - 1) + 1;
}

/// The number of positions along one axis of a window of `kernel` taps
/// `dilation` apart, moving by `stride` over `size` elements padded with
/// `before` and `after`: rounded down, or with `ceil` (ceil_mode) up, a
/// partial last window counting unless it would start in the end padding.
/// 0 where the window is larger than the padded input. The caller keeps the
/// padded size and the dilated window in range (no overflow here).
inline int64_t windowExtent(int64_t size, int64_t before, int64_t after,
                            int64_t dilation, int64_t kernel, int64_t stride,
                            bool ceil = false) {
  int64_t span = size + before + after - dilatedWindow(kernel, dilation);
  if (span < 0)
    return 0;
  int64_t out = span / stride + 1;
  if (ceil) {
    out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= size + before)
      --out;
  }
  return out;
}

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_WINDOW_H
