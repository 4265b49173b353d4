#!/usr/bin/env bash
#===- test/gpu/run.sh - The GPU check: numerics and timings against PyTorch -===#
#
# On a machine with an NVIDIA GPU, its driver, CMake, a C++ compiler and
# PyTorch (no MLIR, no network), from the repository root:
#
#   test/gpu/run.sh KIT [RESULTS [CHECK_ARGS...]]
#
# KIT comes from `python test/gpu/prepare.py KIT` on a machine with Flow's
# compiler. This builds runtime/, finds the libraries the runtime opens,
# then runs test/gpu/check.py: every case's output against PyTorch on the
# GPU first, then BERT-base and ResNet-50 timed against eager PyTorch and
# GEMM TFLOP/s against torch.matmul, then torch.compile, each section
# within its own time budget (check.py --help). RESULTS (default
# KIT/gpu-results.jsonl) gets one JSON line per outcome as it comes, and
# RESULTS with the suffix .md the summary table; both are written even when
# a step fails part way (a previous run's are kept as *.previous).
# CHECK_ARGS go to check.py (--quick: under 3 minutes; the full run, this
# build included, under 7 minutes on one H100). Exit status 1 if any case
# failed.
#
# The build: with the machine's flatc and FlatBuffers headers when both
# are of one version, else the kit's generated schema header and the
# FlatBuffers headers it was generated for; the machine's CBLAS, NCCL and
# cuDNN headers, else the kit's; if runtime/ does not build (or builds
# without the CUDA device), the kit's own flow-run (built without MPI).
#
# The libraries: the runtime opens libcuda.so.1, libcublasLt.so.<CUDA
# major>, libcudnn.so.<cuDNN major> and libnccl.so.<NCCL major> of the
# headers it was built with, or the paths in FLOW_CUDA_DRIVER,
# FLOW_CUBLASLT, FLOW_CUDNN and FLOW_NCCL. This looks for each (unless its
# variable is set) in the CUDA toolkit's lib64, on the library path
# (LD_LIBRARY_PATH, ldconfig -p) and in pip's nvidia-* packages (and
# PyTorch's lib) of the Python that runs check.py, and sets the variable
# to what it finds. A library it cannot find is named in the results, and
# the cases that need it are reported as skipped with the reason (no
# GEMM cases without cuBLASLt); the others still run.
#
# Environment: FLOW_GPU_PYTHON (the Python with PyTorch; default: python3
# or python, the first that imports torch),
# FLOW_GPU_RUNTIME_BUILD (the build folder; default /tmp/flow-gpu-runtime),
# FLOW_GPU_KIT_HEADERS=1 (build with the kit's headers even where the
# machine has its own), FLOW_GPU_SECONDS (the whole run's limit; default
# 400, 170 with --quick).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: test/gpu/run.sh KIT [RESULTS [CHECK_ARGS...]]" >&2
  echo "(KIT: a folder made by test/gpu/prepare.py)" >&2
  exit 2
fi
kit=$(cd "$1" && pwd)
results=${2:-$kit/gpu-results.jsonl}
shift $(( $# < 2 ? $# : 2 ))
case $results in
  /*) ;;
  *) results=$PWD/$results ;;
esac
table=${results%.*}.md
[ "$table" = "$results" ] && table=$results.table.md
# A previous run's results are kept (as *.previous), never overwritten.
for file in "$results" "$table"; do
  if [ -e "$file" ]; then
    mv -f "$file" "$file.previous"
  fi
done
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLOW_GPU_RUNTIME_BUILD:-/tmp/flow-gpu-runtime}
start=$(date +%s)
# The Python that runs check.py: FLOW_GPU_PYTHON, else the first of python3
# and python that imports torch.
python=${FLOW_GPU_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3 python; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    [ -n "$python" ] || python=$(command -v "$candidate")
    if "$candidate" -c "import torch" >/dev/null 2>&1; then
      python=$(command -v "$candidate")
      break
    fi
  done
fi
quick=0
for argument in "$@"; do
  [ "$argument" = --quick ] && quick=1
done
if [ "$quick" = 1 ]; then
  limit=${FLOW_GPU_SECONDS:-170}
else
  limit=${FLOW_GPU_SECONDS:-400}
fi
elapsed() { echo $(( $(date +%s) - start )); }

# Lines for the results' header (check.py --note) and libraries the
# runtime cannot open here (check.py --unavailable).
notes=()
unavailable=()
note() { notes+=(--note "$1=$2"); echo "== $1: $2"; }
# Library $1 cannot be opened: $2 (short, for each case that needs it),
# $3 (the details, for the header).
missing() {
  unavailable+=(--unavailable "$1=$2")
  note "$1" "MISSING: $2${3:+; $3}"
}

# Whatever fails part way, the results say how far the run got: a JSON line
# from run.sh and a table, unless check.py wrote its summary.
step="starting"
json_string() {
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t\r' '   '
}
on_exit() {
  local status=$?
  if [ -s "$results" ] && grep -q '"record": "summary"' "$results"; then
    return
  fi
  local why="run.sh stopped at: $step (exit status $status)"
  mkdir -p "$(dirname "$results")"
  printf '{"record": "run.sh", "section": "check", "case": "(run.sh)", "precision": "", "status": "FAIL", "why": "%s"}\n' \
    "$(json_string "$why")" >>"$results"
  {
    echo "# Flow GPU check"
    echo
    local i
    for (( i = 1; i < ${#notes[@]}; i += 2 )); do
      echo "- ${notes[i]/=/: }"
    done
    echo
    echo "**$why**"
    echo
    echo "| case | status |"
    echo "|---|---|"
    sed -n 's/.*"case": "\([^"]*\)".*"status": "\([^"]*\)".*/| \1 | \2 |/p' \
      "$results"
  } >"$table"
  echo "== $why; results: $results, $table" >&2
}
trap on_exit EXIT

#===----------------------------------------------------------------------===#
# Building runtime/
#===----------------------------------------------------------------------===#

step="choosing the headers"
# FLOW_GPU_KIT_HEADERS=1 takes the kit's headers even where the machine has
# its own (to try that build where the kit is made).
own() { [ -z "${FLOW_GPU_KIT_HEADERS:-}" ] && "$@" >/dev/null 2>&1; }
# Whether any of the files exists.
any() { for f; do [ -e "$f" ] && return 0; done; return 1; }
# The value of `#define $2 N` in header $1 (nothing when there is none).
define() {
  [ -f "$1" ] || return 0
  sed -n "s/^[[:space:]]*#[[:space:]]*define[[:space:]]*${2}[[:space:]]*\([0-9]*\).*/\1/p" \
    "$1" | head -1
}
# The FlatBuffers version of the headers in folder $1 (MAJOR.MINOR.REVISION;
# nothing when there are none).
headers_version() {
  local base=$1/flatbuffers/base.h part value version=""
  [ -f "$base" ] || return 0
  for part in MAJOR MINOR REVISION; do
    value=$(define "$base" "FLATBUFFERS_VERSION_$part")
    version=${version:+$version.}$value
  done
  echo "$version"
}
# The FlatBuffers version a generated header $1 asserts (nothing when it
# asserts none).
generated_version() {
  local part value version=""
  [ -f "$1" ] || return 0
  for part in MAJOR MINOR REVISION; do
    value=$(grep -o "FLATBUFFERS_VERSION_$part == [0-9]*" "$1" | head -1 |
              sed 's/.*== //' || true)
    [ -n "$value" ] || return 0
    version=${version:+$version.}$value
  done
  echo "$version"
}
kit_schema=$kit/buildkit/executable_generated.h
kit_include=$kit/buildkit/include
kit_flatbuffers=$(headers_version "$kit_include")
flags=(-DFLOW_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release)
# FlatBuffers: the generated header asserts the version of the headers it
# was made for, so flatc and the headers must be of one version: the
# machine's pair when they are, else the kit's pair.
machine_flatc=""
if command -v flatc >/dev/null 2>&1; then
  machine_flatc=$(flatc --version 2>/dev/null |
                    sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p' | head -1 ||
                    true)
fi
machine_include=""
for folder in /usr/include /usr/local/include; do
  if [ -f "$folder/flatbuffers/flatbuffers.h" ]; then
    machine_include=$folder
    break
  fi
done
machine_flatbuffers=""
[ -n "$machine_include" ] &&
  machine_flatbuffers=$(headers_version "$machine_include")
if [ -z "${FLOW_GPU_KIT_HEADERS:-}" ] && [ -n "$machine_flatc" ] &&
   [ "$machine_flatc" = "$machine_flatbuffers" ]; then
  flags+=(-DFLOW_SCHEMA_HEADER_PREBUILT=
          "-DFLOW_FLATBUFFERS_INCLUDE_DIR=$machine_include")
  note flatbuffers "this machine's flatc and headers ($machine_flatc)"
else
  if [ -n "${FLOW_GPU_KIT_HEADERS:-}" ]; then
    why="FLOW_GPU_KIT_HEADERS is set"
  elif [ -z "$machine_flatc" ]; then
    why="no flatc here"
  elif [ -z "$machine_include" ]; then
    why="flatc $machine_flatc here but no FlatBuffers headers"
  else
    why="flatc $machine_flatc here but headers $machine_flatbuffers in $machine_include"
  fi
  wanted=$(generated_version "$kit_schema")
  if [ ! -f "$kit_schema" ] || [ -z "$kit_flatbuffers" ]; then
    note flatbuffers "$why, and the kit has no buildkit (its schema header or FlatBuffers headers are missing: make the kit with prepare.py --target cuda)"
  elif [ -n "$wanted" ] && [ "$wanted" != "$kit_flatbuffers" ]; then
    note flatbuffers "$why; the kit's schema header wants FlatBuffers $wanted but its headers are $kit_flatbuffers: the build will fail (make the kit again)"
  else
    note flatbuffers "$why: the kit's schema header and FlatBuffers $kit_flatbuffers headers"
  fi
  flags+=("-DFLOW_SCHEMA_HEADER_PREBUILT=$kit_schema"
          "-DFLOW_FLATBUFFERS_INCLUDE_DIR=$kit_include")
fi
kit_headers=()
if ! own any /usr/include/cblas.h /usr/include/*/cblas.h; then
  # CPU GEMMs are not run here: the path only has to name a file to open.
  flags+=("-DFLOW_CBLAS_INCLUDE_DIR=$kit_include"
          "-DFLOW_OPENBLAS_LIBRARY=/usr/lib/libopenblas.so.0")
fi
if ! own any /usr/include/nccl.h /usr/local/cuda/include/nccl.h; then
  kit_headers+=("-DFLOW_NCCL_INCLUDE_DIR=$kit_include")
fi
if ! own any /usr/include/cudnn.h /usr/local/cuda/include/cudnn.h; then
  kit_headers+=("-DFLOW_CUDNN_INCLUDE_DIR=$kit_include")
fi

step="building runtime/"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# Builds runtime/ with the flags given; its log in $build.log.
build_runtime() {
  mkdir -p "$(dirname "$build")"
  # A build folder of another checkout's runtime/ is made again.
  if [ -f "$build/CMakeCache.txt" ] &&
     ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root/runtime" \
       "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  cmake -S "$root/runtime" -B "$build" ${generator[@]+"${generator[@]}"} \
    "${flags[@]}" "$@" >"$build.log" 2>&1 &&
    cmake --build "$build" --target flow-run -j "$(nproc)" >>"$build.log" 2>&1
}
echo "== building runtime/ in $build"
built=0
if ! command -v cmake >/dev/null 2>&1; then
  echo "no cmake here" >"$build.log"
elif build_runtime ${kit_headers[@]+"${kit_headers[@]}"}; then
  built=1
elif [ -d "$kit_include" ]; then
  # The machine's NCCL or cuDNN headers may be of a version the runtime
  # does not build with: once more with the kit's.
  tail -5 "$build.log" || true
  echo "== building again with the kit's NCCL and cuDNN headers"
  if build_runtime "-DFLOW_NCCL_INCLUDE_DIR=$kit_include" \
                   "-DFLOW_CUDNN_INCLUDE_DIR=$kit_include"; then
    built=1
  fi
fi
target=$(sed -n 's/.*"target": *"\([^"]*\)".*/\1/p' "$kit/manifest.json" \
           2>/dev/null | head -1 || true)
log_line() { grep -o "$1" "$build.log" 2>/dev/null | head -1 || true; }
cuda_line=$(log_line 'CUDA device built (toolkit [^,]*, libraries in [^)]*)')
if [ "$built" = 1 ] && { [ -n "$cuda_line" ] || [ "$target" != cuda ]; }; then
  flow_run=$build/bin/flow-run
  from_build=1
  note runtime "built here in $(elapsed) s (${cuda_line:-no CUDA device})"
else
  if [ "$built" = 1 ]; then
    why="runtime/ built here without the CUDA device (no CUDA toolkit found)"
  else
    tail -20 "$build.log" 2>/dev/null || true
    why="runtime/ did not build here (log: $build.log)"
  fi
  flow_run=$kit/flow-run
  from_build=0
  if [ -x "$flow_run" ]; then
    note runtime "$why: the kit's flow-run"
  else
    note runtime "$why, and the kit has no flow-run (make it with prepare.py --target cuda): every case will fail"
  fi
fi

#===----------------------------------------------------------------------===#
# The libraries the runtime opens
#===----------------------------------------------------------------------===#

step="finding the CUDA libraries"
# The sonames the flow-run in use opens, by variable.
declare -A soname=()
toolkit_lib=""
if [ "$from_build" = 1 ] && [ -n "$cuda_line" ]; then
  toolkit_lib=$(echo "$cuda_line" | sed 's/.*libraries in \(.*\))$/\1/')
  toolkit_version=$(echo "$cuda_line" | sed 's/.*(toolkit \([^,]*\),.*/\1/')
  major=$(define "$(dirname "$toolkit_lib")/include/cublas_api.h" \
            CUBLAS_VER_MAJOR)
  soname[FLOW_CUBLASLT]=libcublasLt.so.${major:-${toolkit_version%%.*}}
  # The CUDA device has NCCL and cuDNN only where their headers were found.
  for library in "NCCL nccl.h NCCL_MAJOR nccl.h FLOW_NCCL libnccl.so" \
                 "cuDNN cudnn.h CUDNN_MAJOR cudnn_version.h FLOW_CUDNN libcudnn.so"; do
    read -r what header name versioned variable stem <<<"$library"
    path=$(log_line "CUDA [a-z]* ($what) ([^)]*/$header)" |
             sed 's/.*(\(.*\))$/\1/')
    if [ -z "$path" ]; then
      missing "$(echo "$what" | tr '[:upper:]' '[:lower:]')" \
        "runtime/ was built here without $header"
      continue
    fi
    major=$(define "$(dirname "$path")/$versioned" "$name")
    [ -n "$major" ] || major=$(define "$path" "$name")
    soname[$variable]=$stem.${major:-?}
  done
elif [ -f "$kit/buildkit/sonames" ]; then
  while read -r variable name; do
    [ -n "$variable" ] && soname[$variable]=$name
  done <"$kit/buildkit/sonames"
else
  soname=([FLOW_CUBLASLT]=libcublasLt.so.13 [FLOW_CUDNN]=libcudnn.so.9
          [FLOW_NCCL]=libnccl.so.2)
fi
# Folders of the CUDA toolkit's libraries, the build's first.
library_dirs=()
for folder in "$toolkit_lib" \
              ${CUDA_HOME:+"$CUDA_HOME/lib64" "$CUDA_HOME/lib"} \
              ${CUDA_PATH:+"$CUDA_PATH/lib64" "$CUDA_PATH/lib"} \
              /usr/local/cuda/lib64 /usr/local/cuda/lib \
              $(ls -d /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib \
                  2>/dev/null | sort -rV || true) \
              /usr/local/cuda/targets/*/lib; do
  [ -n "$folder" ] && [ -d "$folder" ] || continue
  case " ${library_dirs[*]-} " in
    *" $folder "*) ;;
    *) library_dirs+=("$folder") ;;
  esac
done
IFS=: read -r -a path_dirs <<<"${LD_LIBRARY_PATH:-}"
# The path of library $1: the toolkit's lib64, LD_LIBRARY_PATH, ldconfig -p,
# pip's nvidia-* packages and PyTorch's lib of $python; nothing if none.
find_library() {
  local folder hit
  for folder in ${library_dirs[@]+"${library_dirs[@]}"} \
                ${path_dirs[@]+"${path_dirs[@]}"}; do
    if [ -n "$folder" ] && [ -e "$folder/$1" ]; then
      echo "$folder/$1"
      return
    fi
  done
  hit=$(ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s { print $NF; exit }' ||
          true)
  if [ -n "$hit" ]; then
    echo "$hit"
    return
  fi
  [ -n "$python" ] || return 0
  "$python" - "$1" 2>/dev/null <<'EOF' || true
import glob, os, sys
for folder in sys.path:
    for pattern in ("nvidia/*/lib", "nvidia/*/lib64", "torch/lib"):
        for hit in glob.glob(os.path.join(folder, pattern, sys.argv[1])):
            print(hit)
            sys.exit()
EOF
}
# The other versions of library stem $1 here (to say what there is).
other_versions() {
  local folder
  {
    for folder in ${library_dirs[@]+"${library_dirs[@]}"} \
                  ${path_dirs[@]+"${path_dirs[@]}"}; do
      [ -n "$folder" ] && ls "$folder/$1".[0-9]* 2>/dev/null
    done
    ldconfig -p 2>/dev/null |
      awk -v s="$1." 'index($1, s) == 1 { print $NF }'
  } | xargs -r readlink -f | sort -u | head -3 | tr '\n' ' ' |
    sed 's/ $//' || true
}
declare -A library_of=([FLOW_CUBLASLT]=cublaslt [FLOW_CUDNN]=cudnn
                       [FLOW_NCCL]=nccl)
for variable in FLOW_CUBLASLT FLOW_CUDNN FLOW_NCCL; do
  [ -n "${soname[$variable]:-}" ] || continue
  name=${soname[$variable]}
  library=${library_of[$variable]}
  if [ -n "${!variable:-}" ]; then
    note "$library" "${!variable} (set in $variable)"
    continue
  fi
  path=$(find_library "$name")
  if [ -n "$path" ]; then
    export "$variable=$path"
    note "$library" "$path ($variable)"
    # A library from a pip package opens its siblings from its folder.
    case $path in
      */site-packages/*|*/dist-packages/*)
        LD_LIBRARY_PATH=$(dirname "$path")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        export LD_LIBRARY_PATH ;;
    esac
    continue
  fi
  others=$(other_versions "${name%.*}")
  why="looked in ${library_dirs[*]:-no CUDA toolkit}, LD_LIBRARY_PATH, ldconfig -p and pip's nvidia-* packages of ${python:-no python}; set $variable to its path"
  if [ -n "$others" ]; then
    why="$why; this machine has $others, which the flow-run in use was not built for"
    [ "$from_build" = 0 ] &&
      why="$why (a runtime/ built here with this machine's CUDA headers would use it)"
  fi
  missing "$library" "$name not found" "$why"
done
if [ -n "${FLOW_CUDA_DRIVER:-}" ]; then
  note driver "${FLOW_CUDA_DRIVER} (FLOW_CUDA_DRIVER)"
elif ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  note driver "libcuda.so.1 is not on the library path (FLOW_CUDA_DRIVER names it)"
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>/dev/null | head -1 || true)
driver_cuda=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' |
                head -1 || true)
note gpu "${gpu:-no nvidia-smi}${driver_cuda:+ ($driver_cuda)}"

#===----------------------------------------------------------------------===#
# The check
#===----------------------------------------------------------------------===#

step="running check.py"
if [ -z "$python" ]; then
  step="looking for Python (no python3 here; FLOW_GPU_PYTHON names one)"
  exit 1
fi
left=$(( limit - $(elapsed) ))
(( left > 30 )) || left=30
# check.py stops each section on its own; the overall budget leaves it 15 s
# to write its table, and `timeout` stops it if it does not.
stopper=()
command -v timeout >/dev/null 2>&1 && stopper=(timeout -k 10 "$left")
status=0
${stopper[@]+"${stopper[@]}"} "$python" "$root/test/gpu/check.py" "$kit" \
  --flow-run "$flow_run" --results "$results" --bench \
  --budget "$(( left - 15 ))" ${notes[@]+"${notes[@]}"} \
  ${unavailable[@]+"${unavailable[@]}"} "$@" ||
  status=$?
step="after check.py (exit status $status)"
echo "== done in $(elapsed) s: $results, $table"
exit $status
