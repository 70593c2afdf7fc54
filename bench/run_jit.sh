#!/usr/bin/env bash
# TinyJit replay overhead, tinygrad.cpp vs tinygrad, on the same functions (see bench/jit.cpp for what is timed).
#   bench/run_jit.sh [reps]     Environment: BUILD (default build), TINYGRAD_PATH (default /work/ref), PYTHON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPS=${1:-2000}
BUILD=${BUILD:-build}
TINYGRAD_PATH=${TINYGRAD_PATH:-/work/ref}
PYTHON=${PYTHON:-/usr/bin/python3}
if [ ! -f "$BUILD/build.ninja" ]; then cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null; fi
cmake --build "$BUILD" --target bench_jit >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/bench/jit" "$REPS" | tee "$tmp/cpp.txt"
PYTHONPATH="$TINYGRAD_PATH" "$PYTHON" bench/jit_tinygrad.py "$(( REPS / 10 > 20 ? REPS / 10 : 20 ))" | tee "$tmp/py.txt"
join <(awk '{print $2, $6, $11}' "$tmp/cpp.txt" | sort) <(awk '{print $2, $6, $11}' "$tmp/py.txt" | sort) |
  awk '{ printf "%-6s replay: tinygrad.cpp is %7.1fx faster per call (eager: %6.1fx)\n", $1, $4 / $2, $5 / $3 }'
