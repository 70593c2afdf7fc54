#!/usr/bin/env bash
# Set up tinygrad.cpp on Debian 12 (as root, or a user with sudo), build it, and run something.
#   ./setup.sh             install packages, build into build/, run the main job (build/beautiful_mnist: train on Fashion-MNIST)
#   ./setup.sh --test      install packages, build into build/, run the whole test suite
#   ./setup.sh --sanitize  install packages, build into build-asan/ with ASan+UBSan, run the tests
# Safe to re-run: apt is skipped when every package is present, builds are incremental (ccache).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

mode=run
case "${1:-}" in
  "") ;;
  --test) mode=test ;;
  --sanitize) mode=sanitize ;;
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown option '$1' (use --test, --sanitize or nothing)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "setup.sh: takes at most one option" >&2; exit 2; }

# Debian packages the build, tests and examples need.
PACKAGES=(
  build-essential g++ clang cmake ninja-build ccache pkg-config
  libgtest-dev googletest
  libsqlite3-dev
  nlohmann-json3-dev zlib1g-dev  # safetensors headers, gzipped datasets
  dataset-fashion-mnist          # /usr/share/datasets/fashion-mnist: tg::nn::datasets::mnist and tests/nn
  fortunes                       # /usr/share/games/fortunes: the text tests/tokenizer trains its vocabularies on
  libtorch-dev  # the oracle of tests/conformance (libtorch 1.13, CPU)
  libopenblas-dev # bench/gemm's anchor: OpenBLAS's cblas_sgemm
  python3-torch # torch.save writes the checkpoints tests/nn reads with torch_load
  ocl-icd-libopencl1 pocl-opencl-icd  # the CL device: the OpenCL loader (opened at run time) and PoCL's CPU device
  libcpp-httplib-dev  # tg-llm serve's HTTP server, and tests/llm's client of it
  chromium           # tests/llm/chat_page.py: tg-llm serve's chat page in headless Chromium
  python3 python3-venv ca-certificates git  # python3-venv: .venv with gguf-py, which writes tests/llm's GGUF files
)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"
fi

JOBS=$(nproc)

# the tests' Python packages (PyPI) in .venv, where CMake's TG_PYTHON points: gguf-py writes tests/llm's GGUF files,
# Hugging Face tokenizers is tests/tokenizer's oracle; skipped when they import already
pyenv() {
  .venv/bin/python3 -c 'import gguf, numpy, tokenizers' 2>/dev/null && return
  echo "setup.sh: making .venv with gguf, numpy and tokenizers"
  [ -x .venv/bin/pip ] || python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check 'gguf==0.19.0' numpy 'tokenizers==0.23.3'
}

# NVRTC, the CUDA device's compiler, which the tests use without a GPU (they compile every kernel for sm_90): the CUDA
# toolkit's when there is one, else PyPI's wheels in .venv (libnvrtc and the cuda_fp16.h it includes, ~230 MB), where
# CMake points the tests (CUDA_PATH). Debian 12 has NVRTC only in non-free (libnvrtc11.2, CUDA 11.8), so not from apt
nvrtc() {
  [ -n "${CUDA_PATH:-}" ] && [ -e "$CUDA_PATH/include/cuda_fp16.h" ] && return
  [ -e /usr/local/cuda/include/cuda_fp16.h ] && ls /usr/local/cuda/lib*/libnvrtc.so* >/dev/null 2>&1 && return
  ls .venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 >/dev/null 2>&1 && return
  echo "setup.sh: installing NVRTC (nvidia-cuda-nvrtc, nvidia-cuda-runtime) into .venv"
  [ -x .venv/bin/pip ] || python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvrtc==13.0.88' 'nvidia-cuda-runtime==13.0.96'
}

# configure (once, or again after a generator change) and build incrementally
build() {  # build DIR [cmake args...]
  local dir=$1; shift
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    echo "setup.sh: $dir was configured with another generator; reconfiguring from scratch"
    rm -rf "$dir"
  fi
  cmake -S . -B "$dir" -G Ninja "$@"
  cmake --build "$dir" -j"$JOBS"
}

case $mode in
  run)
    build build -DCMAKE_BUILD_TYPE=Release
    exec build/beautiful_mnist
    ;;
  test)
    pyenv
    nvrtc
    build build -DCMAKE_BUILD_TYPE=Release
    # the symbolic suite's headline first (how many cases render exactly as tinygrad), ctest's verdict last
    build/test_uop --gtest_filter='SymbolicSummary.*' | grep '^symbolic:' || true
    exec ctest --test-dir build --output-on-failure -j"$JOBS"
    ;;
  sanitize)
    # RelWithDebInfo: optimised like Release, but sanitizer reports carry file:line
    pyenv
    nvrtc
    build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_SANITIZE=ON
    export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    exec ctest --test-dir build-asan --output-on-failure -j"$JOBS"
    ;;
esac
