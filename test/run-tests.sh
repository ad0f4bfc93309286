#!/usr/bin/env bash
# Runs the whole ava suite in TAP mode, echoes it, and closes with the plain line CI reads:
# "N passed, M failed" (ava's own summary has no such line). Exit code = ava's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
npx ava --tap "$@" 2>&1 | tee "$out"
code=${PIPESTATUS[0]}
passed=$(grep -E '^ok ' "$out" | grep -vc '# SKIP' || true)
failed=$(grep -E '^not ok ' "$out" | grep -vc '# TODO' || true)
skipped=$(grep -E '^ok .*# SKIP' "$out" | wc -l | tr -d ' ')
rm -f "$out"
if [ "$code" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # ava died before reporting (e.g. an uncaught error)
echo
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
exit "$code"
