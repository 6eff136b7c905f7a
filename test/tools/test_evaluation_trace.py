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

"""Episode traces of the simulated-time runner, --trace-seeds and --explain."""

import json

import numpy as np
import pytest

from remote_inference_py.evaluation import cli, settings as eval_settings, simtime
from remote_inference_py.evaluation.explain import category, pick_discordant
from remote_inference_py.evaluation.settings import Configuration
from remote_inference_py.evaluation.stats import EpisodeResult
from remote_inference_py.evaluation.task import JOINT_NAMES, TaskConfig
from remote_inference_py.evaluation.trace import (
    describe, divergence, EpisodeTrace, Facts)

TASK = TaskConfig(time_limit_s=8.0)


@pytest.fixture(scope='module')
def expert():
    policy = eval_settings.resolve_policy('expert')
    runtime = policy.make_runtime()
    yield runtime
    runtime.close()


def test_a_traced_episode_runs_as_an_untraced_one(expert, tmp_path):
    settings = eval_settings.EvalSettings.load()
    configuration = Configuration('aligned', 0.3)
    plain = simtime.run_episode(expert, 'expert', settings, configuration, 1, TASK)
    trace = EpisodeTrace('aligned', 0.3, 1)
    traced = simtime.run_episode(expert, 'expert', settings, configuration, 1, TASK,
                                 trace=trace)
    for name in ('success', 'completion_time_s', 'max_lift_m', 'requests', 'chunks_accepted',
                 'chunks_dropped', 'held_ticks', 'starved_ticks'):
        assert getattr(traced, name) == getattr(plain, name), name
    assert plain.success
    # one sample per tick, one switch per chunk handed to the executor
    assert len(trace.t) == len(trace.command) == len(trace.measured) == len(trace.cube)
    assert len(trace.t) > 100 and trace.t[0] == pytest.approx(0.0, abs=1e-9)
    assert len(trace.switches) == plain.chunks_accepted + plain.chunks_dropped
    accepted = [s for s in trace.switches if s['accepted']]
    assert len(accepted) == plain.chunks_accepted >= 3
    later = accepted[1:]
    # answers come L = 0.3 s after the observation (plus the wait for a fresh frame)
    assert all(s['observation_age'] == pytest.approx(0.3, abs=0.03) for s in later)
    assert all(0.3 - 1e-6 <= s['turnaround'] <= 0.4 for s in later)
    assert all(s['disagreement'] is not None for s in later)
    assert trace.meta['success'] and trace.meta['completion_time_s'] == plain.completion_time_s
    facts = describe(trace)
    assert facts.switches == len(accepted) and facts.first_contact_s is not None
    assert facts.max_lift_m >= 0.05 and not facts.dropped
    loaded = EpisodeTrace.load(trace.save(tmp_path / trace.file_name()))
    assert loaded.file_name() == 'aligned_L0.3_seed1.json'
    assert np.allclose(loaded.measured, trace.measured) and loaded.switches == trace.switches
    assert divergence(loaded, trace) is None


def test_divergence_and_categories():
    first, second = EpisodeTrace('sync', 0.0, 1), EpisodeTrace('aligned', 0.0, 1)
    for k in range(10):
        for trace, offset in ((first, 0.0), (second, 0.1 if k >= 6 else 0.0)):
            trace.t.append(k / 30)
            trace.measured.append([0.0, offset, 0.0, 0.0, 0.0, 0.0])
    part = divergence(first, second)
    assert part['t'] == pytest.approx(6 / 30) and part['joint'] == JOINT_NAMES[1]
    base = dict(success=False, max_lift_m=0.0, first_contact_s=1.0, lifted_s=None,
                dropped=False, pushed_m=0.0, switches=3, dropped_chunks=0, near_switches=1,
                largest_near_seam=None, largest_near_disagreement=None,
                largest_near_joint=None, max_seam=None, max_observation_age=None)
    assert category(Facts(**{**base, 'first_contact_s': None})) == 'never moved the cube'
    assert category(Facts(**{**base, 'max_lift_m': 0.03, 'dropped': True})) == \
        'lifted, then dropped'
    assert category(Facts(**{**base, 'pushed_m': 0.02})) == 'pushed the cube, no lift'
    assert category(Facts(**base), error='boom') == 'crashed'


def _result(mode, seed, success):
    return EpisodeResult(policy='expert', mode=mode, latency_s=0.3, seed=seed,
                         runner='sim-time', success=success,
                         completion_time_s=4.0 if success else None)


def test_pick_discordant_alternates_directions():
    results = [_result('sync', s, s not in (1, 2, 3)) for s in range(1, 8)]
    results += [_result('aligned', s, s not in (5, 6, 7)) for s in range(1, 8)]
    chosen = pick_discordant(results, limit=3)
    assert [(c.seed, c.winner) for c in chosen] == [(5, 'sync'), (1, 'aligned'),
                                                    (6, 'sync')]


def test_trace_seeds_and_explain_write_traces_plots_and_the_report(tmp_path, capsys):
    out = tmp_path / 'run'
    code = cli.main(['--policy', 'expert', '--episodes', '2', '--modes', 'sync,aligned',
                     '--latencies', '0.3', '--time-limit', '8', '--trace-seeds', '1',
                     '--out', str(out)])
    assert code == 0
    names = sorted(p.name for p in (out / 'traces').iterdir())
    assert names == ['aligned_L0.3_seed1.json', 'seed1_L0.3.png', 'sync_L0.3_seed1.json']
    assert (out / 'traces' / 'seed1_L0.3.png').read_bytes()[:4] == b'\x89PNG'
    run = json.loads((out / 'run.json').read_text())
    assert run['policy'] == 'expert' and run['seeds'] == [1, 2]
    # Make seed 2 discordant in the recorded results: the re-run must say it differs.
    lines = [json.loads(line) for line in (out / 'results.jsonl').read_text().splitlines()]
    for line in lines:
        if line['mode'] == 'aligned' and line['seed'] == 2:
            line['success'], line['completion_time_s'] = False, None
    (out / 'results.jsonl').write_text(''.join(json.dumps(v) + '\n' for v in lines))
    capsys.readouterr()
    assert cli.main(['--explain', str(out)]) == 0
    report = (out / 'explain' / 'explain.md').read_text()
    assert '| aligned vs sync, L=0.3 | 2 | sync |' in report
    assert 'reproduced: not aligned L=0.3 seed 2' in report
    assert sorted(p.name for p in (out / 'explain').iterdir()) == [
        'aligned_L0.3_seed2.json', 'explain.md', 'seed2_L0.3.png', 'sync_L0.3_seed2.json']
    assert 'wrote' in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(['--explain', str(tmp_path / 'nothing')])
    assert exit_info.value.code == 2
