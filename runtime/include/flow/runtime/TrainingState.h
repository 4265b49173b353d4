//===- TrainingState.h - What a training state must hold -------*- C++ -*-===//
//
// The names flow-apply-optimizer gives an optimizer's state (the compiler
// includes this header, so the names are written once) and the checks the
// runtime makes on a state value before it takes it: a value the update
// cannot start from (a NaN parameter, a negative step count or second
// moment) is refused by name instead of turning the next step into NaN.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_TRAININGSTATE_H
#define FLOW_RUNTIME_TRAININGSTATE_H

#include "flow/runtime/Npy.h"
#include "flow/runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace flow::runtime {

/// AdamW's step count, an i64 scalar shared by every parameter.
inline constexpr std::string_view kOptimizerStepState = "optimizer.step";
/// Suffixes of a parameter's moments: `NAME.exp_avg`, `NAME.exp_avg_sq`
/// (AdamW) and `NAME.momentum_buffer` (SGD with momentum).
inline constexpr std::string_view kFirstMomentSuffix = ".exp_avg";
inline constexpr std::string_view kSecondMomentSuffix = ".exp_avg_sq";
inline constexpr std::string_view kMomentumSuffix = ".momentum_buffer";

/// The first NaN or infinity among \p bytes bytes of \p dtype at \p data:
/// its element index and value as text; nullopt when all are finite (and
/// for non-float types).
std::optional<std::pair<uint64_t, std::string>>
firstNonFinite(const uint8_t *data, uint64_t bytes, DType dtype);

/// Checks \p value as the value of state \p name: every floating element
/// finite, the step count non-negative, a second moment non-negative. The
/// error names the state, the element and the rule.
Status checkStateValue(const std::string &name, const HostTensor &value);

} // namespace flow::runtime

#endif // FLOW_RUNTIME_TRAININGSTATE_H
