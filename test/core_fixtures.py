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
Executor and policy-server cores built for tests, and the inputs they take (no ROS graph).

The executor cases use fps = 10 (one action tick every 0.1 s) and two joints, j1 carrying the
values and j2 staying at 0, so every expected command can be checked by hand. The policy
server cases use the SO-101 deployment and the demo policy unless a runtime is given; they
also get observation specs, JPEG frames and a clock the test moves by hand from here.
:func:`check_range_edges` tries a config part just inside and just outside a declared range.
"""

import io
import math

import numpy as np
from PIL import Image
import pytest

from remote_inference_py.contract.check import AdmitRequest
from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.core import Chunk, ExecutorCore
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import PolicyServerCore
from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.scheduler import Scheduler
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = ('j1', 'j2')
FPS = 10.0
SO101_JOINTS = list(SO101_JOINT_NAMES)


# ----------------------------------------------------------------------------- executor

def make_executor(measured=(0.0, 0.0), start=True, chunk_length=0, **changes):
    """
    Build an executor core on JOINTS at FPS, admitted as session 's1' and started at 0.0.

    ``chunk_length`` is the server's chunk length given at admission (0: unknown).
    """
    changes.setdefault('max_step_rad', math.inf)
    core = ExecutorCore(ExecutorConfig(joint_names=JOINTS, fps=FPS, **changes))
    core.on_measured(np.array(measured))
    core.admit('s1', chunk_length)
    if start:
        core.start(0.0)
    return core


def make_chunk(request_id, capture, values, names=JOINTS, session='s1', period=0.1,
               step_count=None):
    """Build a chunk: `values` are j1's steps (j2 stays 0), or a whole positions array."""
    if isinstance(values, np.ndarray):
        positions = values
    else:
        positions = np.array([[v, 0.0] for v in values], dtype=float)
    return Chunk(session_id=session, request_id=request_id, capture_time=capture,
                 joint_names=names, step_period=period, positions=positions,
                 step_count=step_count)


class Loop:
    """Tick a core at its nominal times, applying every command like a perfect driver."""

    def __init__(self, core):
        self.core = core
        self.period = core.config.tick_period
        self.index = 0
        self.outputs = []

    def tick(self):
        out = self.core.tick(self.index * self.period)
        self.index += 1
        if out.command is not None:
            self.core.on_applied(out.command)
        self.outputs.append(out)
        return out

    def run(self, count):
        return [self.tick() for _ in range(count)]


def j1(out):
    """Return the first joint's command of a tick output (rounded), or None if it sent none."""
    return None if out.command is None else round(float(out.command[0]), 9)


# ----------------------------------------------------------------------------- policy server

def make_server(runtime=None, **settings):
    """Build a policy server core for the SO-101 deployment, with the demo policy by default."""
    return PolicyServerCore(ServerConfig(deployment='so101', **settings),
                            runtime or DemoRuntime())


def admission(target, robot='', client='/executor', in_flight=1, merge_mode='aligned'):
    """Ask a server core (or a Scheduler) to admit a client with its own contract's terms."""
    contract = target.core.contract if isinstance(target, Scheduler) else target.contract
    return target.admit(robot, AdmitRequest(
        protocol_version=contract.protocol_version, client_name=client,
        deployment=contract.deployment, semantics=contract.semantics,
        action_names=contract.action_names, action_rate=contract.action_rate,
        features=contract.features, merge_mode=merge_mode, hardware_position_hold=True,
        max_requests_in_flight=in_flight))


def admit(target, robot='', client='/executor', in_flight=1):
    """Admit a client as :func:`admission` does; it must succeed. Return its session id."""
    result = admission(target, robot, client, in_flight)
    assert result.success, result.message
    return result.session_id


def serve_one(core, timeout=1.0):
    """
    Turn the serving loop once with work; return what it published.

    The loop (:meth:`.Scheduler.step`) is turned in this thread on the core's clock; when it
    has nothing to do, this sleeps (the core's ``sleep``) until its next turn, at most
    ``timeout`` seconds of the core's clock in all.
    """
    answers = []
    loop = Scheduler(core, answers.append)
    give_up = core.clock() + timeout
    while not loop.step():
        turn, now = loop.next_turn(), core.clock()
        if turn is None or now >= give_up:
            break
        core.sleep(max(min(turn, give_up) - now, 0.0005))
    return answers


def observation_spec(state_history=1, image_history=1, normalization=None, semantics=None):
    """Build a manifest spec for SO-101: a 6-joint state and a 2x2 'front' image, as asked."""
    state = {'name': 'observation.state', 'kind': 'state', 'shape': [6],
             'names': [f'{j}.pos' for j in SO101_JOINTS], 'history': state_history}
    if normalization:
        state['normalization'] = normalization
    if semantics:
        state['semantics'] = semantics
    return spec_from_dict({
        'semantics': 'so101-degrees-gripper-percent-v1', 'fps': 20, 'chunk_length': 5,
        'action': {'names': SO101_JOINTS},
        'features': [state, {'name': 'observation.images.front', 'kind': 'rgb',
                             'shape': [2, 2, 3], 'history': image_history}]})


def jpeg(array, quality=None):
    """Encode an RGB array as JPEG bytes with Pillow (at its default quality unless given)."""
    buffer = io.BytesIO()
    options = {} if quality is None else {'quality': quality}
    Image.fromarray(array).save(buffer, format='JPEG', **options)
    return buffer.getvalue()


# ----------------------------------------------------------------------------- time

class FakeClock:
    """A clock (seconds) that a test moves by setting ``now``."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def check_range_edges(build, field, parameter, inside, outside, owner=r'\w+'):
    """
    Assert that ``build(field=value)`` keeps each ``inside`` value and refuses each ``outside``.

    The refusal must name the part (``owner``, a regular expression), the field and the
    parameter it is declared as, with the value.
    """
    for value in inside:
        assert getattr(build(**{field: value}), field) == value
    for value in outside:
        with pytest.raises(ValueError, match=rf"^{owner}\.{field}: parameter '{parameter}' is "
                                             rf'{value!r}; expected '):
            build(**{field: value})
