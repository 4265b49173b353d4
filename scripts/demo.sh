#!/usr/bin/env bash
# Flow's main job on the CPU: set up, build, and run the bundled example model
# through flow-opt (verify, canonicalize, strip annotations for one device).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FLOW_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" flow-opt

MODEL="${1:-$ROOT/examples/mlp.mlir}"
echo "== $MODEL, canonicalized and made single-device:"
"$BUILD/bin/flow-opt" "$MODEL" \
  --pass-pipeline='builtin.module(canonicalize,func.func(flow-strip-annotations))'
