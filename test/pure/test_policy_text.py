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

"""The policy server's text work: capabilities, refusals, the text worker, scripted answers."""

import time

from core_fixtures import admit, make_server
import numpy as np
import pytest

from remote_inference_py.evaluation import sim_answers
from remote_inference_py.evaluation.expert import CUBE_FEATURE, ExpertRuntime, GRIPPER
from remote_inference_py.evaluation.task import cube_rest_z, JOINT_NAMES
from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.text import (
    ask_refusal, AskJob, QueryInputs, TextWorker)

MS = 1_000_000
REST = cube_rest_z()
OPEN = [0.0, -1.0, 1.0, 0.9, 0.0, 1.2]       # gripper open (above closed_below)
CLOSED = [0.0, -1.0, 1.0, 0.9, 0.0, 0.1]


def expert_server(wait_s=0.2):
    core = make_server(ExpertRuntime(), observation_wait_s=wait_s)
    session = admit(core)
    return core, session, TextWorker(core.runtime, core.text_inputs, wait_s)


def observe(core, stamp_ms, joints, cube_xyz):
    core.on_joint_states('', stamp_ms * MS, list(JOINT_NAMES), joints)
    assert core.on_privileged('', CUBE_FEATURE, stamp_ms * MS,
                              [*cube_xyz, 0.0, 0.0, 0.0, 1.0]) is None


def test_a_runtime_without_text_generation_offers_none_and_is_refused_by_name():
    runtime = DemoRuntime()
    assert runtime.text_commands == ()
    why = ask_refusal(runtime, 'question', 'where is the cube?')
    assert "does not offer 'question': it offers no text commands" in why
    expert = ExpertRuntime()
    assert expert.text_commands == ('question', 'subtask', 'steering')
    assert ask_refusal(expert, 'question', 'x' * 1000) == ''
    assert 'text too long: 1001 characters' in ask_refusal(expert, 'question', 'x' * 1001)
    assert 'empty text' in ask_refusal(expert, 'subtask', ' ')
    assert "does not offer 'poem'" in ask_refusal(expert, 'poem', 'x')


def test_the_expert_answers_from_the_observation_it_selected():
    core, session, worker = expert_server()
    observe(core, 100, OPEN, (0.25, 0.05, REST))
    observe(core, 200, CLOSED, (0.25, -0.05, REST + 0.05))
    result = worker.answer(AskJob('', session, 'question', 'Is the cube held?', 'pick',
                                  150 * MS))
    assert result.success, result.message
    assert result.capture_ns == 200 * MS   # captured at or after the earliest stamp
    assert result.answer == ('yes: the cube is held 5 cm above the table, 25 cm in front of '
                             'the base and 5 cm to the right')
    assert result.generate_ms > 0 and result.queue_wait_ms >= 0 and result.generated_tokens == 0
    subtask = worker.answer(AskJob('', session, 'subtask', 'pick up the cube', 'pick', 0))
    assert subtask.success and subtask.answer in sim_answers.SUBTASKS.values()


def test_extra_text_s_slows_each_answer_and_counts_as_generation():
    core, session, _ = expert_server()
    extra = [0.15]
    worker = TextWorker(core.runtime, core.text_inputs, 0.2, extra_s=lambda: extra[0])
    observe(core, 100, OPEN, (0.25, 0.05, REST))
    job = AskJob('', session, 'question', 'is the cube held?', 'pick', 0)
    began = time.monotonic()
    slow = worker.answer(job)
    assert slow.success and time.monotonic() - began >= 0.15 and slow.generate_ms >= 150.0
    extra[0] = 0.0     # read at every answer: the knob is live
    assert worker.answer(job).generate_ms < 150.0


def test_no_observation_after_the_earliest_stamp_is_refused_after_the_wait():
    core, session, worker = expert_server(wait_s=0.1)
    observe(core, 100, OPEN, (0.25, 0.05, REST))
    began = time.monotonic()
    result = worker.answer(AskJob('', session, 'question', 'where?', '', 101 * MS))
    assert not result.success and time.monotonic() - began >= 0.1
    assert 'no observation for the query: no joint_states sample captured at or after' in \
        result.message


@pytest.mark.parametrize('arrives_after_looks, answered', [(6, True), (7, False)])
def test_a_capture_that_comes_within_the_wait_is_used(arrives_after_looks, answered):
    """Looks at 0, 10, ..., 60 ms (the first at or after a 55 ms wait's deadline is the last).

    The pause's capture comes before the last look (just inside) or after it (outside).
    """
    core, session, _ = expert_server()
    observe(core, 100, OPEN, (0.25, 0.05, REST))   # before the pause at 101 ms
    now = [0.0]
    looks = []

    def take_inputs(robot, session_id, earliest_ns):
        looks.append(now[0])
        if len(looks) == arrives_after_looks + 1:   # the fresh capture has come meanwhile
            observe(core, 102, CLOSED, (0.25, 0.05, REST))
        found = core.text_inputs(robot, session_id, earliest_ns)
        now[0] += 0.01
        return found

    worker = TextWorker(core.runtime, take_inputs, 0.055, clock=lambda: now[0])
    result = worker.answer(AskJob('', session, 'question', 'where?', '', 101 * MS))
    assert result.success is answered and result.observation_missing is not answered
    if answered:
        assert result.capture_ns == 102 * MS
    else:
        assert 'captured at or after the earliest capture stamp (newest is 0.001 s older)' \
            in result.message
        assert len(looks) == 7 and looks[-1] == pytest.approx(0.06)


def test_an_unknown_session_is_refused_at_once_and_a_failing_model_is_named():
    core, session, worker = expert_server(wait_s=5.0)
    began = time.monotonic()
    result = worker.answer(AskJob('', 'nobody', 'question', 'where?', '', 0))
    assert not result.success and "session 'nobody' is not admitted" in result.message
    assert time.monotonic() - began < 1.0
    observe(core, 100, OPEN, (0.25, 0.05, REST))

    def broken(*args):
        raise RuntimeError('out of memory')
    core.runtime.generate_text = broken
    result = worker.answer(AskJob('', session, 'question', 'where?', '', 0))
    assert not result.success and result.message == 'text generation failed: out of memory'


class Polled:
    """A take_inputs that never finds an observation; each look moves the clock 10 ms on."""

    def __init__(self, refused=False):
        self.now = 0.0
        self.looks = 0
        self.refused = refused

    def clock(self):
        return self.now

    def __call__(self, robot, session_id, earliest_ns):
        self.looks += 1
        self.now += 0.01
        return QueryInputs(why='session s is not admitted' if self.refused
                           else 'no joint_states sample received yet', refused=self.refused)


def test_the_observation_wait_is_read_at_every_query_and_a_refused_session_ends_it():
    polled = Polled()
    wait = [0.055]
    worker = TextWorker(ExpertRuntime(), polled, lambda: wait[0], clock=polled.clock)
    job = AskJob('', 's', 'question', 'where?', '', 0)
    result = worker.answer(job)
    assert not result.success and result.message == (
        'no observation for the query: no joint_states sample received yet')
    assert result.observation_missing   # the executor may ask again
    assert polled.looks == 7          # at 0, 10, ..., 60 ms: the first after the deadline
    wait[0] = 0.105                   # a live change reaches the next query
    polled.looks = 0
    worker.answer(job)
    assert polled.looks == 12
    refused = Polled(refused=True)    # typed: waiting cannot help, so it looks once
    result = TextWorker(ExpertRuntime(), refused, 5.0, clock=refused.clock).answer(job)
    assert refused.looks == 1 and result.message == (
        'no observation for the query: session s is not admitted')
    assert not result.observation_missing   # asking again cannot help


def test_the_worker_thread_answers_in_order():
    core, session, worker = expert_server()
    observe(core, 100, OPEN, (0.25, 0.05, REST))
    answers = []
    worker.start()
    try:
        for text in ('where is it?', 'is it held?'):
            worker.submit(AskJob('', session, 'question', text, '', 0), answers.append)
        deadline = time.monotonic() + 5.0
        while len(answers) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
    assert [a.answer.split(':')[0] for a in answers] == [
        'the cube rests on the table, 25 cm in front of the base and 5 cm to the left; it is '
        'not held', 'no']


@pytest.mark.parametrize('above, closed, held', [
    (sim_answers.HELD_ABOVE_M + 1e-4, True, True),     # just above the threshold
    (sim_answers.HELD_ABOVE_M - 1e-4, True, False),    # just below
    (0.05, False, False),                              # up, but the jaws are open
])
def test_held_needs_the_cube_up_and_the_jaws_closed(above, closed, held):
    pose = np.array([0.2, 0.0, REST + above, 0, 0, 0, 1.0])
    assert sim_answers.cube_held(pose, closed) is held
    assert sim_answers.answer_question('is the cube held?', pose, held).startswith(
        'yes' if held else 'no')


def test_the_expert_gripper_index_is_the_gripper():
    assert JOINT_NAMES[GRIPPER] == 'gripper'
