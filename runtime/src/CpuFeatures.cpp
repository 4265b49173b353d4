//===- CpuFeatures.cpp - What this CPU runs --------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/CpuFeatures.h"

#include <cpuid.h>

using namespace flow::runtime;

namespace {
/// AVX-NE-CONVERT, which the compiler's builtin does not name yet:
/// CPUID.(7,1):EDX[5], with the OS saving AVX state.
bool hasAvxNeConvert() {
  unsigned eax, ebx, ecx, edx;
  if (!__builtin_cpu_supports("avx") ||
      !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
    return false;
  return edx & (1u << 5);
}
} // namespace

bool flow::runtime::cpuHasFeature(const std::string &name) {
  __builtin_cpu_init();
  // __builtin_cpu_supports takes only string literals.
#define FLOW_FEATURE(literal)                                                  \
  if (name == literal)                                                         \
    return __builtin_cpu_supports(literal);
  FLOW_FEATURE("sse4.2")
  FLOW_FEATURE("popcnt")
  FLOW_FEATURE("movbe")
  FLOW_FEATURE("lzcnt")
  FLOW_FEATURE("bmi")
  FLOW_FEATURE("bmi2")
  FLOW_FEATURE("avx")
  FLOW_FEATURE("avx2")
  FLOW_FEATURE("fma")
  FLOW_FEATURE("f16c")
  FLOW_FEATURE("avxvnni")
  FLOW_FEATURE("avx512f")
  FLOW_FEATURE("avx512cd")
  FLOW_FEATURE("avx512bw")
  FLOW_FEATURE("avx512dq")
  FLOW_FEATURE("avx512vl")
  FLOW_FEATURE("avx512ifma")
  FLOW_FEATURE("avx512vbmi")
  FLOW_FEATURE("avx512vbmi2")
  FLOW_FEATURE("avx512vnni")
  FLOW_FEATURE("avx512bitalg")
  FLOW_FEATURE("avx512vpopcntdq")
  FLOW_FEATURE("avx512bf16")
  FLOW_FEATURE("avx512fp16")
  FLOW_FEATURE("gfni")
  FLOW_FEATURE("vaes")
  FLOW_FEATURE("vpclmulqdq")
#undef FLOW_FEATURE
  if (name == "avxneconvert")
    return hasAvxNeConvert();
  return false;
}

std::vector<std::string>
flow::runtime::missingCpuFeatures(const std::vector<std::string> &wanted) {
  std::vector<std::string> missing;
  for (const std::string &name : wanted)
    if (!cpuHasFeature(name))
      missing.push_back(name);
  return missing;
}
