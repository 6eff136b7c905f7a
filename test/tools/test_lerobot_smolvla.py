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
A real SmolVLA (LeRobot 0.4.4's classes, random weights, tiny SmolVLM backbone made offline).

Served by the policy server's core (no ROS): chunks equal to LeRobot's own path
(preprocessor -> ``predict_action_chunk`` -> postprocessor) within 1e-3 degrees; the task text
reaches the tokenizer; the backbone folder is checked by name before lerobot loads anything,
and an uncached Hub id with ``HF_HUB_OFFLINE=1`` is refused at once. Real-time chunking:
LeRobot's own guidance pulls the frozen rows onto the committed plan.

The bound of the rtc test, derived from LeRobot 0.4.4's ``RTCProcessor.denoise_step``. It
detaches the velocity ``v`` from ``x_t``, so its correction is exactly ``W (Y - x1)`` (``x1 =
x_t - time v`` the predicted chunk, ``Y`` the plan, ``W`` 1 on frozen rows), and one Euler step
of ``1/n`` moves ``x1`` by ``(w/n) W (Y - x1)`` plus however much the network's own prediction
``x1`` drifts between steps. At the first step (``tau = 0``) the weight is capped at
``max_guidance_weight`` = 10 = ``num_steps``, so ``w/n = 1``: the frozen rows' predicted chunk
is put on the plan. Each later step shrinks the error by ``1 - w/n`` (0.09 to 0.8), so what
remains is the network's step-to-step drift, damped, whatever the plan's distance: bounded by
the drift, not by the offset. Measured here 0.005-0.017 normalized units (standard deviations)
for plans 0.5-2 standard deviations away; the test allows 0.05 (3x), and asserts that without
a plan the frozen rows are the full offset away and that rows past the execution horizon are
not pulled onto the plan.
"""

import json
import os
import shutil
import time

from core_fixtures import make_server
import lerobot_checkpoints as checkpoints
from lerobot_checkpoints import lerobot_chunk, observation, served_chunk
import numpy as np
import pytest

from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.runtimes import (
    Prefix, RuntimeLoadError, RuntimeOptions, warm_up)

TOLERANCE = 1e-3        # policy units: degrees, gripper percent
RTC_BOUND = 0.05        # frozen rows vs the plan, in standard deviations (docstring)
SEED = 5


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    """A tiny SmolVLA saved by LeRobot with its processors, beside its backbone folder."""
    return checkpoints.make_checkpoint(tmp_path_factory.mktemp('smolvla') / 'smolvla',
                                       'smolvla')


@pytest.fixture(scope='module')
def runtime(folder):
    os.environ[SEED_VARIABLE] = str(SEED)
    try:
        yield load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    finally:
        os.environ.pop(SEED_VARIABLE, None)


pytestmark = pytest.mark.usefixtures('offline')   # nothing reaches for the Hugging Face Hub


def test_smolvla_is_served_equal_to_lerobot_with_the_task_text(folder, runtime):
    assert runtime.kind == 'lerobot' and runtime.spec.policy == 'smolvla'
    assert runtime.spec.chunk_length == 20 and runtime.max_batch_size == 1
    assert runtime.supports_prefix and runtime.execution_horizon == 10
    warm_up(runtime, 1)
    sample = [observation(1, reach=0.5)]
    pick = served_chunk(runtime, sample, 'pick up the red cube', timeout=5.0)
    expected = lerobot_chunk(folder, sample, SEED, 'pick up the red cube')
    assert pick.shape == expected.shape == (20, 6)
    assert np.abs(pick - expected).max() < TOLERANCE
    # The task reaches the tokenizer: another instruction, same noise, another chunk.
    drawer = served_chunk(runtime, sample, 'open the top drawer', timeout=5.0)
    expected = lerobot_chunk(folder, sample, SEED, 'open the top drawer')
    assert np.abs(drawer - expected).max() < TOLERANCE
    assert np.abs(drawer - pick).max() > 100 * TOLERANCE


def model_inputs(seed):
    rng = np.random.default_rng(seed)
    state = np.array([[3.0, -12.0, 18.0, 25.0, 4.0, 55.0]], np.float32)
    return {checkpoints.STATE: state,
            checkpoints.FRONT: rng.random((1, 3, 64, 96), dtype=np.float32)}


def test_rtc_puts_the_frozen_rows_on_the_committed_plan(runtime):
    inputs = model_inputs(2)
    plain = runtime.infer(inputs, ['pick'])[0]
    std = checkpoints.STATE_STD                 # the action's normalization (MEAN_STD)
    assert np.array_equal(runtime.infer(inputs, ['pick'], [None])[0], plain)
    for frozen in (3, 6):
        for offset in (1.0, 2.0):
            plan = plain + offset * std         # a plan the policy would not make by itself
            guided = runtime.infer(inputs, ['pick'], [Prefix(plan, frozen)])[0]
            error = np.abs(guided - plan) / std
            assert error[:frozen].max() < RTC_BOUND, (frozen, offset, error[:frozen].max())
            # Without the plan they are the full offset away; past the execution horizon
            # (10 of 20 rows) the plan weighs nothing and the chunk stays the policy's own.
            assert np.allclose(np.abs(plain - plan)[:frozen] / std, offset)
            assert error[10:].min() > 0.9 * offset
    # The rtc merge is offered at admission, and a plan longer than the chunk is cut.
    assert 'rtc' in make_server(runtime).contract.merge_modes
    long_plan = np.concatenate([plain, plain]) + std
    guided = runtime.infer(inputs, ['pick'], [Prefix(long_plan, 2)])[0]
    assert (np.abs(guided - long_plan[:20]) / std)[:2].max() < RTC_BOUND


def test_bad_plans_are_named(runtime):
    inputs = model_inputs(3)
    with pytest.raises(ValueError, match=r'the committed plan has shape \[4, 5\]; expected '
                                         r'\[steps, 6\]'):
        runtime.infer(inputs, ['pick'], [Prefix(np.zeros((4, 5), np.float32), 1)])
    with pytest.raises(ValueError, match='non-finite'):
        runtime.infer(inputs, ['pick'], [Prefix(np.full((4, 6), np.nan, np.float32), 1)])


def test_rtc_parameters_are_checked_by_name(folder):
    with pytest.raises(RuntimeLoadError, match=r"parameter 'rtc_execution_horizon' is 21; it "
                                               r'must be in \[1, chunk_size 20\]'):
        load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0,
                                    rtc_execution_horizon=21))
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0,
                                          rtc_execution_horizon=20, flow_steps=3))
    assert runtime.execution_horizon == 20 and runtime.policy.config.num_steps == 3


def copy(folder, tmp_path, name):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def point_backbone_to(folder, backbone):
    """Rewrite vlm_model_name and the tokenizer's name, as a user moving the backbone would."""
    config = json.loads((folder / 'config.json').read_text())
    (folder / 'config.json').write_text(json.dumps({**config, 'vlm_model_name': backbone}))
    pipeline = json.loads((folder / 'policy_preprocessor.json').read_text())
    for step in pipeline['steps']:
        if 'tokenizer_name' in step.get('config', {}):
            step['config']['tokenizer_name'] = backbone
    (folder / 'policy_preprocessor.json').write_text(json.dumps(pipeline))


def test_a_missing_or_unreadable_backbone_is_named(folder, tmp_path):
    backbone = json.loads((folder / 'config.json').read_text())['vlm_model_name']
    moved = copy(folder, tmp_path, 'moved')
    point_backbone_to(moved, str(tmp_path / 'nowhere'))
    with pytest.raises(RuntimeLoadError, match=r"the SmolVLM backbone '.*nowhere' \("
                                               r'vlm_model_name in config.json\) is not a '
                                               r'folder'):
        load_runtime(RuntimeOptions(checkpoint=str(moved), fps=30.0))
    broken = copy(checkpoints.pathlib.Path(backbone), tmp_path, 'broken_backbone')
    (broken / 'tokenizer_config.json').unlink()
    point_backbone_to(moved, str(broken))
    with pytest.raises(RuntimeLoadError, match=r'broken_backbone.* has no '
                                               r'tokenizer_config.json'):
        load_runtime(RuntimeOptions(checkpoint=str(moved), fps=30.0))
    shutil.copy(checkpoints.pathlib.Path(backbone) / 'tokenizer_config.json', broken)
    (broken / 'config.json').write_text('{"model_type": "smolvlm", ')
    with pytest.raises(RuntimeLoadError, match=r'broken_backbone.*: config.json cannot be read '
                                               r'\(JSONDecodeError'):
        load_runtime(RuntimeOptions(checkpoint=str(moved), fps=30.0))
    # Only the preprocessor's tokenizer moved: named as such.
    point_backbone_to(moved, backbone)
    pipeline = json.loads((moved / 'policy_preprocessor.json').read_text())
    for step in pipeline['steps']:
        if 'tokenizer_name' in step.get('config', {}):
            step['config']['tokenizer_name'] = str(tmp_path / 'gone')
    (moved / 'policy_preprocessor.json').write_text(json.dumps(pipeline))
    with pytest.raises(RuntimeLoadError, match=r"'.*gone' \(tokenizer_name in "
                                               r'policy_preprocessor.json\) is not a folder'):
        load_runtime(RuntimeOptions(checkpoint=str(moved), fps=30.0))


def test_an_uncached_hub_backbone_offline_is_named_at_once(folder, tmp_path, monkeypatch):
    monkeypatch.setenv('HF_HOME', str(tmp_path / 'hf_home'))       # an empty cache
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path / 'hf_home' / 'hub'))
    hub = copy(folder, tmp_path, 'hub')
    point_backbone_to(hub, 'HuggingFaceTB/SmolVLM2-500M-Video-Instruct')
    began = time.monotonic()
    with pytest.raises(RuntimeLoadError, match=r"the SmolVLM backbone 'HuggingFaceTB/SmolVLM2-"
                                               r"500M-Video-Instruct' \(vlm_model_name in "
                                               r'config.json\) is a Hugging Face Hub id whose '
                                               r'config.json, tokenizer_config.json is not in '
                                               r'the local cache, and HF_HUB_OFFLINE=1'):
        load_runtime(RuntimeOptions(checkpoint=str(hub), fps=30.0))
    assert time.monotonic() - began < 5.0
