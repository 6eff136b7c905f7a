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
Checkpoint folders saved by LeRobot 0.6.1, served with the LeRobot 0.4.4 the server has.

LeRobot 0.6.1 needs Python >= 3.12 and cannot run here, so the folders are made by LeRobot 0.4.4
(its classes, random weights, ``save_pretrained``) and rewritten into 0.6.1's format exactly as
0.6.1 writes it (lerobot_checkpoints.as_lerobot_0_6). LeRobot 0.4.4 alone refuses them; the
server maps them and serves chunks equal to LeRobot 0.4.4's own prediction from the original
folder within 1e-3 (degrees, gripper percent). Unknown keys, steps and weights are refused by
name at load, before any robot is admitted.
"""

import json
import shutil

import lerobot_0_6_files as files
import lerobot_checkpoints as checkpoints
from lerobot_checkpoints import lerobot_chunk, observation, served_chunk
import numpy as np
import pytest

from remote_inference_py.policy_server.export import main as export_main
from remote_inference_py.policy_server.lerobot_folder import config_fields, known_steps
from remote_inference_py.policy_server.lerobot_runtime import SEED_VARIABLE
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.runtimes import RuntimeLoadError, RuntimeOptions

TOLERANCE = 1e-3        # policy units: degrees, gripper percent
WRIST = 'observation.images.wrist'


@pytest.fixture(scope='module')
def folders(tmp_path_factory):
    """Folders saved by LeRobot 0.4.4 ('0.4') and the same rewritten as 0.6.1 saves them."""
    root = tmp_path_factory.mktemp('newer')
    act = checkpoints.make_checkpoint(root / 'act', 'act', 'MEAN_STD')
    diffusion = checkpoints.make_checkpoint(
        root / 'diffusion', 'diffusion', 'MIN_MAX', cameras=('front', 'wrist'),
        **checkpoints.DIFFUSION_0_6)
    return {('act', '0.4'): act, ('act', '0.6'): checkpoints.as_lerobot_0_6(act, root / 'act6'),
            ('diffusion', '0.4'): diffusion,
            ('diffusion', '0.6'): checkpoints.as_lerobot_0_6(diffusion, root / 'diffusion6')}


def test_lerobot_0_4_alone_refuses_a_0_6_folder(folders):
    with pytest.raises(Exception, match='pretrained_revision'):
        checkpoints.LeRobotReference(folders['act', '0.6'])


def test_an_act_folder_saved_by_0_6_is_served_as_lerobot_0_4_predicts(folders):
    folder = folders['act', '0.6']
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    assert runtime.spec.chunk_length == 100
    assert runtime.source == (
        f'{folder} (saved by LeRobot 0.5 or later, dropped pretrained_revision; '
        'pretrained_backbone_weights not downloaded (model.safetensors holds the backbone))')
    sample = [observation(1)]
    chunk = served_chunk(runtime, sample)
    expected = lerobot_chunk(folders['act', '0.4'], sample)
    assert chunk.shape == expected.shape == (100, 6)
    print(f'ACT 0.6 folder: max |served - LeRobot 0.4.4| {np.abs(chunk - expected).max():.1e}')
    assert np.abs(chunk - expected).max() < TOLERANCE
    # The user's folder is read, never written: the mapped files live in a temporary copy.
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_an_act_folder_saved_by_0_6_exports_to_pt2(folders, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        export_main([str(folders['act', '0.6']), str(tmp_path), '--fps', '30'])
    assert exit_info.value.code == 0, capsys.readouterr().err
    runtime = load_runtime(RuntimeOptions(checkpoint=str(tmp_path / 'model.pt2')))
    assert runtime.kind == 'torch_export' and runtime.spec.chunk_length == 100
    sample = [observation(6)]
    expected = lerobot_chunk(folders['act', '0.4'], sample)
    assert np.abs(served_chunk(runtime, sample) - expected).max() < TOLERANCE


def test_diffusion_with_0_6_defaults_two_cameras_is_served_as_lerobot_0_4_predicts(
        folders, monkeypatch):
    folder = folders['diffusion', '0.6']
    config = json.loads((folder / 'config.json').read_text())
    assert (config['horizon'], config['n_action_steps'], config['pretrained_backbone_weights'],
            config['use_separate_rgb_encoder_per_camera'], config['use_group_norm']) == (
        64, 32, 'ResNet18_Weights.IMAGENET1K_V1', True, False)
    monkeypatch.setenv(SEED_VARIABLE, '5')
    runtime = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    assert 'dropped pretrained_revision, gradient_checkpointing' in runtime.source
    assert runtime.spec.chunk_length == 32
    assert [(f.name, f.history) for f in runtime.spec.features] == [
        ('observation.state', 2), (checkpoints.FRONT, 2), (WRIST, 2)]
    samples = [observation(2, [checkpoints.FRONT, WRIST]),
               observation(3, [checkpoints.FRONT, WRIST])]
    chunk = served_chunk(runtime, samples)
    expected = lerobot_chunk(folders['diffusion', '0.4'], samples, seed=5)
    assert chunk.shape == expected.shape == (32, 6)
    print(f'diffusion 0.6 folder: max |served - LeRobot 0.4.4| '
          f'{np.abs(chunk - expected).max():.1e}')
    assert np.abs(chunk - expected).max() < TOLERANCE
    # Each camera has its own encoder: the wrist frame matters.
    swapped = [(pose, {checkpoints.FRONT: frames[checkpoints.FRONT],
                       WRIST: 255 - frames[WRIST]}) for pose, frames in samples]
    assert np.abs(lerobot_chunk(folders['diffusion', '0.4'], swapped, seed=5) - expected
                  ).max() > 10 * TOLERANCE


def copy(folder, tmp_path, name):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=4))


def test_an_unknown_key_is_refused_naming_it_and_the_file(folders, tmp_path):
    folder = copy(folders['act', '0.6'], tmp_path, 'flash')
    edit_json(folder / 'config.json', lambda c: c.update(use_flash_attention=True))
    with pytest.raises(RuntimeLoadError, match=rf'{folder}/config.json: key '
                                               r"'use_flash_attention' is unknown to the "
                                               r'installed LeRobot \(act policy\)'):
        load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))


def test_an_unknown_processor_step_is_refused_by_name(folders, tmp_path):
    folder = copy(folders['diffusion', '0.6'], tmp_path, 'step')
    edit_json(folder / 'policy_preprocessor.json', lambda p: p['steps'].insert(
        1, {'registry_name': 'render_messages_processor', 'config': {}}))
    with pytest.raises(RuntimeLoadError, match=rf'{folder}/policy_preprocessor.json: step 1 '
                                               r"'render_messages_processor' is not a "
                                               r'processor step the installed LeRobot knows'):
        load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))


def rename_weight(folder, old_prefix, new_prefix):
    """Rewrite model.safetensors with the weights under ``old_prefix`` renamed."""
    from safetensors.torch import load_file, save_file
    path = folder / 'model.safetensors'
    weights = load_file(str(path))
    renamed = {(new_prefix + key[len(old_prefix):] if key.startswith(old_prefix) else key): value
               for key, value in weights.items()}
    assert renamed != weights
    save_file(renamed, str(path), metadata={'format': 'pt'})


@pytest.mark.parametrize('version', ['0.4', '0.6'])
def test_a_renamed_weight_is_refused_naming_it(folders, tmp_path, version):
    folder = copy(folders['act', version], tmp_path, 'renamed')
    rename_weight(folder, 'model.encoder_latent_input_proj.', 'model.latent_input_proj.')
    with pytest.raises(RuntimeLoadError) as error:
        load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    assert str(error.value) == (
        f'{folder}/model.safetensors does not fit the policy its config.json describes: '
        '2 weights of the policy are not in it (model.encoder_latent_input_proj.weight, '
        'model.encoder_latent_input_proj.bias); 2 weights in it are not in the policy '
        '(model.latent_input_proj.bias, model.latent_input_proj.weight). LeRobot would load '
        'it anyway and leave those weights random')


def test_the_0_4_keys_and_steps_of_the_pure_tests_are_the_installed_lerobots():
    # lerobot_0_6_files.py spells out LeRobot 0.4.4's config fields and processor steps for
    # the pure tests; they must be what the installed LeRobot really has.
    for kind, fields in files.FIELDS_0_4.items():
        assert sorted(config_fields(kind)) == sorted(fields), kind
    installed = {**known_steps('pi0'), **known_steps('pi05')}
    for name, arguments in files.STEPS_0_4.items():
        assert name in installed, name
        assert set(arguments) <= set(installed[name]), name
    assert 'relative_actions_processor' not in installed
