#!/usr/bin/env bash
# Configures (once) and builds Flow in build/ with ccache. Extra arguments are
# ninja targets (default: everything the tests need).
#
#   FLOW_BUILD_DIR    the build directory (default build/)
#   FLOW_CMAKE_ARGS   extra cmake options, e.g. "-DFLOW_SANITIZE=address";
#                     when set, cmake runs every time so that they apply to
#                     an existing build directory too
#   FLOW_JOBS         ninja's job count (default: the number of cores)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
BUILD="${FLOW_BUILD_DIR:-$ROOT/build}"
export CCACHE_DIR="${CCACHE_DIR:-$FLOW_CACHE/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Relative paths in the cache key, so a fresh clone elsewhere hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
mkdir -p "$CCACHE_DIR"

# Word-split on purpose: several options in one variable.
read -r -a extra_cmake_args <<< "${FLOW_CMAKE_ARGS:-}"
if [ ! -f "$BUILD/build.ninja" ] || [ ! -f "$BUILD/CMakeCache.txt" ] ||
   ((${#extra_cmake_args[@]})); then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPython3_EXECUTABLE="$FLOW_CACHE/venv/bin/python" \
    ${extra_cmake_args[@]+"${extra_cmake_args[@]}"}
fi

if (($#)); then
  targets=("$@")
else
  targets=(flow-opt flow-compile flow-run flow-runtime-tests flow-support-tests
           flow-conformance-tests
           flow-python FlowDialectDocGen HostDialectDocGen FlowHostPassesDocGen FlowPassesDocGen
           FlowConversionPassesDocGen FlowFusionPassesDocGen
           FlowCodegenCommonPassesDocGen FlowCodegenCPUPassesDocGen
           FlowCodegenCUDAPassesDocGen)
  # The fake-driver tests of the CUDA device, where the toolkit's headers
  # are.
  if grep -q "^build flow-cuda-fake-tests:" "$BUILD/build.ninja"; then
    targets+=(flow-cuda-fake-tests)
  fi
fi
ninja -C "$BUILD" -j "${FLOW_JOBS:-$(nproc)}" "${targets[@]}"
