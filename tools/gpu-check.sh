#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (the lent H200: one run within its 15 minutes). Checks that the GPU,
# its driver and NVRTC are there (and stops with what is missing otherwise, before building anything), builds the tests
# and the bench, then runs with DEV=CUDA: the CUDA runtime tests, the whole conformance suite (against libtorch on the
# CPU), and bench/gpu (matmul fp32/fp16, add, sum, device copy). Writes each step's output and a summary to
# $OUT (the device tool's result folder) or build/gpu-check. First of the runs: the half/bfloat16 matmuls on the tensor
# cores (mma.sync, TC=1 and TC_OPT=2's padded ones) against float64 results of libtorch on the CPU (their numerics are
# untested until this runs), with DEBUG=4 so the log shows the mma.sync kernels they ran.
#   tools/gpu-check.sh            build (Release, build/) and run everything
#   tools/gpu-check.sh --no-build run with what build/ already has
# GPU_CHECK_WITHOUT_GPU=1 skips the driver check (to try the script's other parts on a machine without a GPU)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=1
case "${1:-}" in
  "") ;;
  --no-build) build=0 ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check: unknown option '$1' (use --no-build or nothing)" >&2; exit 2 ;;
esac

out=${OUT:-build/gpu-check}
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
note() { echo "gpu-check: $*" | tee -a "$summary"; }
fail() { note "FAILED: $*"; exit 1; }

# ** what the run needs, checked first **
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1" || ls /usr/lib/x86_64-linux-gnu/$1* /usr/lib64/$1* >/dev/null 2>&1; }
[ "${GPU_CHECK_WITHOUT_GPU:-0}" = 1 ] || have_lib libcuda.so.1 || fail "no NVIDIA driver (libcuda.so.1 is not installed): DEV=CUDA needs an NVIDIA GPU and its driver"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader > "$out/gpu.txt" 2>&1 ||
    fail "nvidia-smi sees no GPU: $(head -c 300 "$out/gpu.txt")"
  note "GPU: $(head -1 "$out/gpu.txt")"
fi
nvrtc_found=0
for d in "${CUDA_PATH:-/nonexistent}" /usr/local/cuda .venv/lib/python3*/site-packages/nvidia/cu13; do
  if ls "$d"/lib*/libnvrtc.so* >/dev/null 2>&1 && [ -e "$d/include/cuda_fp16.h" ]; then
    export CUDA_PATH=$d
    nvrtc_found=1
    break
  fi
done
[ $nvrtc_found = 1 ] || have_lib libnvrtc.so || fail "no NVRTC (libnvrtc.so and cuda_fp16.h): install the CUDA toolkit or run ./setup.sh --test, or set CUDA_PATH"
note "NVRTC: ${CUDA_PATH:-found by the loader}"

# ** build **
if [ $build = 1 ]; then
  for t in cmake ninja; do command -v $t >/dev/null || fail "no $t (./setup.sh installs the build tools)"; done
  st=$(date +%s)
  { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build build -j"$(nproc)" --target test_runtime test_conformance bench_gpu; } > "$out/build.log" 2>&1 ||
    fail "build (see $out/build.log): $(tail -5 "$out/build.log")"
  note "built in $(( $(date +%s) - st )) s"
fi

# ** runs: each one's output in its own file; a failure is noted and the rest still run **
status=0
step() {  # step NAME TIMEOUT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local st=$(date +%s)
  DEV=CUDA timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local tail_line; tail_line=$(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$out/$name.log" | tail -2 | tr '\n' ' ')
  if [ $rc = 0 ]; then note "$name: ok in $(( $(date +%s) - st )) s $tail_line"
  else note "$name: FAILED (rc $rc) in $(( $(date +%s) - st )) s $tail_line (see $out/$name.log)"; status=1; fi
}
[ -x build/test_runtime ] || fail "build/test_runtime is missing (run without --no-build)"
step runtime 120 build/test_runtime --gtest_filter='Cuda*:Nvrtc*'
step tensor_cores 120 env DEBUG=4 build/test_conformance --gtest_filter='Gemm.HalfAndBfloat16MatmulsOfTheTensorCores'
note "tensor cores: $(grep -c 'asm("mma.sync' "$out/tensor_cores.log") mma.sync functions in the kernels run (0: none ran on them)"
step conformance 420 build/test_conformance
step bench 120 build/bench/gpu 4096 10
cat "$out/bench.log" >> "$summary"
exit $status
