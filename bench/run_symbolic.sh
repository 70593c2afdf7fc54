#!/usr/bin/env bash
# Symbolic-simplification benchmark, tinygrad.cpp vs tinygrad, on the same expressions.
#
#   bench/run_symbolic.sh [N]          (N defaults to 10000)
#
# Environment: BUILD (build dir, default build), TINYGRAD_PATH (default /work/ref), PYTHON (default /usr/bin/python3),
# SEED (default 1234). Builds bench/symbolic, has it generate N distinct expressions (seeded) and dump them, times our
# simplify() over them (the same run), then times tinygrad's UOp.simplify() over the dumped file in a fresh Python
# process, and prints the ratio. Neither side does a warm-up pass; both build their rule tables before the clock.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

N=${1:-${N:-10000}}
SEED=${SEED:-1234}
BUILD=${BUILD:-build}
TINYGRAD_PATH=${TINYGRAD_PATH:-/work/ref}
PYTHON=${PYTHON:-/usr/bin/python3}

if [ ! -f "$BUILD/build.ninja" ] && [ ! -f "$BUILD/Makefile" ]; then
  if command -v ninja >/dev/null; then cmake -S . -B "$BUILD" -G Ninja >/dev/null; else cmake -S . -B "$BUILD" >/dev/null; fi
fi
cmake --build "$BUILD" --target bench_symbolic >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# each side runs RUNS times (default 3, fresh processes) and the median rate counts: this machine is shared and noisy
RUNS=${RUNS:-3}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
"$BUILD/bench/symbolic" --n "$N" --seed "$SEED" --dump "$tmp/exprs.txt" | tee "$tmp/cpp.txt"
for i in $(seq 2 "$RUNS"); do "$BUILD/bench/symbolic" --n "$N" --seed "$SEED" | tee -a "$tmp/cpp.txt"; done
for i in $(seq 1 "$RUNS"); do TINYGRAD_PATH="$TINYGRAD_PATH" "$PYTHON" bench/symbolic_tinygrad.py "$tmp/exprs.txt" | tee -a "$tmp/py.txt"; done

cpp_rate=$(sed -n 's/^tinygrad\.cpp: .* = \([0-9.]*\) expr\/s$/\1/p' "$tmp/cpp.txt" | median)
py_rate=$(sed -n 's/^tinygrad: .* = \([0-9.]*\) expr\/s$/\1/p' "$tmp/py.txt" | median)
if [ -z "$cpp_rate" ] || [ -z "$py_rate" ]; then
  echo "could not read the rates" >&2
  exit 1
fi
awk -v c="$cpp_rate" -v p="$py_rate" -v r="$RUNS" 'BEGIN { printf "ratio (medians of %d runs): tinygrad.cpp is %.1fx tinygrad (%.1f vs %.1f expr/s)\n", r, c / p, c, p }'
