#!/usr/bin/env bash
#===- test/gpu/run.sh - The GPU check: numerics and timings against PyTorch -===#
#
# On a machine with an NVIDIA GPU, its driver, CMake, a C++ compiler and
# PyTorch (no MLIR, no network), from the repository root:
#
#   test/gpu/run.sh KIT [RESULTS [CHECK_ARGS...]]
#
# KIT comes from `python test/gpu/prepare.py KIT` on a machine with Flow's
# compiler. This builds runtime/ (with the kit's ready-made schema header
# and FlatBuffers/CBLAS/NCCL/cuDNN headers where the machine lacks them; the kit's
# own flow-run if that build fails), then runs test/gpu/check.py: every
# case's output against PyTorch on the GPU, BERT-base and ResNet-50 timed
# against eager and torch.compile, GEMM TFLOP/s against torch.matmul, and
# every collective under mpirun on NCCL where the machine has the GPUs and
# an MPI launcher (NCCL and cuDNN: the system's, else PyTorch's; FLOW_NCCL,
# FLOW_CUDNN). All
# results go to RESULTS (default KIT/gpu-results.txt). It stops timing
# after 7 minutes (the whole run fits in 8). Exit status 1 if any case
# failed its tolerance.
#
#===----------------------------------------------------------------------===#
set -uo pipefail
kit=$(cd "${1:?usage: test/gpu/run.sh KIT [RESULTS]}" && pwd) || exit 2
results=${2:-$kit/gpu-results.txt}
shift $(( $# < 2 ? $# : 2 ))
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLOW_GPU_RUNTIME_BUILD:-/tmp/flow-gpu-runtime}
start=$(date +%s)
python=${FLOW_GPU_PYTHON:-$(command -v python3 || command -v python)}

# FLOW_GPU_KIT_HEADERS=1 takes the kit's headers even where the machine has
# its own (to try that build where the kit is made).
own() { [ -z "${FLOW_GPU_KIT_HEADERS:-}" ] && "$@" >/dev/null 2>&1; }
# Whether any of the files exists.
any() { for f; do [ -e "$f" ] && return 0; done; return 1; }
flags=(-DFLOW_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release)
if ! own command -v flatc; then
  flags+=("-DFLOW_SCHEMA_HEADER_PREBUILT=$kit/buildkit/executable_generated.h")
fi
if ! own test -e /usr/include/flatbuffers/flatbuffers.h; then
  flags+=("-DFLOW_FLATBUFFERS_INCLUDE_DIR=$kit/buildkit/include")
fi
if ! own any /usr/include/cblas.h /usr/include/*/cblas.h; then
  # CPU GEMMs are not run here: the path only has to name a file to open.
  flags+=("-DFLOW_CBLAS_INCLUDE_DIR=$kit/buildkit/include"
          "-DFLOW_OPENBLAS_LIBRARY=/usr/lib/libopenblas.so.0")
fi
if ! own any /usr/include/nccl.h /usr/local/cuda/include/nccl.h; then
  flags+=("-DFLOW_NCCL_INCLUDE_DIR=$kit/buildkit/include")
fi
if ! own any /usr/include/cudnn.h /usr/local/cuda/include/cudnn.h; then
  flags+=("-DFLOW_CUDNN_INCLUDE_DIR=$kit/buildkit/include")
fi
# NCCL's and cuDNN's libraries: the system's, else those PyTorch's wheels
# bring (FLOW_NCCL, FLOW_CUDNN).
wheel_library() {
  "$python" -c 'import glob, site, sys
for d in site.getsitepackages() + [site.getusersitepackages()]:
    for f in glob.glob(d + "/nvidia/" + sys.argv[1]):
        print(f); sys.exit()' "$1" 2>/dev/null
}
if [ -z "${FLOW_NCCL:-}" ] && ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2
then
  nccl=$(wheel_library "nccl/lib/libnccl.so.2")
  [ -n "$nccl" ] && export FLOW_NCCL=$nccl
fi
if [ -z "${FLOW_CUDNN:-}" ] && ! ldconfig -p 2>/dev/null | grep -q libcudnn.so.9
then
  cudnn=$(wheel_library "cudnn/lib/libcudnn.so.9")
  [ -n "$cudnn" ] && export FLOW_CUDNN=$cudnn
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
echo "== building runtime/ in $build"
if cmake -S "$root/runtime" -B "$build" "${generator[@]}" "${flags[@]}" \
     >"$build.log" 2>&1 &&
   cmake --build "$build" --target flow-run -j "$(nproc)" >>"$build.log" 2>&1
then
  flow_run=$build/bin/flow-run
  built="runtime/ built here ($(grep -o 'CUDA device built.*' "$build.log" |
                                  head -1))"
else
  tail -20 "$build.log"
  flow_run=$kit/flow-run
  built="runtime/ did not build here (log: $build.log); the kit's flow-run"
fi
echo "== $built ($(( $(date +%s) - start )) s)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>/dev/null || echo "(no nvidia-smi)"
budget=$(( 450 - ($(date +%s) - start) ))
"$python" "$root/test/gpu/check.py" "$kit" --flow-run "$flow_run" \
  --results "$results" --bench --budget "$budget" "$@"
status=$?
sed -i "1i runtime: $built" "$results"
echo "== done in $(( $(date +%s) - start )) s: $results"
exit $status
