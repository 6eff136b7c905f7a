# Copyright 2026 remote_inference contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The simulated SO-101 (``hardware/sim.py``): real-time factor, physics speed and render time.

Each cell runs the simulator as the hardware interface does, in real time for ``--seconds``:
the physics updated at 50 Hz towards a slowly moving target, the ``front`` camera rendered at
30 Hz in its own thread (``--width`` x ``--height``, simplified meshes unless
``--full-meshes``), and, after it, 5000 physics steps as fast as possible. Cells: headless
(no camera), then with the camera unless ``--no-render``.

Per cell: wall and simulated time and their ratio (the real-time factor), the process's CPU
in percent of one core, the frames rendered, late frames, the mean render time per frame, the
triangles the rendering copy draws, the time skipped because the caller fell behind, and the
physics alone (steps per second and its speed-up over real time). The numbers measured on the
project's machine are in the docstring of ``hardware/sim.py``.

Run: ``./run bench sim`` (or ``python bench/bench_sim.py --seconds 5 --width 640 --height 480``
inside ``./run shell``). Prints a markdown table and writes bench/results/sim.md; ``--smoke``
(bench/smoke.py): half a second per cell at 64x48.
"""

import argparse
import math
import os
import sys
import time
from typing import Dict, List, Sequence

import numpy as np
import smoke

from remote_inference_py.hardware.config import SimConfig
from remote_inference_py.hardware.sim import So101Sim
from remote_inference_py.hardware.sim_scene import import_mujoco, SimError, TIMESTEP_S
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

BURST_STEPS = 5000


def measure(seconds: float, width: int, height: int, render: bool, simplify: bool,
            joint_names: Sequence[str]) -> Dict[str, float]:
    """Run the sim in real time for ``seconds`` with a moving target; return its numbers."""
    frames: List[float] = []
    config = SimConfig(joint_names=tuple(joint_names), render=render, width=width,
                       height=height, simplify_meshes=simplify)
    sim = So101Sim(config, on_frame=lambda camera, frame, stamp: frames.append(stamp))
    start_cpu = time.process_time()
    sim.start()
    started = time.monotonic()
    sim_started = sim.sim_time
    period = 1.0 / 50.0
    deadline = started
    while time.monotonic() - started < seconds:
        phase = (time.monotonic() - started) * 2 * math.pi / 4.0
        sim.set_targets(0.4 * math.sin(phase) * np.ones(len(joint_names)))
        sim.advance()
        deadline += period
        time.sleep(max(0.0, deadline - time.monotonic()))
    wall = time.monotonic() - started
    cpu = time.process_time() - start_cpu
    sim.close()
    # Physics alone, as fast as possible, to report the speed-up over real time.
    burst_start = time.perf_counter()
    import_mujoco().mj_step(sim.model, sim.data, nstep=BURST_STEPS)
    burst = time.perf_counter() - burst_start
    return {
        'wall_s': wall, 'sim_s': sim.sim_time - sim_started - BURST_STEPS * TIMESTEP_S,
        'cpu_percent': 100.0 * cpu / wall, 'frames': float(sim.frames),
        'render_ms_per_frame': 1000.0 * sim.render_seconds / max(1, sim.frames),
        'late_frames': float(sim.late_frames), 'skipped_s': sim.skipped_s,
        'physics_steps_per_s': BURST_STEPS / burst,
        'physics_speedup': BURST_STEPS * TIMESTEP_S / burst,
        'render_triangles': float(sim.mesh_triangles),
    }


def table(rows) -> str:
    """Return the cells as a markdown table."""
    lines = ['| cell | wall s | sim s | real-time factor | CPU % | frames | late | '
             'render ms/frame | triangles | skipped s | physics steps/s | physics speed-up |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
    for name, r in rows:
        if isinstance(r, str):
            lines.append(f'| {name} | {r} |' + ' |' * 10)
            continue
        lines.append(
            f'| {name} | {r["wall_s"]:.2f} | {r["sim_s"]:.2f} | {r["sim_s"] / r["wall_s"]:.3f} | '
            f'{r["cpu_percent"]:.0f} | {r["frames"]:.0f} | {r["late_frames"]:.0f} | '
            f'{r["render_ms_per_frame"]:.1f} | {r["render_triangles"]:.0f} | '
            f'{r["skipped_s"]:.3f} | {r["physics_steps_per_s"]:.0f} | '
            f'{r["physics_speedup"]:.0f}x |')
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Run the cells, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=5.0, help='real time per cell [s]')
    parser.add_argument('--width', type=int, default=SimConfig.width)
    parser.add_argument('--height', type=int, default=SimConfig.height)
    parser.add_argument('--no-render', action='store_true', help='only the headless cell')
    parser.add_argument('--full-meshes', action='store_true', help='the original meshes')
    options = smoke.parse_args(parser, argv, seconds=0.5, width=64, height=48)
    rows = [('headless', measure(options.seconds, options.width, options.height, False,
                                 not options.full_meshes, SO101_JOINT_NAMES))]
    if not options.no_render:
        name = f'camera {options.width}x{options.height} at 30 Hz'
        try:
            rows.append((name, measure(options.seconds, options.width, options.height, True,
                                       not options.full_meshes, SO101_JOINT_NAMES)))
        except SimError as error:   # no offscreen rendering on this machine: say so
            rows.append((name, f'no rendering here: {error}'.replace('|', '/')))
    text = table(rows)
    host = (f'{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end; '
            f'{options.seconds:g} s per cell, '
            f'{"original" if options.full_meshes else "simplified"} meshes')
    print(text)
    path = smoke.write_results(options, 'sim.md',
                               f'# The simulated SO-101\n\n{host}\n\n{text}\n', __file__, argv)
    print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
