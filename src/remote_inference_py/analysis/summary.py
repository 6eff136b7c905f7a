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
Every time here comes from the messages' own header stamps (robot clock), never from when the
recorder received them: a recorder that falls behind (a loaded machine, a slow disk) receives a
request and its chunk together, but their stamps still say when things happened. Only a
message without a stamp (``Float64MultiArray`` commands) falls back to its receive time.

**Turnaround** of a request is the time from its send stamp to its chunk leaving the server:
the chunk's four timing fields (queue wait, preprocessing, inference, postprocessing), which
the server measures from the request's arrival. The two DDS hops are not in any message; on
one host they add ~0.3 ms each, which is what the executor's own measurement
(``executor/status``) shows on top. A chunk whose timings are all zero (a server that does
not fill them) falls back to the receive times.

**Seams** are the executor's ``last_seam_rad`` at every accepted chunk after the first (the
first one starts from a hold, not from another plan).

**Task.** A bag with ``sim/cube_pose`` (the simulated arm) also gets the pick-the-cube outcome:
the :class:`~remote_inference_py.evaluation.task.LiftMonitor` of the evaluation, fed with the
cube poses, time 0 at the executor's first command.
"""

from dataclasses import dataclass
from typing import List, NamedTuple, Optional

import numpy as np

from remote_inference_py.transport.values import stamp_ns


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
    task: Optional['TaskResult'] = None


@dataclass
class TaskResult:
    """The pick-the-cube outcome, from the recorded cube poses."""

    success: bool
    completion_time_s: Optional[float]   # since the first command; None when not lifted
    max_lift_m: float
    lift_height_m: float
    hold_s: float


class Turnaround(NamedTuple):
    """One answered request: its id, send stamp, when its chunk was ready [ns], and how."""

    request_id: int
    sent_ns: int
    ready_ns: int
    from_stamps: bool

    @property
    def seconds(self):
        """Turnaround [s]."""
        return (self.ready_ns - self.sent_ns) * 1e-9


def header_ns(receive_ns, msg):
    """Return a message's header stamp [ns], or its receive time when it has none."""
    header = getattr(msg, 'header', None)
    if header is None:
        return receive_ns
    value = stamp_ns(header.stamp)
    return value if value > 0 else receive_ns


def stamped(messages):
    """Return [(stamp_ns, message)] sorted by stamp (see :func:`header_ns`)."""
    return sorted(((header_ns(t, m), m) for t, m in messages), key=lambda item: item[0])


def start_ns(topics):
    """Return the run's time 0 [ns]: the executor's first command (else the first status)."""
    for topic in ('/joint_commands', '/executor/status', '/joint_states'):
        messages = stamped(topics.get(topic, []))
        if messages:
            return messages[0][0]
    return 0


def joint_vector(msg):
    """Positions of a JointState or Float64MultiArray (in message order)."""
    if hasattr(msg, 'position'):
        return np.asarray(msg.position, dtype=float)
    return np.asarray(msg.data, dtype=float)


def turnarounds(topics) -> List[Turnaround]:
    """Return a :class:`Turnaround` for every answered request, in request order."""
    requests = {m.request_id: (t, header_ns(t, m)) for t, m in topics.get('/policy/request', [])}
    out = []
    for received, chunk in topics.get('/policy/chunk', []):
        if chunk.request_id not in requests or chunk.error:
            continue
        request_received, sent = requests[chunk.request_id]
        server_ms = (float(chunk.queue_wait_ms) + float(chunk.preprocess_ms)
                     + float(chunk.inference_ms) + float(chunk.postprocess_ms))
        if server_ms > 0:
            out.append(Turnaround(chunk.request_id, sent, sent + int(server_ms * 1e6), True))
        else:
            out.append(Turnaround(chunk.request_id, sent,
                                  sent + (received - request_received), False))
    return sorted(out, key=lambda t: t.sent_ns)


def task_result(topics, task=None) -> Optional[TaskResult]:
    """Return the pick-the-cube outcome from ``/sim/cube_pose``, or None without cube poses."""
    from remote_inference_py.evaluation.task import LiftMonitor, TaskConfig
    poses = stamped(topics.get('/sim/cube_pose', []))
    if not poses:
        return None
    task = task or TaskConfig()
    zero = start_ns(topics)
    monitor = LiftMonitor(task)
    for stamp, pose in poses:
        if stamp < zero:
            monitor.rest_z = pose.pose.position.z
        else:
            monitor.update((stamp - zero) * 1e-9, pose.pose.position.z)
    outcome = monitor.outcome()
    return TaskResult(outcome.success, outcome.completion_time_s, outcome.max_lift_m,
                      task.lift_height_m, task.hold_s)


def summarize(topics):
    """Compute the RunSummary of recorded topics."""
    commands = stamped(topics.get('/joint_commands', []))
    statuses = [m for _, m in stamped(topics.get('/executor/status', []))]
    if not commands and not statuses:
        raise ValueError('the recording has neither /joint_commands nor /executor/status: '
                         'was the executor running in this namespace?')
    duration = (commands[-1][0] - commands[0][0]) * 1e-9 if len(commands) > 1 else 0.0
    times = np.array([t.seconds for t in turnarounds(topics)])
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
        requests=max(len(topics.get('/policy/request', [])), count('requests')),
        chunks_accepted=count('chunks_accepted'),
        chunks_dropped=count('chunks_dropped'),
        turnaround_p50_s=float(np.median(times)) if len(times) else float('nan'),
        turnaround_max_s=float(times.max()) if len(times) else float('nan'),
        seam_p50_rad=float(np.median(seams)) if seams else 0.0,
        seam_max_rad=float(max(seams)) if seams else 0.0,
        final_state=final.state_name if final is not None else 'unknown',
        final_message=final.message if final is not None else '',
        tasks=sorted({m.data for _, m in topics.get('/executor/task', [])}),
        task=task_result(topics),
    )


def format_task(result: Optional[TaskResult]) -> str:
    """Say in one line whether the cube was picked, and when."""
    if result is None:
        return '(no sim/cube_pose recorded)'
    need = f'{result.lift_height_m * 100:.0f} cm held {result.hold_s:g} s'
    if result.success:
        return (f'SUCCEEDED in {result.completion_time_s:.1f} s (cube lifted {need}; '
                f'highest {result.max_lift_m * 100:.1f} cm)')
    return f'FAILED (cube lifted at most {result.max_lift_m * 100:.1f} cm; needs {need})'


def format_summary(s):
    """Render a RunSummary as a short markdown table."""
    rows = [('pick the cube', format_task(s.task))] if s.task is not None else []
    rows += [
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
