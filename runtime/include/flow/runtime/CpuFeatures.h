//===- CpuFeatures.h - The instruction sets kernels may need ----*- C++ -*-===//
//
// Part of the Flow project.
//
// A kernel library compiled for one CPU may use instructions another lacks,
// which would end the process with an illegal instruction. The compiler
// records which of the features below its target CPU has (the executable's
// `cpu_features`); the loader refuses, naming them, an executable whose
// features this CPU lacks. The names are LLVM's (and GCC's) x86 feature
// names.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_CPUFEATURES_H
#define FLOW_RUNTIME_CPUFEATURES_H

#include <string>
#include <vector>

namespace flow {
namespace runtime {

/// Every feature the compiler records and the runtime checks.
inline constexpr const char *kCheckedCpuFeatures[] = {
    "sse4.2",       "popcnt",       "movbe",        "lzcnt",
    "bmi",          "bmi2",         "avx",          "avx2",
    "fma",          "f16c",         "avxvnni",      "avxneconvert",
    "avx512f",      "avx512cd",     "avx512bw",     "avx512dq",
    "avx512vl",     "avx512ifma",   "avx512vbmi",   "avx512vbmi2",
    "avx512vnni",   "avx512bitalg", "avx512vpopcntdq", "avx512bf16",
    "avx512fp16",   "gfni",         "vaes",         "vpclmulqdq"};

/// True when this CPU (and the OS, for the wider registers) supports
/// feature \p name; false for names not in kCheckedCpuFeatures.
bool cpuHasFeature(const std::string &name);

/// The features of \p wanted this CPU lacks (names it does not know count
/// as lacking), in \p wanted's order.
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &wanted);

} // namespace runtime
} // namespace flow

#endif // FLOW_RUNTIME_CPUFEATURES_H
