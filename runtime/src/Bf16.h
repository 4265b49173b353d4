//===- Bf16.h - bf16 rounding and widening ---------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// bf16 is the high 16 bits of an f32. Rounding is to nearest, ties to even,
// as the compiler's constant folding and oneDNN's conversions do; a NaN
// stays a (quiet) NaN.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_SRC_BF16_H
#define FLOW_RUNTIME_SRC_BF16_H

#include <cstdint>
#include <cstring>

namespace flow {
namespace runtime {
namespace detail {

inline uint16_t roundToBf16(float f) {
  uint32_t word;
  std::memcpy(&word, &f, sizeof word);
  if ((word & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((word >> 16) | 0x40);
  return static_cast<uint16_t>((word + 0x7fffu + ((word >> 16) & 1)) >> 16);
}

inline float widenBf16(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_BF16_H
