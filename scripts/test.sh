#!/usr/bin/env bash
# Sets up, builds, and runs every Flow test: the layering and format checks,
# lit (flow-opt, docs), the runtime
# unit tests (GoogleTest through ctest), a short run of every fuzz target
# over its corpus (scripts/fuzz.sh --smoke) and pytest, whose end-to-end
# numeric tests run three times: with fusion (the default), without, and
# with the CUDA target's kernels emulated on the CPU; then lit, the unit
# tests and a chosen subset of pytest again under ASan and UBSan
# (scripts/test-sanitized.sh, about 13 minutes more). Exits non-zero if any
# suite fails. pytest lists every test that did not pass and why (-ra): a
# skip is visible, never silent.
#
#   scripts/test.sh --sanitize   only the sanitized suites
#                                (scripts/test-sanitized.sh, build-asan/)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--sanitize" ]; then
  shift
  exec "$ROOT/scripts/test-sanitized.sh" "$@"
fi
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
BUILD="${FLOW_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh" || exit 1
"$ROOT/scripts/build.sh" || exit 1

status=0
# Each suite's output is also kept, so that the end of the run can repeat
# what failed where a log's tail is all one gets to see.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed=()
run() {
  local name="$1"; shift
  echo "== $name"
  "$@" 2>&1 | tee "$logs/current.log"
  if [ "${PIPESTATUS[0]}" -eq 0 ]; then
    echo "== $name: passed"
  else
    echo "== $name: FAILED"
    cp "$logs/current.log" "$logs/failed-${#failed[@]}.log"
    failed+=("$name")
    status=1
  fi
}

# The tree's shape: no source file over 1,200 lines, no include cycle
# between folders (scripts/check-layering.py); the last commit's C++ lines
# as clang-format writes them (scripts/check-format.sh).
run "layering" "$FLOW_CACHE/venv/bin/python" "$ROOT/scripts/check-layering.py"
run "format of changed lines" "$ROOT/scripts/check-format.sh"
run "lit" /usr/lib/llvm-22/bin/lit -sv "$BUILD/test"
run "runtime unit tests" ctest --test-dir "$BUILD" --output-on-failure
run "fuzz smoke" env FLOW_FUZZ_SMOKE_SECONDS="${FLOW_FUZZ_SMOKE_SECONDS:-10}" \
  "$ROOT/scripts/fuzz.sh" --smoke
run "pytest" env FLOW_BUILD_DIR="$BUILD" \
  "$FLOW_CACHE/venv/bin/python" -m pytest -q -ra "$ROOT/test/python"
# The end-to-end numeric tests once more on one-op kernels: fusion must not
# be what makes them pass (or fail).
run "pytest, fusion off" env FLOW_BUILD_DIR="$BUILD" FLOW_TEST_FUSION=off \
  "$FLOW_CACHE/venv/bin/python" -m pytest -q -ra \
  "$ROOT"/test/python/test_{e2e_ops,models,torch_import,onnx_import,onnx_conformance,python_api}.py \
  "$ROOT"/test/python/test_dropout.py

# The end-to-end numeric tests once more with the CUDA target's kernels
# emulated on the CPU (blocks as workgroups, threads in turn between
# barriers): the GPU thread mapping against the same references without a
# GPU. Kernels the CUDA target refuses by name are reported as skipped.
run "pytest, cuda-emulated" env FLOW_BUILD_DIR="$BUILD" \
  FLOW_TEST_TARGET=cuda-emulated "$FLOW_CACHE/venv/bin/python" -m pytest -q \
  -ra "$ROOT"/test/python/test_{e2e_ops,models,torch_import,onnx_import}.py \
  "$ROOT"/test/python/test_optimizers.py::test_cli_trains_over_npy_batches_and_resumes \
  "$ROOT"/test/python/test_dropout.py::test_random_uniform_is_the_documented_formula \
  "$ROOT"/test/python/test_dropout.py::test_training_with_dropout_matches_torch_given_the_same_masks

# The same suites (lit, unit tests, pytest) built and run under ASan and
# UBSan (build-asan/): any sanitizer report fails the run.
run "sanitized suites" "$ROOT/scripts/test-sanitized.sh"

if ((status)); then
  for i in "${!failed[@]}"; do
    echo "== what failed in ${failed[$i]}:"
    grep -E 'FAILED|ERROR|error:|SUMMARY|Test unit written|base64:|Assertion|Error' \
      "$logs/failed-$i.log" | grep -v '^== ' | tail -n 25
  done
  echo "Some test suites FAILED: ${failed[*]}"
else
  echo "All test suites passed"
fi
exit $status
