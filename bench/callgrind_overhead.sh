#!/usr/bin/env bash
# Instruction counts of the framework overhead (bench/overhead.cpp's graphs) under callgrind: deterministic figures to
# compare two builds where wall-clock ratios drift.
#   bench/callgrind_overhead.sh [BUILD]   prints, per graph, the instructions of one cold build-and-lowering (from the
#                                         difference of 11 and 1 runs: "cold NAME RUNS" to overhead --serve), and of one
#                                         steady realize (kernels run included: 41 minus 1 runs of "steady NAME RUNS")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build}
bin="$BUILD/bench/overhead"
[ -x "$bin" ] || { echo "callgrind_overhead.sh: $bin is not built (cmake --build $BUILD --target bench_overhead)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# one kernel thread: a worker spinning for work adds however many instructions the scheduler lets it run
export NUM_CPU_THREADS=1
export CACHEDB="$tmp/cache.db"  # one fresh program cache for every run: all runs see the same disk state after the first
# valgrind cannot run AVX-512 code: kernels are compiled without it (16-wide vectors become two 8-wide ones)
printf '#!/bin/sh\nexec %s "$@" -mno-avx512f\n' "$(command -v "${TG_CLANG:-clang}")" > "$tmp/clang" && chmod +x "$tmp/clang"
export TG_CLANG="$tmp/clang"
ir() { valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
for g in mlp softmax conv chain20; do echo "steady $g 1"; done | "$bin" --serve >/dev/null  # fill the program cache
for g in mlp softmax conv chain20; do
  one=$(echo "cold $g 1" | ir "$bin" --serve)
  many=$(echo "cold $g 11" | ir "$bin" --serve)
  echo "$g cold: $(( (many - one) / 10 )) instructions per graph built and lowered"
done
for g in mlp softmax conv chain20; do
  one=$(echo "steady $g 1" | ir "$bin" --serve)
  many=$(echo "steady $g 41" | ir "$bin" --serve)
  echo "$g steady: $(( (many - one) / 40 )) instructions per realize of a seen structure (kernels run included)"
done
