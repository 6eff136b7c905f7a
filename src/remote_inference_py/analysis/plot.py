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
Plot a run so that it reads the same for 10 s and for 10 minutes.

- **Joints** (top left): commanded (solid) and measured (dashed) positions with chunk
  arrivals, over a window: the whole run when it is at most :data:`WHOLE_RUN_S` long, else
  :data:`WINDOW_S` around the largest seam.
- **Largest seam** (top right): that one joint, half a second either side of the chunk that
  made it, one marker per command, so a jump of a few hundredths of a radian is visible.
- **Full run** (below, shared time axis): the executor's state (running, waiting, stopping)
  with buffered playback against the effective refill (for runs over :data:`LONG_RUN_S`, its
  range and minimum per bin: one sawtooth per chunk would fill the panel); turnaround per
  request; and, for the simulated arm, the cube's height with the pick's success. The joint
  window is shaded there.

Times are seconds since the executor's first command, from the messages' stamps
(:mod:`.summary`).
"""

import numpy as np

from remote_inference_py.analysis.summary import (
    joint_vector, stamped, start_ns, task_result, turnarounds)

WHOLE_RUN_S = 15.0
WINDOW_S = 8.0
SEAM_ZOOM_S = 0.5
LONG_RUN_S = 60.0     # longer runs show buffered playback per bin: its range and its minimum
OVERVIEW_BINS = 300
STATE_COLOURS = {'RUNNING': '#2ca02c', 'WAITING': '#d62728', 'STOPPING': '#1f77b4',
                 'READY': '#bbbbbb', 'IDLE': '#dddddd', 'STOPPED': '#888888',
                 'FAULT': '#000000'}


def state_intervals(statuses, zero_ns):
    """Return [(state, start s, end s)] from stamped statuses (consecutive equal states merged)."""
    out = []
    for stamp, msg in statuses:
        t = (stamp - zero_ns) * 1e-9
        if out and out[-1][0] == msg.state_name:
            out[-1][2] = t
            continue
        if out:
            out[-1][2] = t
        out.append([msg.state_name, t, t])
    return [tuple(item) for item in out]


def seam_events(topics, zero_ns):
    """Return [(time s, seam rad, chunk number)] for every accepted chunk after the first.

    The time is when that chunk was ready (request stamp plus the server's timings), else the
    status that counted it.
    """
    ready = sorted(t.ready_ns for t in turnarounds(topics))
    events, accepted = [], 0
    for stamp, msg in stamped(topics.get('/executor/status', [])):
        if msg.chunks_accepted > accepted and msg.chunks_accepted > 1:
            before = [r for r in ready if r <= stamp]
            when = before[-1] if before else stamp
            events.append(((when - zero_ns) * 1e-9, float(msg.last_seam_rad),
                           int(msg.chunks_accepted)))
        accepted = max(accepted, int(msg.chunks_accepted))
    return events


def joint_window(first_s, last_s, seams):
    """Return (start, end) [s] of the joint panel: the whole run if short, else a window."""
    if last_s - first_s <= WHOLE_RUN_S:
        return first_s, last_s
    centre = max(seams, key=lambda e: e[1])[0] if seams else first_s + WINDOW_S / 2
    start = min(max(centre - WINDOW_S / 2, first_s), last_s - WINDOW_S)
    return start, start + WINDOW_S


def _series(messages, zero_ns):
    if not messages:
        return np.zeros(0), np.zeros((0, 0))
    times = np.array([(t - zero_ns) * 1e-9 for t, _ in messages])
    return times, np.array([joint_vector(m) for _, m in messages])


def plot_run(topics, path, title='remote_inference run'):
    """Write the PNG described in the module docstring; return the path."""
    import matplotlib.pyplot as plt
    fig = figure_run(topics, title)
    fig.savefig(path, dpi=100, bbox_inches='tight')
    plt.close(fig)
    return path


def figure_run(topics, title='remote_inference run'):
    """Return the matplotlib figure of :func:`plot_run` (axes: joints, seam, full run...)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    zero = start_ns(topics)
    commands = stamped(topics.get('/joint_commands', []))
    measured = stamped(topics.get('/joint_states', []))
    statuses = stamped(topics.get('/executor/status', []))
    poses = stamped(topics.get('/sim/cube_pose', []))
    pairs = turnarounds(topics)
    tc, cmd = _series(commands, zero)
    tm, meas = _series(measured, zero)
    ends = [a for a in (tc[:1], tm[:1]) if len(a)] or [np.zeros(1)]
    first = min(0.0, min(float(a[0]) for a in ends))
    last = max([float(a[-1]) for a in (tc, tm) if len(a)] + [0.0])
    seams = seam_events(topics, zero)
    start, end = joint_window(first, last, seams)
    names = list(getattr(measured[0][1], 'name', [])) if measured else []
    cmd_names = (list(getattr(commands[0][1], 'name', [])) if commands else []) or names
    colours = plt.rcParams['axes.prop_cycle'].by_key()['color']
    arrivals = [(t.ready_ns - zero) * 1e-9 for t in pairs]

    rows = 4 if poses else 3
    fig = plt.figure(figsize=(12, 3.2 + 1.7 * rows))
    grid = fig.add_gridspec(rows, 3, height_ratios=[2.4] + [1] * (rows - 1), hspace=0.45)
    ax = fig.add_subplot(grid[0, :2])
    inside = (tc >= start) & (tc <= end)
    for j in range(cmd.shape[1] if len(tc) else 0):
        label = cmd_names[j] if j < len(cmd_names) else f'joint {j}'
        ax.plot(tc[inside], cmd[inside, j], color=colours[j % len(colours)], lw=1.2, label=label)
    inside = (tm >= start) & (tm <= end)
    for j in range(meas.shape[1] if len(tm) else 0):
        ax.plot(tm[inside], meas[inside, j], color=colours[j % len(colours)], lw=0.8, ls='--')
    for t in arrivals:
        if start <= t <= end:
            ax.axvline(t, color='grey', lw=0.6, alpha=0.7)
    ax.set_xlim(start, end)
    ax.set_ylabel('position [rad]')
    ax.set_xlabel('time [s]')
    window = 'whole run' if (start, end) == (first, last) else \
        f'{end - start:.0f} s around the largest seam; full run below'
    ax.set_title(f'joints ({window}): commanded solid, measured dashed, chunk arrivals grey',
                 fontsize=9)
    ax.legend(loc='upper right', fontsize=7, ncol=3)

    _plot_seam(fig.add_subplot(grid[0, 2]), seams, tc, cmd, tm, meas, cmd_names, colours)

    overview = fig.add_subplot(grid[1, :])
    axes = [overview] + [fig.add_subplot(grid[r, :], sharex=overview) for r in range(2, rows)]
    _plot_playback(axes[0], statuses, zero)
    _plot_turnaround(axes[1], pairs, zero)
    if poses:
        _plot_cube(axes[2], poses, zero, task_result(topics))
    for axis in axes:
        if (start, end) != (first, last):
            axis.axvspan(start, end, color='#ffd54f', alpha=0.25, lw=0)
        axis.set_xlim(first, max(last, first + 1e-3))
    axes[-1].set_xlabel('time since the executor started [s]')
    fig.suptitle(title, fontsize=11)
    return fig


def _plot_seam(ax, seams, tc, cmd, tm, meas, names, colours):
    ax.set_title('largest seam (zoom)', fontsize=9)
    if not seams or not len(tc):
        ax.text(0.5, 0.5, 'no seam: fewer than two chunks', ha='center', va='center',
                transform=ax.transAxes, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        return
    when, size, number = max(seams, key=lambda e: e[1])
    # The seam's joint: the largest change of commanded velocity just after the arrival.
    near = (tc >= when - 0.1) & (tc <= when + 0.4)
    kinks = np.abs(np.diff(cmd[near], n=2, axis=0)) if near.sum() > 2 else np.zeros((1, 1))
    joint = int(np.argmax(kinks.max(axis=0)))
    colour = colours[joint % len(colours)]
    inside = (tc >= when - SEAM_ZOOM_S) & (tc <= when + SEAM_ZOOM_S)
    ax.plot(tc[inside], cmd[inside, joint], '.-', color=colour, lw=1, ms=4, label='commanded')
    inside = (tm >= when - SEAM_ZOOM_S) & (tm <= when + SEAM_ZOOM_S)
    if len(tm) and joint < meas.shape[1]:
        ax.plot(tm[inside], meas[inside, joint], '--', color=colour, lw=0.8, label='measured')
    ax.axvline(when, color='grey', lw=0.8)
    name = names[joint] if joint < len(names) else f'joint {joint}'
    ax.set_title(f'largest seam: {size:.3f} rad, chunk {number}\n{name} at {when:.1f} s',
                 fontsize=9)
    ax.set_xlabel('time [s]')
    ax.legend(fontsize=7, loc='best')


def _plot_playback(ax, statuses, zero):
    if not statuses:
        ax.text(0.5, 0.5, 'no executor status recorded', ha='center', transform=ax.transAxes)
        return
    ts = np.array([(t - zero) * 1e-9 for t, _ in statuses])
    buffered = np.array([m.buffered_playback_s for _, m in statuses])
    if ts[-1] - ts[0] <= LONG_RUN_S:
        ax.plot(ts, buffered, color='black', lw=0.9, label='buffered playback')
    else:   # a sawtooth per chunk would fill the panel: its range and its low points per bin
        edges = np.linspace(ts[0], ts[-1], OVERVIEW_BINS + 1)
        bins = np.clip(np.searchsorted(edges, ts, side='right') - 1, 0, OVERVIEW_BINS - 1)
        used = np.unique(bins)
        low = np.array([buffered[bins == b].min() for b in used])
        high = np.array([buffered[bins == b].max() for b in used])
        centres = (edges[used] + edges[used + 1]) / 2
        width = edges[1] - edges[0]
        ax.fill_between(centres, low, high, color='grey', alpha=0.35, lw=0,
                        label=f'buffered playback (range per {width:.1f} s)')
        ax.plot(centres, low, color='black', lw=0.9, label='lowest buffered playback')
    ax.plot(ts, [m.effective_refill_s for _, m in statuses], ls=':', color='purple',
            label='effective refill')
    top = max([m.buffered_playback_s for _, m in statuses] + [0.1]) * 1.15
    seen = set()
    for state, begin, end in state_intervals(statuses, zero):
        if state not in ('RUNNING', 'WAITING', 'STOPPING'):
            continue
        label = state.lower() if state not in seen else None
        seen.add(state)
        ax.axvspan(begin, end, color=STATE_COLOURS[state], alpha=0.18, lw=0, label=label)
        if state == 'WAITING':   # a marker too, visible however short the hold
            ax.plot([(begin + end) / 2], [top], 'v', color=STATE_COLOURS[state], ms=6)
    ax.set_ylim(0, top * 1.08)
    ax.set_ylabel('[s]')
    ax.set_title('executor: state (running, waiting = holding, stopping), buffered playback',
                 fontsize=9)
    ax.legend(loc='upper right', fontsize=7, ncol=5)


def _plot_turnaround(ax, pairs, zero):
    ax.set_title('turnaround per request (request stamp to chunk ready, from the messages)',
                 fontsize=9)
    ax.set_ylabel('[ms]')
    if not pairs:
        ax.text(0.5, 0.5, 'no answered request', ha='center', transform=ax.transAxes)
        return
    values = [t.seconds * 1e3 for t in pairs]
    ax.plot([(t.sent_ns - zero) * 1e-9 for t in pairs], values, 'o', ms=3.5)
    ax.axhline(float(np.median(values)), color='grey', lw=0.6, ls=':')
    ax.set_ylim(0, max(values) * 1.25)


def _plot_cube(ax, poses, zero, result):
    ts = np.array([(t - zero) * 1e-9 for t, _ in poses])
    z = np.array([m.pose.position.z for _, m in poses])
    before = z[ts < 0]
    rest = float(before[-1]) if len(before) else float(z[0])
    ax.plot(ts, (z - rest) * 100, color='#8c564b', lw=1.2, label='cube lift')
    if result is not None:
        ax.axhline(result.lift_height_m * 100, color='grey', ls=':', lw=0.8,
                   label=f'success: {result.lift_height_m * 100:.0f} cm for '
                   f'{result.hold_s:g} s')
        if result.success:
            ax.axvline(result.completion_time_s, color='#2ca02c', lw=1.2)
            ax.text(result.completion_time_s, result.lift_height_m * 100,
                    f' picked at {result.completion_time_s:.1f} s', color='#2ca02c',
                    fontsize=8, va='bottom')
    ax.set_ylabel('[cm]')
    ax.set_title('cube height above the table (simulated pose): the task', fontsize=9)
    ax.legend(loc='upper left', fontsize=7)
