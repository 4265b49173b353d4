#!/usr/bin/env bash
# Installs what Flow needs on Debian 12: system packages (apt) and a Python
# virtual environment. Idempotent, and quick when nothing changed.
#
#   FLOW_CACHE  where the virtual environment and the compiler cache live
#               (default ~/.cache/flow), outside the clone so a fresh clone
#               reuses them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOW_CACHE="${FLOW_CACHE:-$HOME/.cache/flow}"
VENV="$FLOW_CACHE/venv"

# System packages. LLVM/MLIR 22 come from Debian's bookworm repositories;
# clang-22 and its runtimes build the libFuzzer targets (scripts/fuzz.sh).
APT_PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  lld-22 cmake ninja-build ccache g++ libgtest-dev
  flatbuffers-compiler libflatbuffers-dev libopenblas-dev libdnnl-dev openmpi-bin
  libopenmpi-dev
  clang-22 libclang-rt-22-dev clang-format
  python3 python3-venv
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python virtual environment, refreshed when python/requirements.txt changes.
mkdir -p "$FLOW_CACHE"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating the virtual environment in $VENV"
  python3 -m venv "$VENV"
fi
stamp="$VENV/.flow-requirements.sha256"
want="$(sha256sum "$ROOT/python/requirements.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python packages"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$ROOT/python/requirements.txt"
  echo "$want" > "$stamp"
fi

# `import flow` in the virtual environment finds this clone's build
# (build/python holds the package and its extension once built).
pth="$VENV/lib/python$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')/site-packages/flow-build.pth"
if [ ! -f "$pth" ] || [ "$(cat "$pth")" != "$ROOT/build/python" ]; then
  echo "$ROOT/build/python" > "$pth"
fi
