#!/usr/bin/env bash
# PyTorch 2 (PyPI's wheel: MKL, oneDNN) against our bench/conv, bench/infer and bench/mnist in one run: installs torch
# into its own venv under ~/.cache/tg-bench/torch-venv on first use (never into the repo or its .venv; setup.sh and the
# tests never call this), then runs bench/torch_anchor.py, which times the same workloads in PyTorch 2, runs our bench
# binaries (BUILD, default build/) and prints a table of ratios. Arguments go to bench/torch_anchor.py, e.g.
#   bench/torch.sh                                   # everything: conv batch 512, infer over 10,000 images, mnist 512 and 128
#   NUM_CPU_THREADS=1 BENCH_CPU_TIME=1 bench/torch.sh --only conv,infer --images 1000
# Only PyPI is reachable (no CPU-only wheel index), so the wheel is the CUDA build: its metadata pulls the nvidia-* and
# cuda-toolkit wheels it links against, which `import torch` loads even without a GPU. They sit in the venv's
# site-packages/nvidia/*/lib (and cusparselt/, nvshmem/); the wheel finds them through its RPATH, and their lib folders go
# on LD_LIBRARY_PATH too, for a wheel whose RPATH misses one (TORCH_SPEC picks another version, default torch>=2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${TORCH_VENV:-$HOME/.cache/tg-bench/torch-venv}
if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --no-input --quiet "${TORCH_SPEC:-torch>=2}" numpy
fi
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
LIBS=$(find "$SITE/nvidia" "$SITE"/cusparselt* "$SITE"/nvshmem* -maxdepth 3 -type d -name lib 2>/dev/null | paste -sd: || true)
export LD_LIBRARY_PATH="${LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$ROOT"
exec "$VENV/bin/python" bench/torch_anchor.py --build "${BUILD:-build}" "$@"
