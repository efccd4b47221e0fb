#!/usr/bin/env bash
# usage: scripts/soak.sh N [BUILD_DIR]
# Runs the tool tests (ctest's tools.* tests, side by side as CI runs them)
# N times in a row against an existing build (default build-release), and
# prints each failure: the run, the test and its output. Ends with how many
# runs passed and how long the soak took; exits 1 if any run failed.
# Run as root (the tests load BPF programs).
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/soak.sh N [BUILD_DIR]}
build=${2:-build-release}
[[ -x $build/bpfscope ]] || { echo "no $build/bpfscope: build it first (scripts/test.sh does)" >&2; exit 2; }
jobs=$(($(nproc) * 2))
log=$(mktemp -d /tmp/bpfscope-soak.XXXXXX)
start=$(date +%s)
failed_runs=0
for ((i = 1; i <= n; i++)); do
  t0=$(date +%s)
  if (cd "$build" && ctest -R '^tools\.' -j"$jobs" --output-on-failure) > "$log/run$i.txt" 2>&1; then
    echo "run $i/$n: passed ($(($(date +%s) - t0)) s)"
  else
    failed_runs=$((failed_runs + 1))
    echo "run $i/$n: FAILED ($(($(date +%s) - t0)) s); failing tests:"
    sed -n '/The following tests FAILED:/,$p' "$log/run$i.txt" | grep -E '^\s+[0-9]+ - ' || true
    # Each failure's own lines: unittest's FAIL/ERROR blocks.
    grep -E -A12 '^(FAIL|ERROR): ' "$log/run$i.txt" || true
  fi
done
echo "soak: $((n - failed_runs)) of $n runs passed in $(($(date +%s) - start)) s (logs in $log)"
((failed_runs == 0))
