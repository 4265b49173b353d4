//===- TrainingState.cpp - What a training state must hold ---------------===//

#include "flow/runtime/TrainingState.h"

#include <cstring>

using namespace flow::runtime;

std::optional<std::pair<uint64_t, std::string>>
flow::runtime::firstNonFinite(const uint8_t *data, uint64_t bytes,
                              DType dtype) {
  auto describe = [](bool nan, bool negative) {
    return std::string(nan ? "nan" : negative ? "-inf" : "inf");
  };
  if (!data)
    return std::nullopt;
  if (dtype == DType::F64) {
    uint64_t n = bytes / 8;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t bits;
      std::memcpy(&bits, data + 8 * i, 8);
      if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull)
        return std::make_pair(i,
                              describe(bits & 0xfffffffffffffull, bits >> 63));
    }
  } else if (dtype == DType::F32) {
    uint64_t n = bytes / 4;
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, data + 4 * i, 4);
      if ((bits & 0x7f800000u) == 0x7f800000u)
        return std::make_pair(i, describe(bits & 0x7fffffu, bits >> 31));
    }
  } else if (dtype == DType::F16 || dtype == DType::BF16) {
    uint16_t expMask = dtype == DType::F16 ? 0x7c00 : 0x7f80;
    uint16_t fracMask = dtype == DType::F16 ? 0x03ff : 0x007f;
    uint64_t n = bytes / 2;
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      if ((bits & expMask) == expMask)
        return std::make_pair(i, describe(bits & fracMask, bits >> 15));
    }
  }
  return std::nullopt;
}

namespace {
bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix.data(),
                      suffix.size()) == 0;
}

/// Element \p i of a float tensor as a double.
double floatAt(const HostTensor &t, uint64_t i) {
  const uint8_t *p = t.data.data();
  switch (t.dtype) {
  case DType::F64: {
    double v;
    std::memcpy(&v, p + 8 * i, 8);
    return v;
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case DType::BF16: {
    uint32_t bits = 0;
    std::memcpy(reinterpret_cast<uint8_t *>(&bits) + 2, p + 2 * i, 2);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case DType::F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    // The sign is all a non-negativity check needs of a finite half.
    return (h & 0x8000) && (h & 0x7fff) ? -1.0 : 1.0;
  }
  default:
    return 0;
  }
}
} // namespace

Status flow::runtime::checkStateValue(const std::string &name,
                                      const HostTensor &value) {
  if (auto bad =
          firstNonFinite(value.data.data(), value.data.size(), value.dtype))
    return Status::error("state '" + name + "' holds " + bad->second +
                         " at element " + std::to_string(bad->first) +
                         ": a training state must be finite");
  if (name == kOptimizerStepState) {
    if (value.dtype != DType::I64 || value.data.size() != 8)
      return Status::ok(); // the type check names the mismatch
    int64_t step;
    std::memcpy(&step, value.data.data(), 8);
    if (step < 0)
      return Status::error("state '" + name + "' is " + std::to_string(step) +
                           ": the optimizer's step count cannot be negative");
    return Status::ok();
  }
  if (endsWith(name, kSecondMomentSuffix)) {
    uint64_t n = value.data.size() / dtypeSize(value.dtype);
    for (uint64_t i = 0; i < n; ++i)
      if (floatAt(value, i) < 0)
        return Status::error(
            "state '" + name + "' is negative at element " + std::to_string(i) +
            " (" + std::to_string(floatAt(value, i)) +
            "): a second moment (a running mean of squared gradients) "
            "cannot be");
  }
  return Status::ok();
}
