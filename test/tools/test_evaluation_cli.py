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

"""The evaluate command, its input checks, and the evaluation's parameters file."""

import json

import pytest

from remote_inference_py.evaluation import cli, settings as eval_settings
from remote_inference_py.evaluation.settings import (
    check_episodes, configurations, EvalSettings, MODES, parse_latencies, parse_modes,
    resolve_policy)


@pytest.mark.parametrize('argv, message', [
    (['--policy', 'nope'], "unknown policy 'nope'"),
    (['--policy', 'missing.pt2'], "policy checkpoint 'missing.pt2' does not exist"),
    (['--latencies', '0,-0.1'], 'latency -0.1 s is negative'),
    (['--latencies', '0,fast'], "latency 'fast' is not a number"),
    (['--episodes', '0'], 'episode count must be at least 1, got 0'),
    (['--modes', 'sync,foo'], "unknown execution mode 'foo'"),
])
def test_bad_input_is_refused_with_a_message_naming_it(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv + ['--out', str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_small_matrix_writes_the_table_the_plot_and_the_episodes(tmp_path, capsys):
    out = tmp_path / 'run'
    code = cli.main(['--policy', 'expert', '--episodes', '1', '--modes', 'sync,aligned',
                     '--latencies', '0.3', '--time-limit', '8', '--out', str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert '[2/2] aligned L=0.3 seed 1: success in' in printed
    assert '| expert | sync | 0.3 | 1 | 100 % |' in printed
    text = (out / 'results.md').read_text()
    for needle in ('- date: ', '- machine: ', 'cube seeds: 1', '- command: `evaluate',
                   '| expert | aligned | 0.3 | 1 | 100 % |'):
        assert needle in text
    assert (out / 'results.png').read_bytes()[:4] == b'\x89PNG'
    lines = (out / 'results.jsonl').read_text().splitlines()
    assert [json.loads(line)['mode'] for line in lines] == ['sync', 'aligned']
    paired = (out / 'paired.md').read_text()
    assert '# Paired comparison: expert' in paired
    assert '| aligned vs sync, L=0.3 | 1 | 1 | 0 | 0 | 1.000 | +0.0' in paired
    assert '| aligned vs sync, L=0.3 | 1 | 1 | 0 | 0 |' in printed


def test_parsers_and_the_matrix():
    assert parse_modes(['sync, aligned', 'sync']) == ('sync', 'aligned')
    assert parse_latencies(['0,0.1', '0.6']) == (0.0, 0.1, 0.6)
    assert check_episodes(3) == 3
    with pytest.raises(ValueError, match='integer'):
        check_episodes(2.5)
    with pytest.raises(ValueError, match='above 10 s'):
        parse_latencies(['11'])
    matrix = configurations(('sync', 'aligned'), (0.0, 0.6))
    assert [c.label for c in matrix] == ['sync L=0', 'aligned L=0', 'sync L=0.6',
                                         'aligned L=0.6']
    assert resolve_policy('expert').server_parameters == {
        'policy_type': 'python',
        'checkpoint': 'remote_inference_py.evaluation.expert:expert_runtime'}


def test_the_parameters_file_only_uses_declared_parameters():
    from remote_inference_py.executor.node import PARAMETERS as EXECUTOR
    from remote_inference_py.hardware.node import PARAMETERS as HARDWARE
    from remote_inference_py.policy_server.node import PARAMETERS as SERVER
    declared = {'executor': EXECUTOR, 'hardware_interface': HARDWARE, 'policy_server': SERVER}
    loaded = EvalSettings.load()
    for node, parameters in loaded.parameters.items():
        assert parameters, f'{node} has no parameters in {eval_settings.CONFIG_FILE}'
        unknown = sorted(set(parameters) - set(declared[node]))
        assert not unknown, f'{node}: {unknown} are not declared parameters'
    for mode in MODES:
        config = loaded.executor_config(mode)
        assert config.synchronous == (mode == 'sync')
    assert loaded.executor_config('aligned+blend').blend_steps > 0
