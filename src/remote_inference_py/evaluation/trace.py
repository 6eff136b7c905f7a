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
Per-episode traces of the simulated-time runner: why two configurations differ on one seed.

A trace records, for every executor tick of one episode (times in seconds since the
executor started): the command the executor sent (NaN while the hardware holds), the
measured joint positions, the cube's position, and the grasp point (the point between the
jaw pads, by forward kinematics of the measured pose). For every chunk that reached the
executor it records the :class:`~remote_inference_py.executor.core.ChunkVerdict` (accepted
or dropped and why, trimmed steps, seam, turnaround, age of the observation), the capture
time, and the plan before and after the merge, so two plans going different ways can be
seen and measured (*plan disagreement*: the largest change the new chunk made to the plan
over the next half second of ticks both plans cover, and on which joint).

Tracing only reads the simulation and the executor (the runner's ``on_tick`` and
``on_chunk`` hooks); a traced episode runs exactly as an untraced one.

:func:`describe` turns a trace into a few facts (first contact with the cube, highest lift,
whether the cube was dropped or pushed, the switches while the jaws were near the cube);
:func:`divergence` finds where two traces of the same seed part; :func:`plot_seed` draws
the traces of one seed side by side (one column per configuration; rows: the six joints,
commanded solid and measured dashed, chunk switches as vertical lines, the plan a switch
replaced dotted; then the cube height and the grasp point's distance to the cube).
"""

import dataclasses
import json
import math
import os
import pathlib
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from remote_inference_py.evaluation.task import JOINT_NAMES

PLAN_ROWS_KEPT = 60
"""Rows of the plans before and after a switch kept in the trace (2 s at 30 Hz)."""
DISAGREEMENT_ROWS = 15
"""Plan disagreement looks this many action ticks past the switch (0.5 s at 30 Hz)."""
NEAR_CUBE_M = 0.03
"""Grasp point this close to the cube's centre: the jaws are at the cube."""
MOVED_M = 0.005
"""The cube counts as touched once it moved this far from where it rested."""
DIVERGED_RAD = 0.05
"""Two runs of a seed have parted once a measured joint differs by this much."""

_kinematics = None


def _grasp_point(q: np.ndarray) -> np.ndarray:
    global _kinematics
    if _kinematics is None:
        from remote_inference_py.evaluation.expert import ArmKinematics
        _kinematics = ArmKinematics()
    return np.asarray(_kinematics.grasp_point(np.asarray(q, dtype=np.float64)), dtype=float)


def _rows(plan, start_tick: int, rows: int = PLAN_ROWS_KEPT) -> Dict[str, Any]:
    """Return a plan's rows from ``start_tick`` on (at most ``rows``) as plain data."""
    first = max(0, start_tick - plan.start_tick)
    positions = np.asarray(plan.positions)[first:first + rows]
    return {'start_tick': int(plan.start_tick + first), 'positions': positions.tolist()}


class EpisodeTrace:
    """What one simulated episode did, tick by tick and chunk by chunk."""

    def __init__(self, mode: str = '', latency_s: float = 0.0, seed: int = 0):
        """Start an empty trace of configuration (``mode``, ``latency_s``) on ``seed``."""
        self.meta: Dict[str, Any] = {'mode': mode, 'latency_s': float(latency_s),
                                     'seed': int(seed), 'joints': list(JOINT_NAMES)}
        self.t: List[float] = []
        self.command: List[List[float]] = []
        self.measured: List[List[float]] = []
        self.cube: List[List[float]] = []
        self.grasp: List[List[float]] = []
        self.held: List[bool] = []
        self.switches: List[Dict[str, Any]] = []

    # ---- hooks of the simulated-time runner ---------------------------------------------

    def on_tick(self, system, out) -> None:
        """Record one executor tick (the runner calls this after the tick's command)."""
        if system.started_at is None or system.measured is None:
            return
        self.t.append(system.now - system.started_at)
        command = out.command
        self.command.append([math.nan] * len(JOINT_NAMES) if command is None
                            else [float(v) for v in command])
        self.measured.append([float(v) for v in system.measured])
        self.cube.append([float(v) for v in system.sim.cube_pose()[0]])
        self.grasp.append(_grasp_point(system.measured).tolist())
        self.held.append(bool(out.held))

    def on_chunk(self, system, chunk, verdict, before) -> None:
        """Record one chunk's arrival: its verdict and the plan before and after it."""
        core = system.core
        started = system.started_at if system.started_at is not None else 0.0
        after = core.plan
        fps = core.config.fps
        first_free = core.committed_tick + 1
        entry = {
            't': system.now - started, 'request_id': int(verdict.request_id),
            'accepted': bool(verdict.accepted), 'reason': verdict.reason,
            'capture_t': float(chunk.capture_time) - started,
            'turnaround': verdict.turnaround, 'observation_age': verdict.observation_age,
            'seam': verdict.seam, 'trimmed_steps': int(verdict.trimmed_steps),
            'usable_steps': int(verdict.usable_steps),
            'overlap_steps': int(verdict.overlap_steps), 'gap_steps': int(verdict.gap_steps),
            'first_free_tick': int(first_free),
            'timeline_start': float(core.timeline_start) - started, 'fps': float(fps),
            'disagreement': None, 'disagreement_joint': None, 'disagreement_t': None,
            'near_cube_m': None,
        }
        if self.grasp:
            entry['near_cube_m'] = float(np.linalg.norm(
                np.asarray(self.grasp[-1]) - np.asarray(self.cube[-1])))
        if verdict.accepted:
            entry['before'] = _rows(before, first_free)
            entry['after'] = _rows(after, first_free)
            old, new = np.asarray(entry['before']['positions']), np.asarray(
                entry['after']['positions'])
            rows = min(len(old), len(new), DISAGREEMENT_ROWS)
            if rows and entry['before']['start_tick'] == entry['after']['start_tick']:
                change = np.abs(new[:rows] - old[:rows])
                row, joint = np.unravel_index(int(np.argmax(change)), change.shape)
                entry['disagreement'] = float(change[row, joint])
                entry['disagreement_joint'] = JOINT_NAMES[joint]
                entry['disagreement_t'] = (entry['timeline_start']
                                           + (entry['after']['start_tick'] + row) / fps)
        self.switches.append(entry)

    def finish(self, result) -> None:
        """Store the episode's outcome with the trace."""
        self.meta.update({'success': bool(result.success),
                          'completion_time_s': result.completion_time_s,
                          'max_lift_m': float(result.max_lift_m), 'error': result.error,
                          'policy': result.policy})

    # ---- files ----------------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """Return the trace as plain data."""
        return {'meta': self.meta, 't': self.t, 'command': self.command,
                'measured': self.measured, 'cube': self.cube, 'grasp': self.grasp,
                'held': self.held, 'switches': self.switches}

    def save(self, path: os.PathLike) -> pathlib.Path:
        """Write the trace as JSON; return the path."""
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), allow_nan=True))
        return path

    @classmethod
    def load(cls, path: os.PathLike) -> 'EpisodeTrace':
        """Read a trace written by :meth:`save`."""
        data = json.loads(pathlib.Path(path).read_text())
        trace = cls()
        trace.meta = data['meta']
        for name in ('t', 'command', 'measured', 'cube', 'grasp', 'held', 'switches'):
            setattr(trace, name, data[name])
        return trace

    @property
    def label(self) -> str:
        """Return e.g. ``aligned L=0.3 seed 17``."""
        m = self.meta
        return f'{m["mode"]} L={m["latency_s"]:g} seed {m["seed"]}'

    def file_name(self) -> str:
        """Return the trace's file name, e.g. ``aligned_L0.3_seed17.json``."""
        m = self.meta
        return f'{m["mode"].replace("+", "_")}_L{m["latency_s"]:g}_seed{m["seed"]}.json'


# ---- what happened ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Facts:
    """What one traced episode did to the cube and when the plan switched."""

    success: bool
    max_lift_m: float
    first_contact_s: Optional[float]
    lifted_s: Optional[float]          # the cube first 1 cm up
    dropped: bool                      # lifted 1 cm or more, then back on the table
    pushed_m: float                    # how far the cube slid on the table before any lift
    switches: int
    dropped_chunks: int
    near_switches: int                 # accepted switches while the jaws were at the cube
    largest_near_seam: Optional[float]
    largest_near_disagreement: Optional[float]
    largest_near_joint: Optional[str]
    max_seam: Optional[float]
    max_observation_age: Optional[float]


def describe(trace: EpisodeTrace) -> Facts:
    """Return the facts of a trace (see :class:`Facts`)."""
    cube = np.asarray(trace.cube, dtype=float).reshape(-1, 3)
    t = np.asarray(trace.t, dtype=float)
    first_contact = lifted = None
    pushed = 0.0
    dropped = False
    if len(cube):
        rest = cube[0]
        moved = np.linalg.norm(cube - rest, axis=1)
        touched = np.nonzero(moved > MOVED_M)[0]
        first_contact = float(t[touched[0]]) if len(touched) else None
        up = np.nonzero(cube[:, 2] - rest[2] > 0.01)[0]
        lifted = float(t[up[0]]) if len(up) else None
        before_lift = cube[:up[0]] if len(up) else cube
        pushed = float(np.max(np.linalg.norm(before_lift[:, :2] - rest[:2], axis=1)))
        dropped = bool(len(up) and cube[-1, 2] - rest[2] < 0.005)
    accepted = [s for s in trace.switches if s['accepted']]
    near = [s for s in accepted if s.get('near_cube_m') is not None
            and s['near_cube_m'] < NEAR_CUBE_M and (lifted is None or s['t'] <= lifted + 1.0)]
    seams = [s['seam'] for s in accepted if s['seam'] is not None]
    ages = [s['observation_age'] for s in accepted if s['observation_age'] is not None]
    worst = max(near, key=lambda s: s['disagreement'] or 0.0) if near else None
    return Facts(
        success=bool(trace.meta.get('success')), max_lift_m=float(
            trace.meta.get('max_lift_m', 0.0)), first_contact_s=first_contact,
        lifted_s=lifted, dropped=dropped, pushed_m=pushed, switches=len(accepted),
        dropped_chunks=len(trace.switches) - len(accepted), near_switches=len(near),
        largest_near_seam=max((s['seam'] or 0.0 for s in near), default=None),
        largest_near_disagreement=worst['disagreement'] if worst else None,
        largest_near_joint=worst['disagreement_joint'] if worst else None,
        max_seam=max(seams) if seams else None,
        max_observation_age=max(ages) if ages else None)


def divergence(first: EpisodeTrace, second: EpisodeTrace,
               threshold: float = DIVERGED_RAD) -> Optional[Dict[str, Any]]:
    """Return where two traces of one seed part: time, joint, size; None if they never do.

    Samples are matched by time (both runners tick on the same clock); the arm joints and
    the gripper count alike.
    """
    a, b = np.asarray(first.measured, dtype=float), np.asarray(second.measured, dtype=float)
    ta, tb = np.asarray(first.t), np.asarray(second.t)
    rows = min(len(a), len(b))
    if not rows:
        return None
    if not np.allclose(ta[:rows], tb[:rows], atol=1e-6):
        tb_index = np.searchsorted(tb, ta[:rows]).clip(0, len(b) - 1)
        b = b[tb_index]
    diff = np.abs(a[:rows] - b[:rows])
    over = np.nonzero(diff.max(axis=1) > threshold)[0]
    if not len(over):
        return None
    row = int(over[0])
    joint = int(np.argmax(diff[row]))
    return {'t': float(ta[row]), 'joint': JOINT_NAMES[joint],
            'difference': float(diff[row, joint])}


def switch_before(trace: EpisodeTrace, t: float) -> Optional[Dict[str, Any]]:
    """Return the last accepted switch at or before time ``t``, or None."""
    earlier = [s for s in trace.switches if s['accepted'] and s['t'] <= t + 1e-9]
    return earlier[-1] if earlier else None


# ---- the plot -----------------------------------------------------------------------------

def plot_seed(traces: Sequence[EpisodeTrace], path: os.PathLike, title: str = '',
              window: Optional[Sequence[float]] = None) -> pathlib.Path:
    """Plot the traces of one seed side by side (one column each); return the PNG path.

    ``window`` = (start, end) [s] limits the time axis (default: the whole episodes).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    path = pathlib.Path(path)
    rows = len(JOINT_NAMES) + 2
    columns = max(1, len(traces))
    figure, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 1.55 * rows),
                                sharex=True, squeeze=False)
    colours = plt.rcParams['axes.prop_cycle'].by_key()['color']
    for column, trace in enumerate(traces):
        t = np.asarray(trace.t, dtype=float)
        command = np.asarray(trace.command, dtype=float).reshape(-1, len(JOINT_NAMES))
        measured = np.asarray(trace.measured, dtype=float).reshape(-1, len(JOINT_NAMES))
        cube = np.asarray(trace.cube, dtype=float).reshape(-1, 3)
        grasp = np.asarray(trace.grasp, dtype=float).reshape(-1, 3)
        meta = trace.meta
        outcome = (f'success at {meta["completion_time_s"]:.2f} s' if meta.get('success')
                   else f'failure (max lift {100 * meta.get("max_lift_m", 0.0):.1f} cm)')
        axes[0, column].set_title(f'{meta["mode"]} L={meta["latency_s"]:g}: {outcome}',
                                  fontsize=9)
        accepted = [s for s in trace.switches if s['accepted']]
        dropped = [s for s in trace.switches if not s['accepted']]
        for joint, name in enumerate(JOINT_NAMES):
            axis = axes[joint, column]
            colour = colours[joint % len(colours)]
            axis.plot(t, command[:, joint], '-', color=colour, lw=1.1, label='commanded')
            axis.plot(t, measured[:, joint], '--', color='k', lw=0.8, label='measured')
            for s in accepted:
                old = s.get('before')
                if old and old['positions'] and (s['disagreement'] or 0.0) > 0.02:
                    steps = np.asarray(old['positions'], dtype=float)
                    times = s['timeline_start'] + (old['start_tick']
                                                   + np.arange(len(steps))) / s['fps']
                    axis.plot(times, steps[:, joint], ':', color=colour, lw=0.9, alpha=0.8)
            axis.set_ylabel(f'{name}\n[rad]', fontsize=7)
        cube_axis, near_axis = axes[-2, column], axes[-1, column]
        if len(cube):
            cube_axis.plot(t, 100 * (cube[:, 2] - cube[0, 2]), color='tab:brown')
            cube_axis.axhline(5.0, color='tab:green', lw=0.7, ls=':')
            near_axis.plot(t, 100 * np.linalg.norm(grasp - cube, axis=1), color='tab:purple')
            near_axis.axhline(100 * NEAR_CUBE_M, color='grey', lw=0.7, ls=':')
        cube_axis.set_ylabel('cube lift\n[cm]', fontsize=7)
        near_axis.set_ylabel('jaws to\ncube [cm]', fontsize=7)
        near_axis.set_xlabel('time since start [s]')
        for axis in axes[:, column]:
            for s in accepted:
                axis.axvline(s['t'], color='grey', lw=0.6, alpha=0.6)
            for s in dropped:
                axis.axvline(s['t'], color='tab:red', lw=0.6, ls=':', alpha=0.8)
            axis.grid(True, alpha=0.25)
            axis.tick_params(labelsize=7)
            if window is not None:
                axis.set_xlim(*window)
        for s in accepted:
            if s['seam'] is not None and s['seam'] > 0.03:
                axes[-1, column].annotate(f'{s["seam"]:.2f}', (s['t'], 0), fontsize=6,
                                          color='grey', rotation=90, va='bottom')
    axes[0, 0].legend(fontsize=7, loc='best')
    figure.suptitle(title or f'seed {traces[0].meta["seed"]}: commanded (solid), measured '
                    '(dashed), replaced plans (dotted); grey lines: chunk switches '
                    '(seam [rad] noted below)', fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
