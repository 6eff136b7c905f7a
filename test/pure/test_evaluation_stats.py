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

"""Statistics of episode results, the markdown table and the plot."""

import json

import pytest

from remote_inference_py.evaluation.stats import (
    EpisodeResult, markdown_table, mean_interval, plot, summarize, t_quantile_95,
    wilson_interval)


def result(mode, latency, seed, success, time_s=None, error=''):
    return EpisodeResult(policy='expert', mode=mode, latency_s=latency, seed=seed,
                         runner='sim-time', success=success, completion_time_s=time_s,
                         error=error)


def test_wilson_interval_matches_known_values():
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3) and high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_t_interval_of_the_mean():
    assert t_quantile_95(1) == pytest.approx(12.706)
    assert t_quantile_95(30) == pytest.approx(2.042)
    assert t_quantile_95(60) == pytest.approx(2.000, abs=2e-3)
    assert t_quantile_95(10_000) == pytest.approx(1.960, abs=1e-3)
    mean, low, high = mean_interval([3.0, 4.0, 5.0])
    assert mean == 4.0 and high - mean == pytest.approx(4.303 * 1.0 / 3 ** 0.5, rel=1e-3)
    assert mean_interval([2.0]) == (2.0, None, None)
    assert mean_interval([]) == (None, None, None)
    with pytest.raises(ValueError):
        t_quantile_95(0)


def test_summaries_table_and_crashed_seeds(tmp_path):
    results = [result('sync', 0.3, 1, True, 4.0), result('sync', 0.3, 2, True, 5.0),
               result('sync', 0.3, 3, False, error='simulation crashed: boom'),
               result('aligned', 0.3, 1, True, 3.0), result('aligned', 0.3, 2, False),
               result('aligned', 0.3, 3, False)]
    sync, aligned = summarize(results)
    assert (sync.mode, sync.episodes, sync.successes, sync.crashed) == ('sync', 3, 2, (3,))
    assert sync.time_mean == 4.5 and sync.time_low < 4.5 < sync.time_high
    assert aligned.successes == 1 and aligned.time_mean == 3.0 and aligned.time_low is None
    table = markdown_table([sync, aligned])
    assert '| expert | sync | 0.3 | 3 | 67 % |' in table
    assert '| expert | aligned | 0.3 | 3 | 33 % |' in table
    assert 'sync L=0.3 seed 3' in table, 'crashed episodes are listed with their seed'
    png = plot([sync, aligned], tmp_path / 'plot.png', title='test')
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_results_round_trip_through_json():
    original = result('ensemble', 0.1, 7, True, 3.25)
    original.cube_xy = (0.25, -0.05)
    again = EpisodeResult.from_dict(json.loads(original.to_json()))
    assert again == original
