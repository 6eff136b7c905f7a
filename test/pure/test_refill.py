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

"""Hand-computed cases for the turnaround estimate, the effective refill and the staggering."""

import math

import pytest

from remote_inference_py.executor.refill import (
    another_request_due, coverage_s, effective_refill, refill_due, request_spacing,
    STEADY_WINDOW, TurnaroundEstimator)


@pytest.mark.parametrize('refill_seconds, recent_max, fps, expected', [
    (0.2, 0.0, 30.0, 0.2),        # no sample yet: the configured refill
    (0.2, 0.5, 10.0, 0.6),        # latency dominates: 0.5 + 1/10
    (1.0, 0.5, 10.0, 1.0),        # configured refill dominates
    (0.0, 0.0, 30.0, 1 / 30),     # never below one action period
    (0.3, 0.2, 10.0, 0.3),        # 0.2 + 0.1 ties with 0.3
    (0.25, 0.8, 30.0, 0.8 + 1 / 30),
])
def test_effective_refill(refill_seconds, recent_max, fps, expected):
    assert effective_refill(refill_seconds, recent_max, fps) == pytest.approx(expected)


@pytest.mark.parametrize('buffered, threshold, due', [
    (0.3, 0.3, True),
    (0.1 + 0.2, 0.3, True),       # float rounding of tick multiples still counts as equal
    (0.29, 0.3, True),
    (0.31, 0.3, False),
    (0.0, 0.0, True),
])
def test_refill_due(buffered, threshold, due):
    assert refill_due(buffered, threshold) is due


def test_estimator_is_empty_at_first():
    estimator = TurnaroundEstimator()
    assert (estimator.last_s, estimator.p50_s, estimator.recent_max_s) == (0.0, 0.0, 0.0)
    assert estimator.sample_count == 0


def test_first_sample_is_the_initial_estimate_even_when_not_steady():
    estimator = TurnaroundEstimator()
    estimator.add(2.0, steady=False)
    assert estimator.recent_max_s == 2.0
    assert estimator.p50_s == 2.0
    estimator.add(0.4, steady=False)     # later non-steady samples do not count
    assert estimator.recent_max_s == 2.0
    assert estimator.last_s == 0.4


def test_steady_samples_replace_the_initial_estimate():
    estimator = TurnaroundEstimator()
    estimator.add(2.0, steady=False)     # cold start
    estimator.add(0.1, steady=True)
    estimator.add(0.3, steady=True)
    estimator.add(0.2, steady=True)
    assert estimator.recent_max_s == pytest.approx(0.3)
    assert estimator.p50_s == pytest.approx(0.2)
    assert estimator.last_s == pytest.approx(0.2)
    assert estimator.sample_count == 3


def test_window_keeps_the_last_100_steady_samples():
    assert STEADY_WINDOW == 100
    estimator = TurnaroundEstimator()
    estimator.add(9.0, steady=True)      # falls out of the window below
    for value in range(150):
        estimator.add(value / 1000, steady=True)
    assert estimator.sample_count == 100
    assert estimator.recent_max_s == pytest.approx(0.149)
    assert estimator.p50_s == pytest.approx(0.0995)   # median of 0.050 .. 0.149


def test_a_slow_sample_raises_the_estimate_until_it_leaves_the_window():
    estimator = TurnaroundEstimator(window=3)
    for value in (0.1, 0.9, 0.1, 0.1):
        estimator.add(value, steady=True)
    assert estimator.recent_max_s == pytest.approx(0.9)
    estimator.add(0.1, steady=True)
    assert estimator.recent_max_s == pytest.approx(0.1)


@pytest.mark.parametrize('bad', [-0.1, float('nan')])
def test_estimator_rejects_impossible_samples(bad):
    with pytest.raises(ValueError, match='turnaround_s'):
        TurnaroundEstimator().add(bad, steady=True)


def test_estimator_rejects_an_empty_window():
    with pytest.raises(ValueError, match='window'):
        TurnaroundEstimator(window=0)


# ----------------------------------------------------------------------------- in flight

H = 50 / 30   # chunk horizon of 50 steps at 30 Hz [s]
P = 1 / 30    # action period: a refill request's earliest capture is this before its send


def covers(*sent_ages):
    """What requests sent `sent_ages` ago will cover from now (earliest capture + H - now)."""
    return [H - age - P for age in sent_ages]


@pytest.mark.parametrize('buffered, in_flight, expected', [
    (0.4, [], 0.4),                    # nothing in flight: the buffered plan
    (0.4, [1.1], 1.1),                 # the chunk in flight will play further
    (1.5, [1.0], 1.5),                 # the plan already goes further
    (0.0, [0.3, 1.2], 1.2),            # the newest request in flight covers the furthest
])
def test_coverage_is_the_latest_end_of_plan_and_chunks_in_flight(
        buffered, in_flight, expected):
    assert coverage_s(buffered, in_flight) == pytest.approx(expected)


@pytest.mark.parametrize('turnaround, k, fps, expected', [
    (0.0, 2, 30.0, 1 / 30),            # no estimate yet: one action period
    (1.0, 2, 30.0, 0.5),               # two requests spread over one turnaround
    (1.2, 3, 30.0, 0.4),
    (0.05, 3, 30.0, 1 / 30),           # never two requests for the same capture
    (0.8, 1, 30.0, 0.8),
])
def test_request_spacing(turnaround, k, fps, expected):
    assert request_spacing(turnaround, k, fps) == pytest.approx(expected)


@pytest.mark.parametrize('buffered, refill', [
    (0.31, 0.3), (0.3, 0.3), (0.0, 0.3), (0.9, 1.0), (1.2, 0.2)])
def test_with_one_request_in_flight_the_rule_is_the_plain_refill(buffered, refill):
    for spacing in (0.0, P, 5.0):
        assert another_request_due(buffered, [], math.inf, refill, 1, spacing) == \
            refill_due(buffered, refill)
        assert another_request_due(buffered, covers(0.01), 0.01, refill, 1, spacing) is False


def test_a_second_request_goes_out_when_the_first_chunk_would_cover_too_little():
    # Turnaround 1.0 s: effective refill 1.0 + 1/30. Request 1 went out at playback 1.0 s.
    refill = 1.0 + P
    spacing = request_spacing(1.0, 2, 30.0)
    # The first chunk covers at least until its earliest capture + H: another request is due
    # once that is within the effective refill: age >= H - P - refill = 0.6 s.
    edge = H - P - refill
    assert not another_request_due(1.0 - 0.55, covers(0.55), 0.55, refill, 2, spacing)
    assert another_request_due(1.0 - edge, covers(edge), edge, refill, 2, spacing)
    assert not another_request_due(0.0, covers(edge, 0.1), 0.1, refill, 2, 0.1), 'two'
    assert not another_request_due(0.0, covers(edge, 0.1), 0.1, refill, 3, 0.1), \
        'the newest covers'
    assert another_request_due(0.0, covers(1.3, edge), edge, refill, 3, 0.1)


def test_spacing_stops_a_burst_when_coverage_is_short():
    # A turnaround longer than the horizon: coverage is always short, requests spread out.
    refill = 2.0 + P
    spacing = request_spacing(2.0, 4, 30.0)        # 0.5 s
    assert another_request_due(0.0, [], math.inf, refill, 4, spacing)
    assert not another_request_due(0.0, covers(0.2), 0.2, refill, 4, spacing)
    assert another_request_due(0.0, covers(0.5), 0.5, refill, 4, spacing)
    assert not another_request_due(0.0, covers(1.5, 1.0, 0.5, 0.5), 0.5, refill, 4, spacing)


@pytest.mark.parametrize('turnaround, enough', [(0.75, 1), (1.0, 2), (1.15, 3)])
def test_staggered_requests_keep_a_long_turnaround_covered(turnaround, enough):
    """Step a 30 Hz timeline: each chunk is captured one period before its request."""
    fps = 30.0

    def gaps(k):
        refill = effective_refill(0.2, turnaround, fps)
        spacing = request_spacing(turnaround, k, fps)
        end, sent, count = H, [], 0        # a first chunk plays from t = 0 to H
        for tick in range(int(20 * fps)):
            now = tick / fps
            for when in [s for s in sent if now - s >= turnaround - 1e-9]:
                sent.remove(when)
                end = max(end, when - P + H)   # placed where its capture was
            if now >= end - 1e-9:
                count += 1
            if another_request_due(max(0.0, end - now), [s - P + H - now for s in sent],
                                   now - sent[-1] if sent else math.inf, refill, k, spacing):
                sent.append(now)
        return count

    if enough > 1:
        assert gaps(enough - 1) > 0
    assert gaps(enough) == 0
