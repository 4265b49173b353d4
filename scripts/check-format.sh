#!/usr/bin/env bash
# Checks that the C and C++ lines the last commit changed are formatted as
# clang-format (with the tree's .clang-format) would write them; prints the
# difference and exits 1 when they are not. Older code is not reformatted
# by the check: only what a change touches.
#
#   FLOW_FORMAT_BASE   the commit to compare with (default HEAD~1)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
base="${FLOW_FORMAT_BASE:-HEAD~1}"
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
  # A clone without history has no change to check: said, not failed.
  echo "check-format: SKIPPED: no commit '$base' to compare with (a" \
       "shallow clone?); set FLOW_FORMAT_BASE to check against another"
  exit 0
fi
diff="$(git clang-format --binary clang-format --diff "$base" -- \
        '*.c' '*.cpp' '*.h' 2>&1)"
case "$diff" in
  "" | "no modified files to format" | "clang-format did not modify any files")
    echo "check-format: the lines changed since $base are formatted"
    exit 0 ;;
esac
echo "$diff"
echo "check-format: lines changed since $base are not formatted as" \
     "clang-format writes them; run: git clang-format $base"
exit 1
