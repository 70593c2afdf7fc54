#!/usr/bin/env bash
# Fuzzes torch_load's parser (zip, tar, legacy pickle stream, pickle machine) with libFuzzer + ASan + UBSan (not part
# of CI; setup.sh's clang brings libFuzzer).
#   tests/tools/fuzz_torch.sh [SECONDS]   (default 600) -> build-fuzz/: the harness, its corpus, any crash-* inputs
# Seeds are the checkpoints tests/nn writes with torch.save (Debian's python3-torch). Exits non-zero on a finding.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
secs=${1:-600}
out=build-fuzz
mkdir -p "$out/torch_corpus" "$out/torch_seeds"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc \
  tests/tools/fuzz/torch.cpp src/nn/torch_file.cpp src/nn/pickle.cpp src/nn/archive.cpp \
  -lz -o "$out/torch_fuzz"
/usr/bin/python3 tests/nn/make_torch_files.py "$out/torch_seeds" >/dev/null
cp "$out"/torch_seeds/*.pt "$out"/torch_seeds/*.pth "$out"/torch_seeds/*.zip "$out"/torch_seeds/*.tar "$out/torch_corpus/"
cd "$out"
exec ./torch_fuzz -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 torch_corpus
