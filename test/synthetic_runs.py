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
A run with known numbers written to a real rosbag2 bag, for the analysis, plot and video tests.

The executor starts at ``T0`` (time 0 of the analysis), waits ``first_wait_s`` for the first
chunk, then runs; a request goes out every ``request_period_s`` and its chunk reports
``turnaround_s`` of server time; chunk ``big_seam_chunk`` has a seam of ``big_seam_rad`` on
``elbow_flex`` (a step in the commands), the others 0.01 rad; the last ``stop_s`` are
STOPPING, then STOPPED. The cube is lifted ``lift_m`` from ``lift_at_s`` on. Each message's
receive time is its stamp plus ``receive_delay(stamp)``: a recorder that falls behind. A
``query`` holds the arm from its question to its answer, in the status as the executor words it.
"""

import dataclasses
import math

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from remote_inference_py.analysis.bag import typestore
from remote_inference_py.evaluation.task import JOINT_NAMES
from remote_inference_py.executor.query import answer_reason, pause_reason

T0 = 1_800_000_000 * 10**9
NS = 10**9


@dataclasses.dataclass
class RunSpec:
    """What the synthetic run does (times in seconds since the executor's start)."""

    seconds: float = 10.0
    first_wait_s: float = 0.3
    request_period_s: float = 1.4
    turnaround_s: float = 0.25
    big_seam_chunk: int = 4
    big_seam_rad: float = 0.2
    stop_s: float = 2.0
    lift_at_s: float = 4.0
    lift_m: float = 0.08
    cube_rest_z: float = 0.02
    receive_delay: object = None     # f(stamp_ns) -> extra ns before the recorder gets it
    server_timings: bool = True      # False: chunks carry zero timings (a foreign server)
    query: object = None             # (asked s, answered s, question, answer): a question


class _Bag:
    def __init__(self, path, delay):
        self.store = typestore()
        self.writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.connections = {}
        self.delay = delay or (lambda stamp: 0)

    def type(self, name):
        return self.store.types[name]

    def stamp(self, ns):
        return self.type('builtin_interfaces/msg/Time')(sec=ns // NS, nanosec=ns % NS)

    def header(self, ns):
        return self.type('std_msgs/msg/Header')(stamp=self.stamp(ns), frame_id='')

    def write(self, topic, msgtype, stamp_ns, msg):
        if topic not in self.connections:
            self.connections[topic] = self.writer.add_connection(topic, msgtype,
                                                                 typestore=self.store)
        self.writer.write(self.connections[topic], stamp_ns + int(self.delay(stamp_ns)),
                          self.store.serialize_cdr(msg, msgtype))


def status_message(bag, ns, state, **fields):
    """Return an ExecutorStatus with the given state and counters (the rest zero)."""
    values = dict(header=bag.header(ns), state=0, state_name=state, message='', session_id='s',
                  server_presence='alive', server_last_seen_s=0.1, presence_lease_s=4.0,
                  buffered_playback_s=0.0, refill_s=0.3, effective_refill_s=0.3,
                  last_turnaround_s=0.0, p50_turnaround_s=0.0, max_turnaround_s=0.0, ticks=0,
                  dispatched_ticks=0, held_ticks=0, skipped_ticks=0, requests=0,
                  requests_in_flight=0, request_retries=0, server='', server_choice='',
                  failovers=0, driver='policy', leader_fault='', dispatched_request_id=0,
                  chunks_accepted=0, chunks_dropped=0, starved_ticks=0, trimmed_steps=0,
                  last_drop_reason='', last_seam_rad=0.0, max_seam_rad=0.0,
                  tick_period_p50_s=0.033, tick_period_p99_s=0.034, tick_period_max_s=0.04)
    values.update(fields)
    return bag.type('remote_inference/msg/ExecutorStatus')(**values)


def write_run(path, spec=None):
    """Write the run of ``spec`` to an MCAP bag at ``path``; return the spec."""
    spec = spec or RunSpec()
    bag = _Bag(path, spec.receive_delay)
    joint_state = 'sensor_msgs/msg/JointState'
    names = list(JOINT_NAMES)
    elbow = names.index('elbow_flex')
    run_end = spec.seconds - spec.stop_s
    requests = [0.0] + list(np.arange(spec.first_wait_s + spec.request_period_s, run_end,
                                      spec.request_period_s))
    arrivals = [t + spec.turnaround_s for t in requests]

    def pose(t):
        q = np.array([0.3 * math.sin(0.5 * t), -1.0, 1.0 + 0.2 * math.sin(t), 0.9, 0.0, 0.3])
        offset = sum(spec.big_seam_rad if number == spec.big_seam_chunk else 0.01
                     for number, ready in enumerate(arrivals, start=1) if number > 1
                     and t >= ready)
        q[elbow] += offset
        return q

    def cmd_msg(ns, q):
        return bag.type(joint_state)(header=bag.header(ns), name=names, position=q,
                                     velocity=np.zeros(0), effort=np.zeros(0))

    for t in np.arange(-1.0, spec.seconds, 0.02):    # joint states at 50 Hz, from before
        ns = T0 + int(t * NS)
        bag.write('/joint_states', joint_state, ns, cmd_msg(ns, pose(max(t - 0.05, 0.0))))
    for t in np.arange(0.0, spec.seconds, 1 / 30):   # commands at 30 Hz
        ns = T0 + int(t * NS)
        bag.write('/joint_commands', joint_state, ns, cmd_msg(ns, pose(t)))
    for number, (sent, ready) in enumerate(zip(requests, arrivals), start=1):
        ns = T0 + int(sent * NS)
        request = bag.type('remote_inference/msg/InferenceRequest')(
            header=bag.header(ns), session_id='s', request_id=number,
            earliest_capture_stamp=bag.stamp(ns), task='pick up the cube',
            plan_start_stamp=bag.stamp(ns), plan_steps=0, frozen_steps=0,
            plan_positions=np.zeros(0))
        bag.write('/policy/request', 'remote_inference/msg/InferenceRequest', ns, request)
        server_ms = spec.turnaround_s * 1e3 if spec.server_timings else 0.0
        chunk = bag.type('remote_inference/msg/ActionChunk')(
            header=bag.header(ns + 10**7), session_id='s', request_id=number, joint_names=names,
            step_period=1 / 30, step_count=1, positions=np.zeros(6, dtype=np.float32),
            error='', queue_wait_ms=server_ms and 1.0, preprocess_ms=server_ms and 0.5,
            inference_ms=server_ms and server_ms - 2.0, postprocess_ms=server_ms and 0.5,
            instance_id='', session_refused=False)
        bag.write('/policy/chunk', 'remote_inference/msg/ActionChunk', T0 + int(ready * NS),
                  chunk)
    for t in np.arange(-0.5, spec.seconds + 0.3, 0.1):   # status at 10 Hz
        ns = T0 + int(t * NS)
        accepted = sum(1 for ready in arrivals if ready <= t)
        state = ('READY' if t < 0 else 'WAITING' if accepted == 0 else
                 'RUNNING' if t < run_end else 'STOPPING' if t < spec.seconds else 'STOPPED')
        seam = (spec.big_seam_rad if accepted == spec.big_seam_chunk else
                0.01 if accepted > 1 else 0.0)
        ticks = max(int(t * 30), 0)
        held = min(ticks, int(spec.first_wait_s * 30))
        message = ''
        if spec.query is not None:   # the executor's status while it holds, then resumes
            asked, answered, question, answer = spec.query
            if asked <= t < answered:
                state, message = 'WAITING', (f'holding for {pause_reason("question", question)}'
                                             f' at t={asked:.3f}: the last applied target is'
                                             ' held, 1.20 s of buffered actions discarded')
            elif answered <= t < answered + 0.3:
                state, message = 'WAITING', (f'resuming after {answer_reason(answer)}: a fresh '
                                             f'capture taken after t={answered:.3f} is needed')
        bag.write('/executor/status', 'remote_inference/msg/ExecutorStatus', ns, status_message(
            bag, ns, state, message=message,
            buffered_playback_s=float(max(0.0, 1.6 - (t % 1.4))),
            requests=sum(1 for sent in requests if sent <= t), chunks_accepted=accepted,
            last_seam_rad=seam, ticks=ticks, held_ticks=held, dispatched_ticks=ticks - held))
    for t in np.arange(-1.0, spec.seconds, 0.1):     # cube pose at 10 Hz
        ns = T0 + int(t * NS)
        lifted = spec.lift_m * min(max((t - spec.lift_at_s) / 0.5, 0.0), 1.0)
        point = bag.type('geometry_msgs/msg/Point')(x=0.3, y=0.0, z=spec.cube_rest_z + lifted)
        quaternion = bag.type('geometry_msgs/msg/Quaternion')(x=0.0, y=0.0, z=0.0, w=1.0)
        pose_msg = bag.type('geometry_msgs/msg/PoseStamped')(
            header=bag.header(ns),
            pose=bag.type('geometry_msgs/msg/Pose')(position=point, orientation=quaternion))
        bag.write('/sim/cube_pose', 'geometry_msgs/msg/PoseStamped', ns, pose_msg)
    task = bag.type('std_msgs/msg/String')(data='pick up the cube')
    bag.write('/executor/task', 'std_msgs/msg/String', T0, task)
    bag.writer.close()
    return spec
