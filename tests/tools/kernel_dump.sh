#!/usr/bin/env bash
# Every kernel source the test suites generate, one file per test executable: runs each build/test_* with DEBUG=4
# and keeps the generated C (the blocks to_program prints), dropping timings and gtest chatter. Two dumps of the same
# suite compare with `diff -r` (a restructuring must leave every kernel byte-identical).
#   tests/tools/kernel_dump.sh BUILD_DIR OUT_DIR [gtest filter]
# BEAM picks its candidates by timing them, so the BEAM tests' kernels differ between two runs of one build: compare
# them with the filter '-*Search*:*Beam*' (or compare only the conformance suite, which runs no BEAM).
set -euo pipefail
build=${1:?usage: kernel_dump.sh BUILD_DIR OUT_DIR [FILTER]}; out=${2:?usage: kernel_dump.sh BUILD_DIR OUT_DIR [FILTER]}
filter=${3:-*}
mkdir -p "$out"
for t in "$build"/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  # a fresh program cache: DEBUG=4 prints each source when it is lowered, whatever the disk holds
  DEBUG=4 CACHEDB="$(mktemp -u)" "$t" --gtest_filter="$filter" 2>/dev/null \
    | python3 -c '
import sys, re
blocks, cur = [], []
for line in sys.stdin:
  line = line.rstrip("\n")
  if cur or re.match(r"^(#include|#define|typedef|static|void|__attribute__|struct)\b", line):
    cur.append(line)
    if re.search(r"_entry\(.*\{ .*\}$", line) or line.startswith("void ") and line.endswith("}") and "_entry(" in line:
      blocks.append("\n".join(cur)); cur = []
for b in blocks: print(b + "\n")
' > "$out/$name.c" || true
  echo "$name: $(grep -c '_entry(' "$out/$name.c") kernels"
done
