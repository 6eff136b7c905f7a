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

"""Hand-computed cases for the turnaround estimate and the effective refill."""

import pytest

from remote_inference_py.executor.refill import (
    effective_refill, refill_due, STEADY_WINDOW, TurnaroundEstimator)


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
