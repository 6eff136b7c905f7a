#!/usr/bin/env bash
# Copyright 2026 remote_inference contributors
# Licensed under the Apache License, Version 2.0.
#
# The wheels the device check (bench/gpu_check.sh) needs that the GPU host lacks, downloaded
# here for CPython 3.12 on manylinux x86_64 into .whl/ (ignored by git; never commit wheels).
#
#   bench/gpu_bundle.sh            LeRobot 0.6.1 and what its ACT, diffusion and SmolVLA
#                                  imports need, beyond what the device image already has
#   bench/gpu_bundle.sh --ros      also the ROS 2 runtime wheels of requirements.txt and every
#                                  ros-* wheel they need (into .whl-ros/, measured apart:
#                                  45 MB, which does not fit one 64 MiB call beside .whl/)
#
# Each wheel is fetched with --no-deps: the device image (docs/gpu.md, "The device check")
# already holds torch 2.11, torchvision 0.26, numpy, safetensors, huggingface-hub, accelerate,
# einops, requests, tqdm, packaging, pyyaml, typing-inspect, cloudpickle, opencv and pillow.
# What is listed here is LeRobot 0.6.1's own Requires-Dist (and its smolvla / diffusion
# extras) minus that image. The script ends with the bundle's size and contents.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${RI_BUNDLE_DIR:-$ROOT/.whl}
PY=${PYTHON:-python3}
# Pins, each checked against lerobot 0.6.1's METADATA (Requires-Dist ranges in comments).
LEROBOT_WHEELS=(
  lerobot==0.6.1
  'draccus>=0.11.6,<0.12'        # lerobot: >=0.11.6,<0.12
  mergedeep==1.3.4               # draccus
  'pyyaml-include>=1.4,<2'       # draccus 0.11: pyyaml-include~=1.4
  toml==0.10.2                   # draccus
  'gymnasium>=1.1.1,<2'          # lerobot (imported by lerobot.envs through the factories)
  farama-notifications==0.0.6    # gymnasium
  'termcolor>=2.4,<4'            # lerobot
  'transformers>=5.4,<5.6'       # lerobot[smolvla]: the image's 5.17 is outside the range
  'num2words>=0.5.14,<0.6'       # lerobot[smolvla]
  docopt==0.6.2                  # num2words (an sdist only: built to a wheel below)
  'diffusers>=0.35,<0.36'        # lerobot[diffusion]
)
PLATFORMS=()
for tag in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 \
           manylinux_2_31_x86_64 manylinux_2_28_x86_64 manylinux_2_27_x86_64 \
           manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
           manylinux1_x86_64 linux_x86_64 any; do
  PLATFORMS+=(--platform "$tag")
done

fetch() {   # fetch DEST SPEC: one wheel for cp312, built from an sdist when no wheel exists
  local dest=$1 spec=$2
  if ! "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp "${PLATFORMS[@]}" -d "$dest" "$spec" 2>/dev/null; then
    # A pure-Python sdist (docopt): build its wheel here; it installs anywhere.
    "$PY" -m pip wheel -q --no-deps -w "$dest" "$spec"
  fi
}

mkdir -p "$DEST"
for spec in "${LEROBOT_WHEELS[@]}"; do
  echo "gpu_bundle: $spec" >&2
  fetch "$DEST" "$spec"
done
if [ "${1:-}" = --ros ]; then
  # The ROS 2 runtime packages requirements.txt names, with every ros-* package they need in
  # turn (read from each wheel's Requires-Dist); their few non-ROS needs are listed at the end.
  mkdir -p "$ROOT/.whl-ros"
  "$PY" - "$ROOT/.whl-ros" "$ROOT/requirements.txt" "${PLATFORMS[@]}" <<'PY'
import pathlib, re, subprocess, sys, zipfile
dest, requirements, platforms = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
wanted = r'ros-(rclpy|rmw-fastrtps-cpp|fastdds|[a-z-]*-(msgs|srvs|interfaces))=='
todo = [line.strip() for line in open(requirements) if re.match(wanted, line)]
seen, others = set(), set()
while todo:
    spec = todo.pop()
    name = re.split(r'[=<>!~;\[ ]', spec)[0].lower().replace('_', '-')
    if name in seen:
        continue
    seen.add(name)
    print(f'gpu_bundle: {spec}', file=sys.stderr)
    subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '--no-deps',
                    '--only-binary=:all:', '--python-version', '3.12', '--implementation', 'cp',
                    *platforms, '-d', str(dest), spec], check=True)
    wheel = max(dest.glob(name.replace('-', '_') + '-*.whl'), key=lambda p: p.stat().st_mtime)
    archive = zipfile.ZipFile(wheel)
    metadata = next(n for n in archive.namelist() if n.endswith('.dist-info/METADATA'))
    for line in archive.read(metadata).decode().splitlines():
        if line.startswith('Requires-Dist:') and 'extra ==' not in line:
            requirement = line.split(':', 1)[1].split(';')[0].replace(' ', '')
            if requirement.lower().startswith('ros-'):
                todo.append(requirement)
            else:
                others.add(requirement)
print(f'gpu_bundle: non-ROS needs of the ROS wheels: {" ".join(sorted(others))}',
      file=sys.stderr)
PY
fi
echo "== $DEST: $(du -sh "$DEST" | cut -f1) in $(ls "$DEST" | wc -l) wheels"
ls -s --block-size=K "$DEST" | sed 1d
if [ -d "$ROOT/.whl-ros" ]; then
  echo "== $ROOT/.whl-ros: $(du -sh "$ROOT/.whl-ros" | cut -f1) in $(ls "$ROOT/.whl-ros" | wc -l) wheels"
fi
