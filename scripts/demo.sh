#!/usr/bin/env bash
# Flow's main job on the CPU: set up, build, compile the bundled example
# model (examples/mlp.mlir, data parallel over a 2-device mesh) to an
# executable, run it as two MPI processes on random inputs, time it, and
# check the result against numpy.
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

echo "== run on 2 devices (mpirun -np 2)"
inputs=$("$PY" "$ROOT/examples/mlp_data.py" make "$OUT")
# Open MPI refuses root unless told, and 2 ranks may exceed the cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1
# shellcheck disable=SC2086
mpirun -np 2 "$BUILD/bin/flow-run" "$OUT/mlp.fbin" $inputs \
  --output-dir="$OUT" --print --iterations=50 --warmup=5 --threads=1

echo "== check against numpy"
"$PY" "$ROOT/examples/mlp_data.py" check "$OUT"
