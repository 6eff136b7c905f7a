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

"""Property-based tests of the executor core (hypothesis).

A scripted fake server answers each request after a random delay, sometimes with a bad, stale
or duplicated chunk, or never; the control loop ticks with jitter and the occasional late tick.
Whatever happens, these must hold:

- no control tick is handled twice or out of order, and committed action ticks only advance;
- a committed target is never replaced, by a chunk or by a tick;
- a capture taken before a wait began never restarts motion, and every accepted chunk was
  captured at or after its request's earliest capture time;
- a dropped chunk leaves the plan exactly as it was;
- every command is within the joint limits and within the per-tick step clamp;
- blending changes only the listed components (merge level).
"""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np

from remote_inference_py.executor.config import ExecutorConfig
from remote_inference_py.executor.core import Chunk, ExecutorCore, State
from remote_inference_py.executor.merge import align_chunk, ensemble_chunk, Plan

JOINTS = ('a', 'b', 'c')
LIMIT = 2.0
VALUE = 1.5
SETTINGS = settings(max_examples=120, deadline=None)

configs = st.fixed_dictionaries({
    'fps': st.sampled_from([10.0, 30.0]),
    'interpolation_multiplier': st.sampled_from([1, 2, 3]),
    'chunk_merge': st.sampled_from(['append', 'aligned', 'ensemble']),
    'synchronous': st.booleans(),
    'action_offset': st.sampled_from([0, 0, 1, 2]),
    'refill_seconds': st.sampled_from([0.0, 0.1, 0.3]),
    'request_timeout_s': st.sampled_from([0.3, 1.0]),
    'starvation_grace_s': st.sampled_from([0.4, 3.0]),
    'blend_steps': st.sampled_from([0, 0, 2, 4]),
    'blend_components': st.sampled_from([(), ('b',), ('a', 'c')]),
    'max_step_rad': st.sampled_from([math.inf, 0.3]),
    'ensemble_coeff': st.sampled_from([0.01, -0.5, 0.5]),
    'return_to_initial_position': st.booleans(),
})

answers = st.fixed_dictionaries({
    'latency_ticks': st.floats(0.2, 12.0),
    'steps': st.integers(1, 10),
    'kind': st.sampled_from(['good'] * 6 + ['nan', 'stale', 'session', 'silent', 'twice',
                                            'future', 'outside']),
    'seed': st.integers(0, 2 ** 16),
})


def build_config(params):
    params = dict(params)
    if params['chunk_merge'] != 'aligned':
        params['blend_steps'] = 0
    return ExecutorConfig(joint_names=JOINTS, joint_lower_limits=(-LIMIT,) * 3,
                          joint_upper_limits=(LIMIT,) * 3, **params)


def make_answer(order, answer, config, session='s1'):
    """Return [(arrival time, Chunk), ...] answering a RequestOrder."""
    rng = np.random.default_rng(answer['seed'])
    positions = rng.uniform(-VALUE, VALUE, (answer['steps'], len(JOINTS)))
    arrival = order.sent_time + answer['latency_ticks'] / config.fps
    capture = order.sent_time + min(0.005, arrival - order.sent_time)
    kind = answer['kind']
    if kind == 'silent':
        return []
    if kind == 'nan':
        positions[-1, rng.integers(len(JOINTS))] = math.nan
    if kind == 'outside':
        positions[-1, rng.integers(len(JOINTS))] = LIMIT + 0.5
    if kind == 'stale':
        capture = order.earliest_capture_time - 0.05
    if kind == 'session':
        session = 'other'
    if kind == 'future':
        capture = arrival + 0.5
    chunk = Chunk(session, order.request_id, capture, JOINTS, 1.0 / config.fps, positions)
    if kind == 'twice':
        return [(arrival, chunk), (arrival + 0.01, chunk)]
    return [(arrival, chunk)]


class Checker:
    """Drive a core against a scripted server and check the invariants at every step."""

    def __init__(self, config, script, jitter):
        self.config = config
        self.core = ExecutorCore(config)
        self.script = script
        self.jitter = jitter
        self.pending = []
        self.earliest = {}
        self.last_tick = -1
        self.last_segment = None
        self.commands = []
        self.wait_start = None
        self.fresh_since_wait = True
        self.chunk_calls = 0

    def run(self, ticks):
        core = self.core
        core.on_measured(np.array([0.1, -0.2, 0.3]))
        core.admit('s1')
        core.start(0.0)
        period = self.config.tick_period
        for index in range(ticks):
            now = index * period + self.jitter[index % len(self.jitter)] * period
            self.deliver(now)
            self.tick(now)
            if core.is_terminal:
                return
        core.stop(ticks * period)
        index = ticks
        while not core.is_terminal:
            self.tick(index * period)
            index += 1
            assert index < ticks + 10_000
        if core.state == State.STOPPED and self.config.return_to_initial_position:
            np.testing.assert_array_equal(self.commands[-1], core.initial_pose)

    def deliver(self, now):
        for arrival, chunk in sorted(self.pending, key=lambda item: item[0]):
            if arrival > now:
                continue
            self.pending.remove((arrival, chunk))
            self.on_chunk(chunk, max(arrival, now - 1e-6))

    def on_chunk(self, chunk, now):
        core = self.core
        waiting = core.state == State.WAITING
        plan_before = core.plan
        committed = (core.committed_tick, core.committed_target)
        verdict = core.on_chunk(chunk, now)
        self.chunk_calls += 1
        # a committed target is never replaced by a chunk
        assert core.committed_tick == committed[0]
        if committed[1] is not None:
            np.testing.assert_array_equal(core.committed_target, committed[1])
        if not verdict.accepted:
            # dropped whole: the plan object is untouched
            assert core.plan is plan_before
            assert verdict.reason
            return
        assert chunk.capture_time >= self.earliest[chunk.request_id]
        if waiting and not self.config.synchronous:
            assert chunk.capture_time >= self.wait_start
            self.fresh_since_wait = True

    def tick(self, now):
        core = self.core
        was_waiting = core.state == State.WAITING
        committed = (core.committed_tick, core.committed_target)
        out = core.tick(now)
        config = self.config
        if out.tick_index is not None:
            # no tick handled twice or out of order
            assert out.tick_index > self.last_tick
            self.last_tick = out.tick_index
        if out.state == State.WAITING and not was_waiting:
            self.wait_start = now
            self.fresh_since_wait = False
        if out.command is not None and not out.held and out.state == State.RUNNING:
            if was_waiting and not config.synchronous:
                # motion restarts only from a capture taken after the wait began
                assert self.fresh_since_wait
            segment = core.committed_tick
            if segment == committed[0] and committed[1] is not None:
                # the target being interpolated toward did not change
                np.testing.assert_array_equal(core.committed_target, committed[1])
            else:
                assert committed[0] is None or segment > committed[0]
            if config.max_step_rad == math.inf and \
                    out.tick_index % config.interpolation_multiplier == 0:
                np.testing.assert_allclose(out.command, core.committed_target, atol=1e-12)
        if out.command is not None:
            assert np.all(np.abs(out.command) <= LIMIT)
            if self.commands:
                step = np.max(np.abs(out.command - self.commands[-1]))
                assert step <= config.max_step_rad + 1e-9
            self.commands.append(out.command)
            core.on_applied(out.command)
        if out.request is not None:
            order = out.request
            self.earliest[order.request_id] = order.earliest_capture_time
            answer = self.script[(order.request_id - 1) % len(self.script)]
            self.pending.extend(make_answer(order, answer, config))
        stats = core.stats()
        assert stats.chunks_accepted + stats.chunks_dropped == self.chunk_calls


@SETTINGS
@given(params=configs, script=st.lists(answers, min_size=1, max_size=8),
       jitter=st.lists(st.sampled_from([0.0, 0.0, 0.0, -0.3, 0.3, 1.6]), min_size=1,
                       max_size=10))
def test_executor_invariants(params, script, jitter):
    checker = Checker(build_config(params), script, jitter)
    checker.run(ticks=90)


@SETTINGS
@given(params=configs, script=st.lists(answers, min_size=1, max_size=4))
def test_executor_invariants_on_a_steady_clock(params, script):
    Checker(build_config(params), script, [0.0]).run(ticks=60)


# ----------------------------------------------------------------------------- merge level

plans = st.integers(0, 8).flatmap(
    lambda rows: st.lists(st.floats(-VALUE, VALUE), min_size=rows * 3, max_size=rows * 3))
chunks = st.integers(1, 8).flatmap(
    lambda rows: st.lists(st.floats(-VALUE, VALUE), min_size=rows * 3, max_size=rows * 3))


def as_rows(values):
    return np.array(values, dtype=float).reshape(-1, 3)


@SETTINGS
@given(old=plans, new=chunks, start=st.integers(0, 10), blend_steps=st.integers(1, 6),
       weight=st.floats(0.0, 1.0), mask=st.lists(st.booleans(), min_size=3, max_size=3))
def test_blending_touches_only_the_listed_components(old, new, start, blend_steps, weight,
                                                     mask):
    old_plan = Plan.from_positions(0, as_rows(old)) if old else Plan.empty(3, 0)
    previous = np.zeros(3)
    mask = np.array(mask)
    plain = align_chunk(old_plan, as_rows(new), start, 0, previous)
    blended = align_chunk(old_plan, as_rows(new), start, 0, previous, blend_steps=blend_steps,
                          blend_weight=weight, blend_mask=mask)
    assert blended.plan.start_tick == plain.plan.start_tick
    np.testing.assert_array_equal(blended.plan.positions[:, ~mask], plain.plan.positions[:, ~mask])
    # on blended joints every target lies between the old and the new one
    difference = np.abs(blended.plan.positions - plain.plan.positions)
    first = start - plain.plan.start_tick
    overlap = plain.overlap_steps
    changed = np.zeros(len(plain.plan), dtype=bool)
    changed[first:first + min(blend_steps, overlap)] = True
    assert np.all(difference[~changed] == 0.0)
    if overlap:
        old_part = old_plan.positions[start:start + overlap]
        new_part = plain.plan.positions[first:first + overlap]
        gap = np.abs(old_part - new_part)
        assert np.all(difference[first:first + overlap] <= gap + 1e-12)


@SETTINGS
@given(predictions=st.lists(chunks, min_size=1, max_size=5), coeff=st.floats(-1.0, 1.0),
       starts=st.lists(st.integers(0, 2), min_size=5, max_size=5))
def test_ensemble_is_the_act_weighted_average(predictions, coeff, starts):
    plan = Plan.empty(3, 0)
    covering = {}
    tick = 0
    for index, values in enumerate(predictions):
        tick += starts[index]
        rows = as_rows(values)
        plan = ensemble_chunk(plan, rows, tick, tick, np.zeros(3), coeff=coeff).plan
        for step, row in enumerate(rows):
            covering.setdefault(tick + step, []).append(row)
        for old_tick in [t for t in covering if t < tick]:
            del covering[old_tick]
    for target_tick, rows in covering.items():
        weights = np.exp(-coeff * np.arange(len(rows)))   # index 0 = oldest prediction
        expected = (weights[:, None] * np.array(rows)).sum(axis=0) / weights.sum()
        np.testing.assert_allclose(plan.row(target_tick), expected, atol=1e-9)
