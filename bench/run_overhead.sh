#!/usr/bin/env bash
# Framework overhead, tinygrad.cpp vs tinygrad, on the same graphs (see bench/overhead.cpp for what is timed).
#   bench/run_overhead.sh [reps]     Environment: BUILD (default build), TINYGRAD_PATH (default /work/ref), PYTHON,
#                                    ROUNDS (alternating rounds of the cold comparison, default 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPS=${1:-200}
BUILD=${BUILD:-build}
TINYGRAD_PATH=${TINYGRAD_PATH:-/work/ref}
PYTHON=${PYTHON:-/usr/bin/python3}
if [ ! -f "$BUILD/build.ninja" ]; then cmake -S . -B "$BUILD" -G Ninja >/dev/null; fi
cmake --build "$BUILD" --target bench_overhead >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/bench/overhead" "$REPS" | tee "$tmp/cpp.txt"
PYTHONPATH="$TINYGRAD_PATH" "$PYTHON" bench/overhead_tinygrad.py "$(( REPS / 10 > 5 ? REPS / 10 : 5 ))" | tee "$tmp/py.txt"
join <(awk '{print $2, $9}' "$tmp/cpp.txt" | sort) <(awk '{print $2, $9}' "$tmp/py.txt" | sort) |
  awk '{ printf "%-8s steady: tinygrad.cpp is %6.1fx faster\n", $1, $3 / $2 }'
# cold ratios from alternating rounds (the machine's speed drifts over the minute the two tables above take)
PYTHONPATH="$TINYGRAD_PATH" "$PYTHON" bench/overhead_ab.py "$BUILD/bench/overhead" "${ROUNDS:-5}"
