#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz (clang-22, ASan + UBSan) into
# build-fuzz/ and runs them.
#
#   scripts/fuzz.sh --smoke
#       every target for a short while (FLOW_FUZZ_SMOKE_SECONDS, default 15)
#       over its checked-in corpus; exits non-zero on any crash, sanitizer
#       report, leak or timeout.
#   scripts/fuzz.sh --target=NAME [--runs=N] [--seconds=S] [-- ARGS...]
#       one long run of fuzz-NAME (npy, safetensors, state, fbin-load,
#       fbin-run, mlir-parse, mesh-spec); N executions (default 1000000)
#       or S seconds, whichever comes first. ARGS go to libFuzzer. New inputs are kept in
#       build-fuzz/corpus/NAME; the checked-in corpus is only read.
#   scripts/fuzz.sh --build
#       only builds.
#
# Environment: FLOW_FUZZ_BUILD_DIR (default build-fuzz), FLOW_FUZZ_JOBS
# (ninja -j; default ninja's), FLOW_FUZZ_MLIR=OFF to skip fuzz-mlir-parse.
# A crash leaves its input in build-fuzz/artifacts/; rerun it with
# build-fuzz/fuzz-NAME build-fuzz/artifacts/<file>.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FLOW_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
CORPUS="$ROOT/test/fuzz/corpus"
MLIR="${FLOW_FUZZ_MLIR:-ON}"

mode="" target="" runs=1000000 seconds=0
extra=()
while (($#)); do
  case "$1" in
    --smoke) mode=smoke ;;
    --build) mode=build ;;
    --target=*) mode=long; target="${1#--target=}" ;;
    --runs=*) runs="${1#--runs=}" ;;
    --seconds=*) seconds="${1#--seconds=}" ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$mode" ]; then
  echo "fuzz.sh: pass --smoke, --build or --target=NAME (see --help)" >&2
  exit 2
fi

# clang-22 and its libFuzzer/sanitizer runtimes.
missing=()
for pkg in clang-22 libclang-rt-22-dev; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "fuzz.sh: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The compiler cache scripts/build.sh uses, keyed relative to the clone.
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
export CCACHE_DIR="${CCACHE_DIR:-$FLOW_CACHE/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT/test/fuzz" -B "$BUILD" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    "${launcher[@]}" -DFLOW_FUZZ_MLIR="$MLIR" >/dev/null
fi
ninja -C "$BUILD" ${FLOW_FUZZ_JOBS:+-j"$FLOW_FUZZ_JOBS"}
[ "$mode" = build ] && exit 0

targets=(npy safetensors state fbin-load fbin-run)
if [ -x "$BUILD/fuzz-mlir-parse" ] && [ "$MLIR" != OFF ]; then
  targets+=(mlir-parse mesh-spec)
fi
mkdir -p "$BUILD/artifacts"
# Options every run shares: fail on leaks and on inputs slower than 10 s.
common=(-rss_limit_mb=4096 -timeout=10 -print_final_stats=1
        -artifact_prefix="$BUILD/artifacts/")

if [ "$mode" = smoke ]; then
  secs="${FLOW_FUZZ_SMOKE_SECONDS:-15}"
  status=0
  for t in "${targets[@]}"; do
    # New inputs go to a scratch directory, never into the checked-in one.
    scratch="$(mktemp -d "$BUILD/smoke-$t.XXXXXX")"
    log="$BUILD/smoke-$t.log"
    if "$BUILD/fuzz-$t" "${common[@]}" -max_total_time="$secs" \
        "$scratch" "$CORPUS/$t" >"$log" 2>&1; then
      echo "fuzz-$t: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs)"
    else
      echo "fuzz-$t: FAILED (log: $log)"
      grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5 || true
      # The input that failed, small enough to carry in a log: rerun it
      # with  base64 -d > unit; build-fuzz/fuzz-NAME unit
      unit="$(grep -o 'Test unit written to .*' "$log" | head -1 | sed 's/^Test unit written to //')"
      if [ -n "$unit" ] && [ -f "$unit" ] && [ "$(stat -c %s "$unit")" -le 6144 ]; then
        echo "fuzz-$t input base64: $(base64 -w0 "$unit")"
      fi
      status=1
    fi
    rm -rf "$scratch"
  done
  exit $status
fi

case " ${targets[*]} " in
  *" $target "*) ;;
  *) echo "fuzz.sh: unknown target '$target' (${targets[*]})" >&2; exit 2 ;;
esac
work="$BUILD/corpus/$target"
mkdir -p "$work"
limit=()
if [ "$seconds" != 0 ]; then limit=(-max_total_time="$seconds"); fi
exec "$BUILD/fuzz-$target" "${common[@]}" -runs="$runs" "${limit[@]}" \
  "${extra[@]}" "$work" "$CORPUS/$target"
