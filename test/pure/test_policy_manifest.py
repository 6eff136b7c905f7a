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

"""Manifest validation, normalization arithmetic and file lookup (no ROS, no torch)."""

import copy
import json

import numpy as np
import pytest
import yaml

from remote_inference_py.policy_server.manifest import (
    load_manifest, manifest_path_for, ManifestError, Normalization, save_manifest,
    spec_from_dict)
from remote_inference_py.robot.so101 import SO101_JOINT_NAMES

NAMES = ['shoulder_pan.pos', 'shoulder_lift.pos', 'elbow_flex.pos', 'wrist_flex.pos',
         'wrist_roll.pos', 'gripper.pos']
MANIFEST = {
    'format_version': 1,
    'policy': 'tiny',
    'semantics': 'so101-degrees-gripper-percent-v1',
    'fps': 30,
    'chunk_length': 20,
    'action': {'names': NAMES,
               'normalization': {'mode': 'mean_std', 'mean': [0.0] * 6, 'std': [10.0] * 6}},
    'features': [
        {'name': 'observation.state', 'kind': 'state', 'shape': [6], 'names': NAMES,
         'normalization': {'mode': 'min_max', 'min': [-90.0] * 6, 'max': [90.0] * 6}},
        {'name': 'observation.images.front', 'kind': 'rgb', 'shape': [480, 640, 3],
         'model_shape': [3, 96, 128],
         'normalization': {'mode': 'mean_std', 'mean': [[[0.5]], [[0.4]], [[0.3]]],
                           'std': [[[0.2]], [[0.2]], [[0.2]]]}},
    ],
}


def with_changes(path, value):
    data = copy.deepcopy(MANIFEST)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


def test_valid_manifest_and_defaults():
    spec = spec_from_dict(MANIFEST)
    assert spec.action_joints == SO101_JOINT_NAMES
    state, image = spec.features
    assert state.semantics == 'so101-degrees-gripper-percent-v1'   # inherited
    assert state.dtype == 'float32' and image.dtype == 'uint8'
    assert image.model_size == (96, 128) and image.input_shape == (3, 96, 128)
    defaulted = spec_from_dict(with_changes(['features', 1, 'model_shape'], None))
    assert defaulted.features[1].model_shape == (3, 480, 640)


@pytest.mark.parametrize('suffix', ['.json', '.yaml'])
def test_save_and_load_round_trip(tmp_path, suffix):
    spec = spec_from_dict(MANIFEST)
    path = save_manifest(spec, tmp_path / f'model{suffix}')
    loaded = load_manifest(path)
    assert loaded.to_dict() == spec.to_dict()
    assert manifest_path_for(tmp_path / 'model.pt2') == path


def test_manifest_lookup_names_the_candidates(tmp_path):
    with pytest.raises(ManifestError, match=r'no manifest for .*model.pt2.*model.json.*'
                                            r'model.yaml'):
        manifest_path_for(tmp_path / 'model.pt2')
    with pytest.raises(ManifestError, match='does not exist'):
        load_manifest(tmp_path / 'nope.json')
    (tmp_path / 'broken.json').write_text('{"fps": ')
    with pytest.raises(ManifestError, match=r"broken.json' is not valid JSON"):
        load_manifest(tmp_path / 'broken.json')
    (tmp_path / 'broken.yaml').write_text(yaml.safe_dump({'fps': 30}))
    with pytest.raises(ManifestError, match=r"broken.yaml'.*semantics"):
        load_manifest(tmp_path / 'broken.yaml')


@pytest.mark.parametrize('path, value, message', [
    (['semantics'], 'so100-v9', "unknown semantics 'so100-v9'; known semantics"),
    (['semantics'], None, 'missing "semantics"'),
    (['fps'], 0, 'fps must be in'),
    (['chunk_length'], 0, 'chunk_length must be an integer >= 1'),
    (['format_version'], 2, 'format_version 2 is not supported'),
    (['action', 'names'], NAMES[:5] + ['shoulder_pan'], "name 'shoulder_pan' appears twice"),
    (['action', 'normalization', 'std'], None, "normalization 'mean_std' needs 'std'"),
    (['action', 'normalization', 'std'], [1.0] * 5, 'does not broadcast to [6]'),
    (['features', 0, 'kind'], 'lidar', "kind 'lidar' is not one of"),
    (['features', 0, 'names'], NAMES[:5], '5 names for shape [6]'),
    (['features', 0, 'semantics'], 'bogus', "unknown semantics 'bogus'"),
    (['features', 1, 'shape'], [480, 640], 'shape of an image must be'),
    (['features', 1, 'model_shape'], [1, 96, 128], 'model_shape [1, 96, 128] must be'),
    (['features', 1, 'layout'], 'nchw', "layout 'nchw' is not one of"),
    (['features', 1, 'dtype'], 'float32', 'dtype of an rgb feature must be uint8'),
    (['features', 1, 'depth_range_m'], [0.1, 2.0], 'depth_range_m applies to depth'),
    (['features', 1, 'normalization', 'mean'], [0.5, 0.4], 'does not broadcast'),
    (['features', 1, 'history'], 0, 'history must be an integer >= 1'),
    (['features', 1, 'model_dtype'], 'float16', "model_dtype 'float16' is not one of float32, "
                                                'uint8 (rgb features only)'),
    (['features', 1, 'model_dtype'], 'uint8', 'a model_dtype uint8 input is not normalized by '
                                              'the server'),
])
def test_invalid_manifests_are_named(path, value, message):
    with pytest.raises(ManifestError) as error:
        spec_from_dict(with_changes(path, value), 'manifest x.json')
    assert message in str(error.value)
    assert str(error.value).startswith('manifest x.json: ')
    if path[0] == 'features':
        assert 'features[' in str(error.value)


def test_uint8_model_input_is_an_rgb_option_kept_by_the_manifest(tmp_path):
    data = with_changes(['features', 1, 'normalization'], None)
    data['features'][1]['model_dtype'] = 'uint8'
    spec = spec_from_dict(data)
    assert spec.features[1].model_dtype == 'uint8' and spec.features[0].model_dtype == 'float32'
    assert load_manifest(save_manifest(spec, tmp_path / 'm.json')).features[1].model_dtype == \
        'uint8'
    assert 'model_dtype' not in spec_from_dict(MANIFEST).features[1].to_dict()
    depth = {'name': 'observation.images.depth', 'kind': 'depth', 'shape': [4, 4, 1],
             'model_dtype': 'uint8'}
    data['features'].append(depth)
    with pytest.raises(ManifestError, match="model_dtype 'uint8' is not one of"):
        spec_from_dict(data)


def test_duplicate_feature_is_refused():
    data = copy.deepcopy(MANIFEST)
    data['features'].append(copy.deepcopy(data['features'][0]))
    with pytest.raises(ManifestError, match="feature 'observation.state' is declared twice"):
        spec_from_dict(data)


def test_normalization_matches_lerobot_formulas():
    # mean_std: (x - mean) / (std + 1e-8); min_max: (x - min) / (max - min + 1e-8) * 2 - 1.
    mean_std = Normalization.from_dict({'mode': 'mean_std', 'mean': [1.0, -2.0],
                                        'std': [2.0, 0.5]}, 'x')
    assert np.allclose(mean_std.normalize(np.array([5.0, -1.0])), [2.0, 2.0])
    min_max = Normalization.from_dict({'mode': 'min_max', 'min': [0.0, -10.0],
                                       'max': [100.0, 10.0]}, 'x')
    assert np.allclose(min_max.normalize(np.array([25.0, 10.0])), [-0.5, 1.0])
    values = np.array([[3.0, 7.0], [-4.0, 0.25]])
    for normalization in (mean_std, min_max, Normalization()):
        assert np.allclose(normalization.unnormalize(normalization.normalize(values)), values)
    with pytest.raises(ManifestError, match="normalization mode 'zscore' is not one of"):
        Normalization.from_dict({'mode': 'zscore'}, 'x')
    with pytest.raises(ManifestError, match='non-finite'):
        Normalization.from_dict({'mode': 'mean_std', 'mean': [float('nan')], 'std': [1]}, 'x')


def test_json_text_is_plain_data(tmp_path):
    path = save_manifest(spec_from_dict(MANIFEST), tmp_path / 'm.json')
    data = json.loads(path.read_text())
    assert data['action']['normalization']['std'] == [10.0] * 6
    assert data['features'][1]['normalization']['mean'] == [[[0.5]], [[0.4]], [[0.3]]]
