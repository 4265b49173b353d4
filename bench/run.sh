#!/usr/bin/env bash
# Runs Flow's benchmarks (not part of the test suite): installs the peers
# (bench/requirements.txt) into the project's virtual environment, builds
# Flow, then prints markdown tables.
#
#   bench/run.sh [THREADS] [REPEATS]      (defaults: 2 threads, 5 repeats)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
PY="$FLOW_CACHE/venv/bin/python"

"$ROOT/scripts/setup.sh"
"$PY" -m pip install -q -r "$ROOT/bench/requirements.txt"
"$ROOT/scripts/build.sh" flow-compile flow-run flow-python

THREADS="${1:-2}"
REPEATS="${2:-5}"
cd "$ROOT/bench"
echo "== GEMM (Flow vs cblas_sgemm called directly)"
"$PY" matmul.py --threads "$THREADS" --repeats "$REPEATS"
echo
echo "== Models (Flow vs PyTorch eager)"
"$PY" models.py --threads "$THREADS" --repeats "$REPEATS"
echo
echo "== Imported models: BERT-base and ResNet-50 (Flow vs eager, torch.compile, onnxruntime, OpenVINO)"
"$PY" frontends.py --threads "$THREADS" --repeats "$((REPEATS < 3 ? REPEATS : 3))"
echo
echo "== Joined projections: q/k/v and gate/up as one GEMM (Flow joined vs apart vs eager)"
"$PY" joined_projections.py --threads "$THREADS" --repeats "$REPEATS"
echo
echo "== Attention: fused command vs matmul, softmax, matmul (Flow) vs eager"
"$PY" attention.py --threads "$THREADS" --repeats "$REPEATS"
echo
echo "== The compile cache: model to callable, empty cache vs a hit (fresh processes)"
"$PY" compile_cache.py --repeats "$REPEATS"
echo
echo "== Dynamic batch: one executable for every batch vs a static compile per batch"
"$PY" dynamic_shapes.py --threads "$THREADS" --repeats "$REPEATS"
echo
echo "== Data parallel over MPI ranks (1 thread per rank)"
"$PY" distributed.py --repeats "$((REPEATS < 3 ? REPEATS : 3))"
echo
echo "== Auto-parallel plans against data and tensor parallel (modeled, h100-nvlink)"
"$PY" auto_parallel.py --repeats "$((REPEATS < 3 ? REPEATS : 3))"
echo
echo "== Auto-parallel: modeled against measured plans on 2 MPI ranks"
"$PY" auto_parallel_measured.py --repeats "$((REPEATS < 3 ? REPEATS : 3))"
