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

"""The parts of the policy server core alone: request queues, the forward pass, the outcomes."""

import numpy as np
import pytest

from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.forward import ForwardPass, Work
from remote_inference_py.policy_server.images import InputError
from remote_inference_py.policy_server.observation import JOINT_STATES, ObservationAssembler
from remote_inference_py.policy_server.queues import (
    DROPPED, INFERENCE, Job, OBSERVATION, OUTPUT, PREPROCESSING, Request, RequestQueues,
    SESSION_RELEASED, SUPERSEDED)
from remote_inference_py.policy_server.timings import ActivityStats, RequestTimings
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = tuple(SO101_JOINT_NAMES)
MS = 1_000_000


def queues(bound=None):
    out = RequestQueues(JOINTS, 0.05, ActivityStats())
    if bound is not None:
        out.open('s', bound)
    return out


def request(request_id, session='s'):
    return Request('', session, request_id, 0)


# ---------------------------------------------------------------------------- RequestQueues

def test_a_full_queue_pushes_out_its_oldest_request_named_by_its_bound():
    slot = queues(bound=1)
    assert slot.add(request(1), 0.0, 0.5, 9) == []
    [answer] = slot.add(request(2), 0.1, 0.5, 9)
    assert answer.request_id == 1 and answer.error.startswith('superseded: the client keeps 1')
    assert 'request 2 arrived while request 1 waited' in answer.error
    assert answer.kind == SUPERSEDED
    assert len(slot) == 1 and slot.stats.totals['superseded'] == 1
    several = queues(bound=2)
    several.add(request(1), 0.0, 0.5, 9)
    assert several.add(request(2), 0.0, 0.5, 9) == []          # exactly the bound: kept
    [answer] = several.add(request(3), 0.0, 0.5, 9)
    assert answer.request_id == 1 and answer.error.startswith('dropped from a full queue')
    assert answer.kind == DROPPED
    assert [job.request.request_id for job in several.heads()] == [2]


def test_every_request_pushed_out_at_once_is_answered_oldest_first():
    table = queues()                              # not opened: the default bound counts
    for request_id in (1, 2, 3):
        assert table.add(request(request_id), 0.0, 0.5, 3) == []
    pushed_out = table.add(request(4), 0.0, 0.5, 1)   # a bound of 1 now: three must go
    assert [a.request_id for a in pushed_out] == [1, 2, 3]
    assert all(a.error.startswith('superseded: ') and 'request 4 arrived' in a.error
               for a in pushed_out)
    assert [job.request.request_id for job in table.heads()] == [4]
    assert table.stats.totals['superseded'] == 3


def test_requests_wait_in_request_order_and_the_next_one_waits_from_its_start():
    table = queues(bound=3)
    table.add(request(5), 1.0, 0.5, 9)
    table.add(request(4), 2.0, 0.5, 9)
    [head] = table.heads()
    assert head.request.request_id == 4 and table.next_deadline() == 2.5
    table.start(head, 3.0, 0.5)
    [head] = table.heads()
    assert head.request.request_id == 5 and head.deadline == 3.5    # 1.5 < now + wait
    table.start(head, 3.0, 0.5)
    assert not table.heads() and len(table) == 0 and table.next_deadline() is None


def test_a_repeat_gets_the_published_answer_only_while_it_is_the_last_one():
    table = queues(bound=1)
    table.add(request(1), 0.0, 0.5, 9)
    assert table.add(request(1), 0.0, 0.5, 9) == []                  # still to come
    table.start(table.heads()[0], 0.0, 0.5)
    published = table.error(request(1), OBSERVATION, 'an answer')
    table.answered(published)
    [again] = table.add(request(1), 0.0, 0.5, 9)
    assert again is published
    table.add(request(2), 0.0, 0.5, 9)
    table.answered(table.error(request(2), OBSERVATION, 'newer'))
    assert table.add(request(1), 0.0, 0.5, 9) == []                  # moved on
    assert table.stats.totals['repeated'] == 3 and len(table) == 1    # request 2 waits


def test_a_put_back_job_goes_first_unless_its_queue_filled_or_its_session_went():
    table = queues(bound=2)
    table.add(request(1), 0.0, 0.5, 9)
    job = table.heads()[0]
    table.start(job, 0.0, 0.5)
    assert table.put_back(job, InputError('decode', 'bad jpeg')) is None
    assert table.heads()[0] is job and job.last_error == 'bad jpeg'
    table.start(job, 0.0, 0.5)
    table.add(request(2), 0.0, 0.5, 9)
    table.add(request(3), 0.0, 0.5, 9)
    answer = table.put_back(job, InputError('decode', 'bad jpeg'))
    assert answer.request_id == 1 and 'put back after a frame failed to decode' in answer.error
    released = table.release('s')
    assert [a.request_id for a in released] == [2, 3]
    assert all(a.session_refused and a.error.startswith('session released') for a in released)
    answer = table.put_back(job, InputError('decode', 'bad jpeg'))
    assert answer.session_refused and answer.error.startswith('session released: session s')
    assert {a.kind for a in released + [answer]} == {SESSION_RELEASED}
    assert table.stats.totals['retried'] == 3 and len(table) == 0
    # Counted as what they are: released, not superseded (one push-out above).
    assert table.stats.totals['released'] == 3 and table.stats.totals['superseded'] == 1


def test_a_session_not_opened_gets_the_default_bound():
    table = queues()
    table.add(request(1), 0.0, 0.5, 2)
    table.add(request(2), 0.0, 0.5, 2)
    assert [a.request_id for a in table.add(request(3), 0.0, 0.5, 2)] == [1]


# ---------------------------------------------------------------------------- ForwardPass

def forward_pass(runtime=None, chunk_length=0):
    runtime = runtime or DemoRuntime()
    assembler = ObservationAssembler(runtime.spec)
    return ForwardPass(runtime, assembler, chunk_length), assembler


def ready_work(assembler, request_ids, stamp_ns=100 * MS):
    buffers = assembler.new_buffers(4)
    buffers[JOINT_STATES].add(assembler.joint_sample(stamp_ns, JOINTS, [0.1] * 6))
    selection = assembler.select(buffers, 0)
    return Work(ready=[(Job(request(i), 0.0, 1.0), selection) for i in request_ids])


def test_one_forward_pass_answers_a_batch_in_si_stamped_with_its_capture():
    forward, assembler = forward_pass(chunk_length=7)
    computed = forward.compute(ready_work(assembler, [1, 2]))
    assert computed.batch_size == 2 and not computed.failed and not computed.retry
    assert [a.request_id for a in computed.answers] == [1, 2]
    for answer in computed.answers:
        assert answer.positions.shape == (7, 6) and answer.positions.dtype == np.float32
        assert np.abs(answer.positions[0] - 0.1).max() < 0.06
        assert answer.capture_stamp_ns == 100 * MS and answer.batch_size == 2
        assert answer.joint_names == JOINTS


def test_a_forward_pass_of_the_wrong_shape_fails_its_whole_batch():
    class Short(DemoRuntime):
        def infer(self, inputs, tasks):
            return super().infer(inputs, tasks)[:1]

    forward, assembler = forward_pass(Short())
    computed = forward.compute(ready_work(assembler, [1, 2]))
    assert not computed.answers and computed.batch_size == 0
    assert [(r.request_id, category) for r, category, _ in computed.failed] == [
        (1, 'inference'), (2, 'inference')]
    assert 'the policy returned shape [1, ' in computed.failed[0][2]


class Broken:
    """Raises ``error`` when called (a part of the pass that fails in a way nobody planned)."""

    def __init__(self, error):
        self.error = error

    def __call__(self, *args, **kwargs):
        raise self.error


@pytest.mark.parametrize('stage, kind, message', [
    ('infer', INFERENCE, 'policy forward pass failed: RuntimeError: device lost'),
    ('build', PREPROCESSING, 'preprocessing failed: TypeError: no such frame'),
    ('postprocess', OUTPUT, "policy output: KeyError: 'gripper'"),
    ('sleep', INFERENCE, 'serving failed: OSError: interrupted'),   # outside every stage
])
def test_whatever_raises_in_a_pass_every_request_of_its_work_gets_one_named_error(
        stage, kind, message):
    runtime = DemoRuntime()
    forward, assembler = forward_pass(runtime)
    broken = {'infer': (runtime, RuntimeError('device lost')),
              'build': (assembler, TypeError('no such frame')),
              'postprocess': (forward, KeyError('gripper')),
              'sleep': (forward, OSError('interrupted'))}
    target, error = broken[stage]
    setattr(target, stage, Broken(error))
    work = ready_work(assembler, [1, 2])
    work.failed.append((Job(request(3), 0.0, 1.0), OBSERVATION, 'stale observation: front'))
    computed = forward.compute(work, extra_compute_s=0.01)
    assert not computed.answers and not computed.retry
    assert [(r.request_id, k, m) for r, k, m in computed.failed] == [
        (3, OBSERVATION, 'stale observation: front'), (1, kind, message), (2, kind, message)]


def test_a_chunk_length_above_the_policys_is_refused_by_name():
    runtime = DemoRuntime()
    limit = runtime.spec.chunk_length
    assert forward_pass(runtime, limit)[0].chunk_length == limit
    with pytest.raises(ValueError, match=f"chunk_length {limit + 1} exceeds the policy's"):
        forward_pass(runtime, limit + 1)


# ---------------------------------------------------------------------------- ActivityStats

def test_the_activity_line_is_silent_when_idle_and_alone_and_counts_every_outcome():
    stats = ActivityStats()
    assert stats.summary(0, 4, {}) is None
    stats.count('refused')
    stats.count('requests')
    assert stats.summary(0, 4, {}).startswith('0/4 client(s); last period: 1 requests')
    stats.count('requests', 3)
    stats.served(RequestTimings(1.0, 2.0, 3.0, 4.0))
    stats.failed('observation', 'stale observation: front')
    stats.count('superseded')
    stats.count('released')
    stats.batch(1)
    text = stats.summary(1, 4, {'front': (2, 'bad jpeg')})
    assert text.startswith('1/4 client(s); last period: 3 requests, 1 served, 1 failed, '
                           '0 refused, 1 superseded, 1 released, 1 forward passes; ms p50/max: '
                           'queue '
                           '1.0/1.0, pre 2.0/2.0, inference 3.0/3.0, post 4.0/4.0'), text
    assert '(failures: observation 1; last: stale observation: front)' in text
    assert text.endswith('; rejected samples: front 2 (last: bad jpeg)')
    assert stats.summary(1, 4, {}).startswith('1/4 client(s); last period: 0 requests')
    assert stats.summary(0, 4, {}) is None
    stats.count('refused')
    stats.count('requests')
    assert stats.summary(0, 4, {}).startswith('0/4 client(s); last period: 1 requests')
