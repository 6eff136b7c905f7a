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

"""The policy server's scheduler without ROS: one path, its threads, one answer per request."""

import threading
import time

from core_fixtures import admit, FakeClock, jpeg, make_server
import numpy as np
import pytest

from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import (
    DROPPED, PolicyServerCore, PREPROCESSING, Request, SESSION_RELEASED, SUPERSEDED)
from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.images import CompressedImage
from remote_inference_py.policy_server.scheduler import Scheduler, THREADS
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

JOINTS = list(SO101_JOINT_NAMES)
MS = 1_000_000

HANG_S = 60.0   # only a hang reaches it


class Outbox:
    """What the scheduler published, with the thread that published each answer."""

    def __init__(self):
        self.answers = []
        self.threads = []
        self.cond = threading.Condition()

    def __call__(self, answer):
        with self.cond:
            self.answers.append(answer)
            self.threads.append(threading.current_thread().name)
            self.cond.notify_all()

    def wait_for(self, count, timeout=10.0):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.answers) >= count, timeout), \
                f'{len(self.answers)} answers, expected {count}'
        return list(self.answers)


class CountingRuntime(DemoRuntime):
    """The demo policy, remembering how many forward passes overlap (never more than one)."""

    def __init__(self, delay_s=0.0):
        super().__init__()
        self.delay_s = delay_s
        self.running = 0
        self.most = 0
        self.passes = 0
        self.lock = threading.Lock()

    def infer(self, inputs, tasks):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.passes += 1
        try:
            time.sleep(self.delay_s)
            return super().infer(inputs, tasks)
        finally:
            with self.lock:
                self.running -= 1


def started(core, outbox, inline):
    scheduler = Scheduler(core, outbox, inline=inline)
    scheduler.start()
    return scheduler


def test_inline_a_ready_request_is_served_in_the_calling_thread():
    outbox = Outbox()
    scheduler = started(make_server(), outbox, inline=True)
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        scheduler.on_request(Request('', session, 1, 0))        # ready: served right here
        assert [a.request_id for a in outbox.answers] == [1]
        assert outbox.threads == [threading.current_thread().name]
        scheduler.on_request(Request('', session, 2, 200 * MS))  # waits for its capture
        assert len(outbox.answers) == 1
        scheduler.on_joint_states('', 200 * MS, JOINTS, [0.1] * 6)   # makes it ready
        assert [a.request_id for a in outbox.answers] == [1, 2]
        assert outbox.answers[1].capture_stamp_ns == 200 * MS
        assert outbox.threads[1] == threading.current_thread().name
    finally:
        scheduler.stop()


def test_a_repeated_request_gets_its_published_answer_again_and_never_a_second_pass():
    # The executor repeats its first request until something of the session comes back
    # (executor/first_request.py): the request or its answer may have been lost.
    outbox = Outbox()
    core = make_server()
    scheduler = started(core, outbox, inline=True)
    try:
        session = admit(scheduler)
        scheduler.on_request(Request('', session, 1, 100 * MS))   # waits for its capture
        scheduler.on_request(Request('', session, 1, 100 * MS))   # a repeat while it waits
        assert outbox.answers == [] and core.pending_count() == 1, 'the repeat was queued'
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        [first] = outbox.answers
        assert first.request_id == 1 and first.error == ''
        scheduler.on_request(Request('', session, 1, 100 * MS))   # its answer was lost
        assert outbox.answers == [first, first], 'not the same answer again'
        assert core.stats.totals['served'] == 1 and core.stats.totals['repeated'] == 2
        scheduler.on_request(Request('', session, 2, 0))
        assert [a.request_id for a in outbox.answers] == [1, 1, 2]
        scheduler.on_request(Request('', session, 1, 100 * MS))   # the client moved on
        assert len(outbox.answers) == 3 and core.pending_count() == 0
        other = admit(scheduler)          # the client restarted: a new session, ids from 1
        scheduler.on_request(Request('', other, 1, 0))
        assert [a.request_id for a in outbox.answers] == [1, 1, 2, 1]
        assert outbox.answers[-1].session_id == other
    finally:
        scheduler.stop()


@pytest.mark.parametrize('inline', [True, False])
def test_a_pass_that_raises_unexpectedly_answers_its_requests_and_serving_goes_on(inline):
    outbox = Outbox()
    core = make_server()
    scheduler = started(core, outbox, inline=inline)
    build = core.assembler.build
    calls = []

    def build_once_broken(*args):
        calls.append(1)
        if len(calls) == 1:
            raise AttributeError("'NoneType' object has no attribute 'shape'")
        return build(*args)
    core.assembler.build = build_once_broken
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        scheduler.on_request(Request('', session, 1, 0))
        [failed] = outbox.wait_for(1)
        assert failed.request_id == 1 and failed.positions is None
        assert failed.error == ("preprocessing failed: AttributeError: 'NoneType' object has "
                                "no attribute 'shape'") and failed.kind == PREPROCESSING
        scheduler.on_request(Request('', session, 2, 0))
        assert [(a.request_id, a.error) for a in outbox.wait_for(2)][1] == (2, '')
        assert core.stats.failures == {PREPROCESSING: 1} and core.stats.totals['served'] == 1
    finally:
        scheduler.stop()


def test_a_text_querys_frames_are_decoded_outside_the_lock():
    core = make_server(DemoRuntime(cameras=['front'], image_size=(16, 16)))
    scheduler = Scheduler(core, Outbox())
    session = admit(scheduler)
    scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    frame = np.zeros((16, 16, 3), np.uint8)
    scheduler.on_image('', 'observation.images.front', 100 * MS,
                       CompressedImage('jpeg', jpeg(frame)))
    build = core.build_text
    free = []

    def build_and_look(*args):   # can another thread take the lock meanwhile?
        def look():
            free.append(scheduler._cond.acquire(timeout=5.0))
            if free[-1]:
                scheduler._cond.release()
        other = threading.Thread(target=look)
        other.start()
        other.join()
        return build(*args)
    core.build_text = build_and_look
    found = scheduler.text_inputs('', session, 0)
    assert free == [True] and found.capture_ns == 100 * MS
    assert found.inputs['observation.images.front.rgb'].dtype == np.float32
    refused = scheduler.text_inputs('', 'nobody', 0)
    assert refused.refused and refused.inputs is None and len(free) == 1


def test_without_inline_the_inference_thread_serves():
    outbox = Outbox()
    scheduler = started(make_server(), outbox, inline=False)
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        scheduler.on_request(Request('', session, 1, 0))
        [answer] = outbox.wait_for(1)
        assert answer.error == '' and outbox.threads == ['serving']
    finally:
        scheduler.stop()


def test_a_slow_pass_goes_to_the_inference_thread_even_inline():
    outbox = Outbox()
    core = make_server(extra_compute_s=0.05)
    scheduler = started(core, outbox, inline=True)
    gate = threading.Event()
    core.forward.sleep = lambda seconds: gate.wait(HANG_S)   # the pass lasts until opened
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        returned = threading.Event()

        def callback():
            scheduler.on_request(Request('', session, 1, 0))
            returned.set()
        threading.Thread(target=callback, daemon=True).start()
        # The callback returns while the pass cannot have ended (it waits for the gate).
        assert returned.wait(HANG_S), 'the callback waited for the forward pass'
        assert not outbox.answers
        gate.set()
        [answer] = outbox.wait_for(1)
        assert answer.error == '' and outbox.threads == ['serving']
    finally:
        gate.set()
        scheduler.stop()


def test_a_request_whose_observation_never_comes_is_answered_at_its_deadline():
    outbox = Outbox()
    scheduler = started(make_server(observation_wait_s=0.1), outbox, inline=True)
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
        began = time.monotonic()
        scheduler.on_request(Request('', session, 1, 500 * MS))
        [answer] = outbox.wait_for(1, timeout=5.0)
        assert time.monotonic() - began >= 0.1
        assert answer.error.startswith('stale observation: ') and outbox.threads == ['serving']
    finally:
        scheduler.stop()


@pytest.mark.parametrize('inline', [False, True])
def test_one_forward_pass_at_a_time_and_one_answer_per_request_under_a_flood(inline):
    runtime = CountingRuntime(delay_s=0.002)
    outbox = Outbox()
    core = make_server(runtime)
    scheduler = started(core, outbox, inline=inline)
    try:
        session = admit(scheduler, in_flight=2)
        stop = threading.Event()

        def samples():   # a second input thread, as a multi-threaded executor would be
            stamp = 1
            while not stop.is_set():
                scheduler.on_joint_states('', stamp * MS, JOINTS, [0.0] * 6)
                stamp += 1
                time.sleep(0.0005)

        feeder = threading.Thread(target=samples)
        feeder.start()
        try:
            for request_id in range(1, 301):
                scheduler.on_request(Request('', session, request_id, 0))
            answers = outbox.wait_for(300)
        finally:
            stop.set()
            feeder.join()
        time.sleep(0.1)
        assert len(outbox.answers) == 300, 'no request answered twice'
        assert sorted(a.request_id for a in answers) == list(range(1, 301))
        served = [a.request_id for a in answers if not a.error]
        pushed_out = [a for a in answers if a.error]
        assert served == sorted(served), 'chunks leave in request order'
        assert served and (pushed_out or inline), 'requests pile up behind the thread'
        assert all(a.error.startswith(f'{DROPPED}: the client keeps 2 ') for a in pushed_out)
        assert core.stats.totals['superseded'] == len(pushed_out)
        assert core.stats.totals['served'] == len(served) == runtime.passes
        assert runtime.most == 1
        assert core.pending_count() == 0
    finally:
        scheduler.stop()


def test_the_pushed_out_request_is_answered_at_once_naming_why():
    outbox = Outbox()
    scheduler = started(make_server(observation_wait_s=5.0), outbox, inline=True)
    try:
        one = admit(scheduler, in_flight=1)
        scheduler.on_request(Request('', one, 1, 0))      # no sample yet: it waits
        scheduler.on_request(Request('', one, 2, 0))
        [answer] = outbox.answers
        assert answer.request_id == 1 and answer.positions is None
        assert answer.error == (f'{SUPERSEDED}: the client keeps 1 request(s) in flight and '
                                'the newest are served; request 2 arrived while request 1 '
                                'waited')
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
        assert [(a.request_id, a.error) for a in outbox.answers][1] == (2, '')
    finally:
        scheduler.stop()


def test_a_full_queue_drops_the_oldest_with_a_named_error():
    core = make_server(observation_wait_s=5.0)
    session = admit(core, in_flight=3)
    for request_id in (1, 2, 3):
        assert core.on_request(Request('', session, request_id, 0)) == []   # just inside
    [answer] = core.on_request(Request('', session, 4, 0))                 # just outside
    assert answer.request_id == 1 and answer.session_id == session
    assert answer.error == (f'{DROPPED}: the client keeps 3 request(s) in flight and the '
                            'newest are served; request 4 arrived while 3 requests of this '
                            'session waited, request 1 the oldest')
    assert core.pending_count() == 3 and core.stats.totals['superseded'] == 1


def test_a_request_put_back_into_a_full_queue_is_answered():
    noise = np.random.default_rng(0).integers(0, 255, (16, 16, 3), dtype=np.uint8)
    import io
    from PIL import Image
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format='JPEG')
    good = buffer.getvalue()
    bad = good[:good.index(b'\xff\xda') + 40]
    core = make_server(DemoRuntime(cameras=['front'], image_size=(16, 16)))
    session = admit(core, in_flight=1)
    core.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    core.on_image('', 'observation.images.front', 100 * MS, CompressedImage('jpeg', bad))
    core.on_request(Request('', session, 1, 0))
    computed = core.compute(core.take_work())          # the frame fails to decode...
    assert core.on_request(Request('', session, 2, 0)) == []   # ...while 2 arrives
    [answer] = core.finish(computed)
    assert answer.request_id == 1 and answer.error.endswith(
        'request 1 was put back after a frame failed to decode and found newer requests of '
        'this session waiting')
    assert answer.error.startswith(f'{SUPERSEDED}: the client keeps 1 request(s) in flight')
    assert [stream for _, stream, _, _ in computed.rejected] == ['observation.images.front']
    assert core.rejected_samples()['observation.images.front'][0] == 1
    assert core.pending_count() == 1 and core.stats.totals['superseded'] == 1


def test_requests_left_by_a_released_session_are_answered():
    outbox = Outbox()
    scheduler = started(make_server(idle_timeout_s=0.0, observation_wait_s=5.0), outbox,
                        inline=True)
    try:
        old = admit(scheduler, in_flight=2)
        scheduler.on_request(Request('', old, 1, 0))
        scheduler.on_request(Request('', old, 2, 0))
        admit(scheduler)                                # the same client again: replaces it
        assert [a.request_id for a in outbox.answers] == [1, 2]
        assert all(a.error.startswith(f'{SESSION_RELEASED}: session {old} was released')
                   and a.session_refused for a in outbox.answers)
        assert scheduler.core.pending_count() == 0
    finally:
        scheduler.stop()


def test_extra_latency_holds_answers_back_in_the_serving_thread():
    outbox = Outbox()
    scheduler = started(make_server(extra_latency_s=0.2), outbox, inline=True)
    try:
        session = admit(scheduler)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
        scheduler.on_request(Request('', session, 1, 0))   # served inline, held back
        assert outbox.answers == [] and len(scheduler.delivery) == 1
        [answer] = outbox.wait_for(1)
        assert outbox.threads == ['serving'], 'no delivery thread: the loop releases it'
        assert answer.error == '' and answer.timings.inference_ms < 200.0
    finally:
        scheduler.stop()


def test_stop_ends_the_one_serving_thread():
    before = set(threading.enumerate())
    scheduler = started(make_server(), Outbox(), inline=False)
    [thread] = set(threading.enumerate()) - before
    assert thread.name == 'serving' and thread.is_alive()
    scheduler.stop()
    assert not thread.is_alive()


def test_two_callbacks_at_once_start_one_pass_and_answers_keep_request_order():
    runtime = CountingRuntime(delay_s=0.05)
    outbox = Outbox()
    scheduler = started(make_server(runtime, observation_wait_s=5.0), outbox, inline=True)
    try:
        session = admit(scheduler, in_flight=3)
        for request_id in (1, 2, 3):
            scheduler.on_request(Request('', session, request_id, 0))   # all wait for a sample
        callbacks = [threading.Thread(target=scheduler.on_joint_states,
                                      args=('', stamp * MS, JOINTS, [0.0] * 6))
                     for stamp in (100, 101)]
        for thread in callbacks:
            thread.start()
        for thread in callbacks:
            thread.join()
        answers = outbox.wait_for(3)
        assert [a.request_id for a in answers] == [1, 2, 3]
        assert runtime.most == 1 and runtime.passes == 3
    finally:
        scheduler.stop()


def manual(clock, **settings):
    """A scheduler on a manual clock, never started: the caller turns its loop (as simtime)."""
    outbox = Outbox()
    core = PolicyServerCore(ServerConfig('so101', **settings), DemoRuntime(), clock=clock)
    return Scheduler(core, outbox), outbox


def test_the_loop_on_a_manual_clock_answers_a_missing_observation_at_its_deadline():
    clock = FakeClock()
    scheduler, outbox = manual(clock, observation_wait_s=0.1)
    session = admit(scheduler)
    scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    scheduler.on_request(Request('', session, 1, 500 * MS))   # its observation never comes
    assert not scheduler.step() and scheduler.next_turn() == pytest.approx(0.1)
    clock.now = 0.0999
    assert not scheduler.step() and outbox.answers == [], 'just before its deadline'
    clock.now = 0.1
    assert scheduler.step(), 'at its deadline'
    [answer] = outbox.answers
    assert answer.error.startswith('stale observation: ') and scheduler.next_turn() is None
    assert not scheduler.step()


def test_the_loop_on_a_manual_clock_releases_held_back_answers_in_order():
    clock = FakeClock()
    scheduler, outbox = manual(clock, extra_latency_s=0.2)
    session = admit(scheduler, in_flight=2)
    scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    scheduler.on_request(Request('', session, 1, 0))
    assert scheduler.step() and outbox.answers == [] and scheduler.next_turn() == 0.2
    clock.now = 0.05
    scheduler.update_settings(extra_latency_s=0.0)   # lowered: the next may not overtake
    scheduler.on_request(Request('', session, 2, 0))
    assert scheduler.step() and outbox.answers == [] and len(scheduler.delivery) == 2
    clock.now = 0.1999
    assert not scheduler.step() and outbox.answers == [], 'just before its time'
    clock.now = 0.2
    assert scheduler.step(), 'at its time'
    assert [a.request_id for a in outbox.answers] == [1, 2] and scheduler.next_turn() is None
    assert not scheduler.step()
    scheduler.on_request(Request('', session, 3, 0))   # nothing held back: published at once
    assert scheduler.step() and [a.request_id for a in outbox.answers] == [1, 2, 3]


def test_stop_drops_held_back_answers_and_the_loop_serves_no_more():
    clock = FakeClock()
    scheduler, outbox = manual(clock, extra_latency_s=0.2)
    session = admit(scheduler)
    scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
    scheduler.on_request(Request('', session, 1, 0))
    assert scheduler.step() and len(scheduler.delivery) == 1
    scheduler.stop()
    clock.now = 1.0
    scheduler.on_request(Request('', session, 2, 0))
    assert not scheduler.step() and outbox.answers == []


def test_held_back_answers_and_deadlines_start_no_thread_beyond_the_serving_one():
    before = set(threading.enumerate())
    outbox = Outbox()
    scheduler = started(make_server(extra_latency_s=0.2, observation_wait_s=0.1), outbox,
                        inline=False)
    try:
        session = admit(scheduler, in_flight=2)
        scheduler.on_joint_states('', 100 * MS, JOINTS, [0.0] * 6)
        scheduler.on_request(Request('', session, 1, 0))           # ready: held back 0.2 s
        scheduler.on_request(Request('', session, 2, 500 * MS))    # its deadline in 0.1 s
        assert [t.name for t in set(threading.enumerate()) - before] == ['serving']
        answers = outbox.wait_for(2)
        assert [a.request_id for a in answers] == [1, 2] and answers[1].error
        assert outbox.threads == ['serving', 'serving']
        assert [t.name for t in set(threading.enumerate()) - before] == ['serving']
    finally:
        scheduler.stop()
    assert len(THREADS) <= 4 and THREADS.count('serving') == 1
