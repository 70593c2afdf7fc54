#!/usr/bin/env bash
# Fuzzes the GGUF header parser with libFuzzer + ASan + UBSan (not part of CI; setup.sh's clang brings libFuzzer).
#   tests/tools/fuzz_gguf.sh [SECONDS]   (default 600) -> build-fuzz/: the harness, its corpus, any crash-* inputs
# Seeds are the files tests/llm writes with gguf-py (.venv from `setup.sh --test`). Exits non-zero on a finding.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out/corpus" "$out/seeds"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc \
  tests/tools/fuzz/gguf.cpp src/llm/gguf_header.cpp -o "$out/gguf_fuzz"
.venv/bin/python3 tests/llm/make_gguf.py "$out/seeds" >/dev/null
cp "$out"/seeds/*.gguf "$out/corpus/"
cd "$out"
exec ./gguf_fuzz -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus
