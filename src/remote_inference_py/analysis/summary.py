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
Summarise a run from its recorded topics (no ROS needed): what the demo and ``analyze`` print.

Input is ``{topic: [(receive_ns, message), ...]}`` as returned by ``analysis.bag.read_bag``.
Turnaround here is measured where the bag was recorded (request seen -> chunk seen, matched by
request id); on the robot computer that is within a fraction of a millisecond of what the
executor measures.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class RunSummary:
    """The numbers that describe a run."""

    duration_s: float
    commands: int
    dispatch_rate_hz: float
    dispatched_ticks: int
    held_ticks: int
    starved_ticks: int
    requests: int
    chunks_accepted: int
    chunks_dropped: int
    turnaround_p50_s: float
    turnaround_max_s: float
    seam_p50_rad: float
    seam_max_rad: float
    final_state: str
    final_message: str
    tasks: list


def joint_vector(msg):
    """Positions of a JointState or Float64MultiArray (in message order)."""
    if hasattr(msg, 'position'):
        return np.asarray(msg.position, dtype=float)
    return np.asarray(msg.data, dtype=float)


def turnarounds(topics):
    """Return [(request_id, request_ns, chunk_ns)] for every answered request."""
    sent = {m.request_id: t for t, m in topics.get('/policy/request', [])}
    return [(m.request_id, sent[m.request_id], t) for t, m in topics.get('/policy/chunk', [])
            if m.request_id in sent and not m.error]


def summarize(topics):
    """Compute the RunSummary of recorded topics."""
    commands = topics.get('/joint_commands', [])
    statuses = [m for _, m in topics.get('/executor/status', [])]
    if not commands and not statuses:
        raise ValueError('the recording has neither /joint_commands nor /executor/status: '
                         'was the executor running in this namespace?')
    duration = (commands[-1][0] - commands[0][0]) * 1e-9 if len(commands) > 1 else 0.0
    times = np.array([(c - r) * 1e-9 for _, r, c in turnarounds(topics)])
    seams, last_accepted = [], 0
    for status in statuses:
        if status.chunks_accepted > last_accepted and status.chunks_accepted > 1:
            seams.append(status.last_seam_rad)
        last_accepted = status.chunks_accepted
    final = statuses[-1] if statuses else None

    def count(name):
        return int(getattr(final, name)) if final is not None else 0

    return RunSummary(
        duration_s=duration,
        commands=len(commands),
        dispatch_rate_hz=(len(commands) - 1) / duration if duration > 0 else 0.0,
        dispatched_ticks=count('dispatched_ticks'),
        held_ticks=count('held_ticks'),
        starved_ticks=count('starved_ticks'),
        requests=len(topics.get('/policy/request', [])),
        chunks_accepted=count('chunks_accepted'),
        chunks_dropped=count('chunks_dropped'),
        turnaround_p50_s=float(np.median(times)) if len(times) else float('nan'),
        turnaround_max_s=float(times.max()) if len(times) else float('nan'),
        seam_p50_rad=float(np.median(seams)) if seams else 0.0,
        seam_max_rad=float(final.max_seam_rad) if final is not None else 0.0,
        final_state=final.state_name if final is not None else 'unknown',
        final_message=final.message if final is not None else '',
        tasks=sorted({m.data for _, m in topics.get('/executor/task', [])}),
    )


def format_summary(s):
    """Render a RunSummary as a short markdown table."""
    rows = [
        ('duration', f'{s.duration_s:.1f} s'),
        ('commands sent', f'{s.commands} ({s.dispatch_rate_hz:.1f} Hz)'),
        ('ticks dispatched / held / starved',
         f'{s.dispatched_ticks} / {s.held_ticks} / {s.starved_ticks}'),
        ('requests / chunks accepted / dropped',
         f'{s.requests} / {s.chunks_accepted} / {s.chunks_dropped}'),
        ('turnaround p50 / max', f'{s.turnaround_p50_s * 1e3:.1f} / '
                                 f'{s.turnaround_max_s * 1e3:.1f} ms'),
        ('seam p50 / max', f'{s.seam_p50_rad:.4f} / {s.seam_max_rad:.4f} rad'),
        ('final state', s.final_state + (f' ({s.final_message})' if s.final_message else '')),
        ('tasks', ', '.join(repr(t) for t in s.tasks) or '(none)'),
    ]
    return '\n'.join(['| run | |', '|---|---|'] + [f'| {k} | {v} |' for k, v in rows])
