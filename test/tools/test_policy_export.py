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

"""export_lerobot's manifest part, safetensors reading and the save helpers (lerobot not used)."""

import json
import struct
import sys

import model_fixtures as models
import numpy as np
import pytest

from remote_inference_py.policy_server.export import (
    find_stats, main, manifest_from_lerobot, read_safetensors, save_torchscript)
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.manifest import ManifestError, spec_from_dict
from remote_inference_py.policy_server.runtimes import RuntimeOptions, warm_up

# The shape of a LeRobot ACT config.json (SO-101, one camera), trimmed to what we read.
ACT_CONFIG = {
    'type': 'act', 'n_obs_steps': 1, 'chunk_size': 100, 'n_action_steps': 50,
    'normalization_mapping': {'VISUAL': 'MEAN_STD', 'STATE': 'MEAN_STD', 'ACTION': 'MEAN_STD'},
    'input_features': {
        'observation.state': {'type': 'STATE', 'shape': [6]},
        'observation.images.front': {'type': 'VISUAL', 'shape': [3, 480, 640]}},
    'output_features': {'action': {'type': 'ACTION', 'shape': [6]}},
}


def write_safetensors(path, tensors):
    """Write the safetensors format by hand: 8-byte header size, JSON header, raw data."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype='<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(array.shape),
                        'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header['__metadata__'] = {'format': 'pt'}
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def stats():
    return {
        'observation.state.mean': np.arange(6, dtype=np.float32),
        'observation.state.std': np.full(6, 2.0, np.float32),
        'observation.images.front.mean': np.array([[[0.485]], [[0.456]], [[0.406]]],
                                                  np.float32),
        'observation.images.front.std': np.array([[[0.229]], [[0.224]], [[0.225]]],
                                                 np.float32),
        'action.mean': np.full(6, -1.0, np.float32),
        'action.std': np.full(6, 3.0, np.float32),
    }


def test_read_safetensors(tmp_path):
    path = tmp_path / 'policy_preprocessor_step_3_normalizer_processor.safetensors'
    write_safetensors(path, stats())
    loaded = read_safetensors(path)
    assert set(loaded) == set(stats())
    assert np.array_equal(loaded['observation.images.front.std'],
                          stats()['observation.images.front.std'])
    assert find_stats(tmp_path)['action.std'].tolist() == [3.0] * 6
    with pytest.raises(ManifestError, match='no normalizer statistics'):
        find_stats(tmp_path / 'nothing')
    (tmp_path / 'bad.safetensors').write_bytes(b'\x05\x00')
    with pytest.raises(ValueError, match='not a safetensors file'):
        read_safetensors(tmp_path / 'bad.safetensors')


def test_manifest_from_a_lerobot_act_config():
    spec = manifest_from_lerobot(ACT_CONFIG, stats(), fps=30.0)
    # What predict_action_chunk returns: chunk_size, not n_action_steps.
    assert spec.policy == 'act' and spec.chunk_length == 100 and spec.fps == 30.0
    assert spec.semantics == 'so101-degrees-gripper-percent-v1'
    state, image = spec.features
    assert state.names[0] == 'shoulder_pan.pos' and state.normalization.mode == 'mean_std'
    assert image.shape == (480, 640, 3) and image.model_shape == (3, 480, 640)
    assert image.normalization.mean.shape == (3, 1, 1)
    assert spec.action_normalization.std.tolist() == [3.0] * 6
    # Round trip through the manifest format.
    assert spec_from_dict(spec.to_dict()).to_dict() == spec.to_dict()
    camera = manifest_from_lerobot(ACT_CONFIG, stats(), fps=30.0,
                                   image_shapes={'observation.images.front': [720, 1280, 3]})
    assert camera.features[1].shape == (720, 1280, 3)


def test_manifest_of_a_diffusion_config_declares_its_history_and_chunk():
    config = json.loads(json.dumps(ACT_CONFIG))
    config.update(type='diffusion', n_obs_steps=2, horizon=16, n_action_steps=8)
    spec = manifest_from_lerobot(config, stats(), fps=30.0)
    assert spec.chunk_length == 8 and [f.history for f in spec.features] == [2, 2]
    assert spec.features[1].input_shape == (2, 3, 480, 640)


def test_missing_statistics_and_odd_features_are_named():
    partial = stats()
    del partial['action.std']
    with pytest.raises(ManifestError, match='statistics action.std are missing'):
        manifest_from_lerobot(ACT_CONFIG, partial, fps=30.0)
    config = json.loads(json.dumps(ACT_CONFIG))
    config['input_features']['observation.environment_state'] = {'type': 'ENV',
                                                                 'shape': [4]}
    with pytest.raises(ManifestError, match="'observation.environment_state' of type 'ENV'"):
        manifest_from_lerobot(config, stats(), fps=30.0)


def test_export_lerobot_without_lerobot_says_what_to_install(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'lerobot', None)     # as if it were not installed
    with pytest.raises(SystemExit) as exit_info:
        main(['lerobot/act_so101', str(tmp_path / 'out'), '--fps', '30'])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert 'export_lerobot needs the `lerobot` package' in error
    assert 'pip install --no-deps -r requirements-lerobot.txt' in error


def test_save_torchscript_helper_round_trip(tmp_path):
    spec = spec_from_dict(models.manifest())
    path = save_torchscript(models.TinyPolicy(), spec, tmp_path / 'policy')
    assert path.name == 'policy.pt' and (tmp_path / 'policy.json').is_file()
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path)))
    assert warm_up(runtime, 1).iterations == 1
