#!/usr/bin/env bash
# Copyright 2026 remote_inference contributors
# Licensed under the Apache License, Version 2.0.
#
# The device check (docs/gpu.md) on a GPU host with no network, e.g. this workplace's device
# machine (Python 3.12, PyTorch + CUDA, transformers and torchvision installed):
#
#   bench/gpu_bundle.sh                 here, with network: the wheels into .whl/ (ignored)
#   bash bench/gpu_check.sh [OPTIONS]   there, from the repository root, .whl/ carried along
#
# It installs the carried wheels (LeRobot 0.6.1 and what it imports; nothing when .whl/ is
# absent) into a private folder, runs bench/bench_gpu.py with the repository's sources on the
# path (no build, no ROS: the runtimes and the server core are plain Python), and leaves
# bench/results/gpu.md and gpu.json, and copies them with the log and nvidia-smi's view
# (written to $OUT, or /tmp/bench_gpu_logs without it) to $OUT when that is set. OPTIONS go to bench_gpu.py (its --help; default: every model, float32
# and bfloat16, with and without compile, batch 1/4/8, within --budget-s 420). On a GPU host
# with network and this repository set up, `./run bench gpu` runs the same benchmark.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SITE=${RI_GPU_SITE:-/tmp/remote_inference_site}
RESULTS=$ROOT/bench/results
LOGS=${OUT:-/tmp/bench_gpu_logs}
mkdir -p "$LOGS"
PY=${PYTHON:-python3}
if compgen -G "$ROOT/.whl/*.whl" >/dev/null; then
  echo "gpu_check: installing $(ls "$ROOT"/.whl/*.whl | wc -l) carried wheels into $SITE" >&2
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$ROOT"/.whl/*.whl || { echo "gpu_check: wheel install failed" >&2; exit 1; }
fi
export PYTHONPATH=$ROOT/src:$ROOT/test:$ROOT/bench:$SITE${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem \
  --format=csv > "$LOGS/gpu_nvidia_smi.txt" 2>&1 || echo "no nvidia-smi" > "$LOGS/gpu_nvidia_smi.txt"
cat "$LOGS/gpu_nvidia_smi.txt"
"$PY" - <<'PY'
import importlib, sys
for name in ('torch', 'torchvision', 'transformers', 'lerobot', 'numpy'):
    try:
        module = importlib.import_module(name)
        print(f'{name} {getattr(module, "__version__", "?")} {getattr(module, "__file__", "")}')
    except Exception as error:  # noqa: B902
        print(f'{name}: {type(error).__name__}: {error}')
import torch
print('cuda', torch.cuda.is_available(), torch.version.cuda, sys.version.split()[0])
PY
# The benchmark stops starting cells after --budget-s; timeout is the backstop that still
# leaves the partial tables it rewrote after every stage.
timeout 560 "$PY" bench/bench_gpu.py --work-dir /tmp/bench_gpu_work "$@" 2>&1 \
  | tee "$LOGS/gpu_log.txt"
status=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then
  cp "$RESULTS"/gpu.md "$RESULTS"/gpu.json "$OUT"/ 2>/dev/null
fi
exit "$status"
