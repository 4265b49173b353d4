//===- Bf16.h - bf16, f16 and TF32 rounding and widening -------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// bf16 is the high 16 bits of an f32. f16 (IEEE binary16) has 5 exponent
// and 10 mantissa bits, with subnormals. Rounding is to nearest, ties to
// even, as the compiler's constant folding, oneDNN's and the GPU's
// conversions do; a NaN stays a (quiet) NaN, and an f32 beyond f16's range
// becomes an infinity. TF32 keeps an f32's exponent and the top 10 bits of
// its mantissa.
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

inline float widenF16(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    float magnitude = float(mantissa) * (1.0f / 16777216.0f);
    std::memcpy(&word, &magnitude, sizeof word);
    word |= sign;
  } else if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

inline uint16_t roundToF16(float f) {
  uint32_t word;
  std::memcpy(&word, &f, sizeof word);
  uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: quiet, keeping the top payload bits
    return sign | 0x7e00u | static_cast<uint16_t>((magnitude >> 13) & 0x3ffu);
  if (magnitude >= 0x477ff000u) // 65520 and up (and infinity) round to inf
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    // Below f16's smallest normal (2^-14): a multiple of 2^-24. Scaling by
    // 2^24 is exact; the integer part's rounding is f16's (to nearest,
    // ties to even), and 1024 is the smallest normal's encoding.
    float scaled;
    std::memcpy(&scaled, &magnitude, sizeof scaled);
    scaled *= 16777216.0f;
    uint32_t whole = static_cast<uint32_t>(scaled);
    float rest = scaled - float(whole);
    if (rest > 0.5f || (rest == 0.5f && (whole & 1u)))
      ++whole;
    return sign | static_cast<uint16_t>(whole);
  }
  // Normal: round the 13 dropped bits to nearest, ties to even (a carry
  // moves into the exponent), then rebias the exponent from 127 to 15.
  magnitude += 0xfffu + ((magnitude >> 13) & 1u);
  return sign | static_cast<uint16_t>((magnitude - (112u << 23)) >> 13);
}

/// \p f with its mantissa rounded to TF32's 10 bits (to nearest, ties
/// away from zero, as the GPU's conversion does); NaN and infinity stay.
inline float roundToTf32(float f) {
  uint32_t word;
  std::memcpy(&word, &f, sizeof word);
  if ((word & 0x7f800000u) == 0x7f800000u)
    return f;
  word = (word + 0x1000u) & 0xffffe000u;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

} // namespace detail
} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_SRC_BF16_H
