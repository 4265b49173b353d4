#!/usr/bin/env bash
# Flow's main job on the CPU: set up, build, compile the bundled example
# model (examples/mlp.mlir) to an executable, run it on random inputs, time
# it, and check the result against numpy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
BUILD="${FLOW_BUILD_DIR:-$ROOT/build}"
PY="$FLOW_CACHE/venv/bin/python"
OUT="$BUILD/demo"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" flow-compile flow-run
mkdir -p "$OUT"

echo "== compile examples/mlp.mlir"
"$BUILD/bin/flow-compile" "$ROOT/examples/mlp.mlir" -o "$OUT/mlp.fbin" \
  --report="$OUT/mlp-report.json"
cat "$OUT/mlp-report.json"

echo "== run"
inputs=$("$PY" "$ROOT/examples/mlp_data.py" make "$OUT")
# shellcheck disable=SC2086
"$BUILD/bin/flow-run" "$OUT/mlp.fbin" $inputs --output-dir="$OUT" --print \
  --iterations=50 --warmup=5

echo "== check against numpy"
"$PY" "$ROOT/examples/mlp_data.py" check "$OUT"
