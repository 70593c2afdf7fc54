#!/usr/bin/env bash
# bench/llm: tg-llm against llama.cpp on the same GGUF files, same machine, same thread count.
#   bench/llm.sh [BUILD_DIR]      (env: THREADS (default: nproc), PP (128), TG (128), TYPES ("F16 Q8_0 Q4_K"), REPS (3),
#                                  SHAPES ("110m 500m"))
# 1. llama.cpp from the llama-cpp-python source distribution (PyPI), built with cmake in ~/.cache/tg-bench (never in
#    the repo); 2. the models (bench/llm_model.py, random weights) as each type: 110m a llama of d 768, 12 layers, ffn
#    2048; 500m (507M parameters) d 1024, 24 layers, 16 heads over 4 KV heads, ffn 5120; 3. DRAM read bandwidth
#    (build/bench/dram_bw); 4. llama-bench and `tg-llm bench` on each file: prompt (ppPP) and decode (tgTG) tok/s and
#    their ratios, decode as weight bytes per token / time against the bandwidth, and peak RSS against the goal's bound
#    (file size + KV cache) * 1.15 ("ok" or "over").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
cache=${TG_BENCH_CACHE:-$HOME/.cache/tg-bench}
threads=${THREADS:-$(nproc)} pp=${PP:-128} tg=${TG:-128} reps=${REPS:-3}
py=$root/.venv/bin/python3
mkdir -p "$cache/sdist" "$cache/models"

# ** 1. llama.cpp **
lb=$cache/llama.cpp-build/bin/llama-bench
if [ ! -x "$lb" ]; then
  ls "$cache"/sdist/llama_cpp_python-*.tar.gz >/dev/null 2>&1 || "$py" -m pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36 -d "$cache/sdist"
  tarball=$(ls "$cache"/sdist/llama_cpp_python-*.tar.gz | sort -V | tail -1)
  src=$cache/src/$(basename "$tarball" .tar.gz)
  [ -d "$src" ] || { mkdir -p "$cache/src"; tar xzf "$tarball" -C "$cache/src"; }
  # the CPU backend as llama.cpp builds it by default (native ISA, OpenMP); no server, tests or examples. Without AMX:
  # its tiles need a permission from the kernel that VMs may not grant (llama-bench dies of SIGILL in its Q8_0 matmul)
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$src/vendor/llama.cpp" -B "$cache/llama.cpp-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$cache/llama.cpp-build" --target llama-bench -j"$threads"
fi

# ** 2. models **
shapes=${SHAPES:-110m 500m}
declare -A shape_args=([110m]="" [500m]="--dim 1024 --layers 24 --heads 16 --kv-heads 4 --ffn 5120")
for s in $shapes; do
  [ -n "${shape_args[$s]+x}" ] || { echo "bench/llm.sh: unknown shape '$s' (110m, 500m)" >&2; exit 2; }
  for t in ${TYPES:-F16 Q8_0 Q4_K}; do
    # shellcheck disable=SC2086
    [ -f "$cache/models/llama$s-$t.gguf" ] || "$py" "$root/bench/llm_model.py" "$cache/models/llama$s-$t.gguf" "$t" ${shape_args[$s]}
  done
done

# ** 3. DRAM read bandwidth **
dram=$("$build/bench/dram_bw")
echo "$dram"
bw=$(awk '/^dram_read_GBps/ {print $2}' <<<"$dram")

# ** 4. both engines on each file **
echo "threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %10s %10s %8s | %10s %10s %8s | %9s %8s %9s %14s\n' type "pp$pp tg" "pp$pp l.cpp" ratio "tg$tg tg" "tg$tg l.cpp" ratio "1st tok" "% DRAM" "RSS MiB" "allowed MiB"
for s in $shapes; do for t in ${TYPES:-F16 Q8_0 Q4_K}; do
  m=$cache/models/llama$s-$t.gguf
  # llama-bench prints avg_ts per test in its csv output (one row for ppPP, one for tgTG)
  l=$("$lb" -m "$m" -p "$pp" -n "$tg" -t "$threads" -r "$reps" -o csv 2>/dev/null | "$py" -c '
import csv, sys
r = {("pp" if int(x["n_prompt"]) else "tg"): float(x["avg_ts"]) for x in csv.DictReader(sys.stdin)}
print(r["pp"], r["tg"])')
  o=$(NUM_CPU_THREADS=$threads "$build/tg-llm" bench --model "$m" -p "$pp" -n "$tg" --reps "$reps" --ctx $((pp + tg)) 2>/dev/null | tail -1)
  # o: "pp_tok_s tg_tok_s first_token_ms peak_rss_mib weight_bytes_per_token kv_cache_bytes"
  "$py" - "$s $t" $l $o "$bw" "$(stat -c %s "$m")" <<'PY'
import sys
t, lpp, ltg, pp, tg, ft, rss, wb, kv, bw, size = sys.argv[1], *map(float, sys.argv[2:])
allowed = (size + kv) * 1.15 / 2**20
print(f"{t:<12} {pp:10.1f} {lpp:10.1f} {pp / lpp:7.2f}x | {tg:10.1f} {ltg:10.1f} {tg / ltg:7.2f}x | {ft:7.0f}ms {100 * wb * tg / 1e9 / bw:7.1f}% {rss:9.0f} {allowed:9.0f} {'ok' if rss <= allowed else 'over':>4}")
PY
done; done
