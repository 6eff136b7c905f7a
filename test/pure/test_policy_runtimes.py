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

"""Policy runtimes: the demo policy, TorchScript, torch.export, LeRobot, python (no ROS)."""

import dataclasses
import math
import sys
from types import SimpleNamespace

import model_fixtures as models
import numpy as np
import pytest
import torch

from remote_inference_py.policy_server.demo_policy import (
    DemoRuntime, loop_positions, red_centroid_x)
from remote_inference_py.policy_server.export import save_pt2
from remote_inference_py.policy_server.lerobot_import import LeRobotMissing
from remote_inference_py.policy_server.lerobot_runtime import spec_from_lerobot_config
from remote_inference_py.policy_server.loading import infer_policy_type, load_runtime
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import (
    PolicyRuntime, RuntimeLoadError, RuntimeOptions, warm_up, zero_inputs)
from remote_inference_py.robot.units import JointConverter

SO101 = 'so101-degrees-gripper-percent-v1'


def test_policy_type_from_the_checkpoint(tmp_path):
    assert infer_policy_type('') == 'demo'
    assert infer_policy_type('x/model.pt2') == 'torch_export'
    assert infer_policy_type('model.ts') == 'torchscript'
    assert infer_policy_type('lerobot/smolvla_base') == 'lerobot'
    (tmp_path / 'config.json').write_text('{}')
    assert infer_policy_type(str(tmp_path)) == 'lerobot'
    with pytest.raises(RuntimeLoadError, match="checkpoint '/nope/weights.bin' does not exist"):
        infer_policy_type('/nope/weights.bin')
    (tmp_path / 'weights.bin').write_bytes(b'')
    with pytest.raises(RuntimeLoadError, match='cannot tell the format'):
        infer_policy_type(str(tmp_path / 'weights.bin'))


# ---- the built-in demo policy --------------------------------------------------------------

def demo_chunk(runtime, radians, image=None):
    converter = JointConverter(runtime.spec.semantics, models.JOINTS)
    inputs = {'observation.state': converter.to_policy(np.asarray(radians))[None].astype(
        np.float32)}
    if image is not None:
        inputs['observation.images.front'] = image[None]
    return converter.to_si(runtime.infer(inputs, [''])[0])


def test_demo_is_deterministic_smooth_and_starts_where_the_arm_is():
    runtime = DemoRuntime()
    assert runtime.spec.semantics == SO101
    assert runtime.spec.chunk_length == 50 and runtime.spec.fps == 30.0
    pose = [0.2, -0.4, 0.5, 0.3, 0.1, 0.4]
    chunk = demo_chunk(runtime, pose)
    assert np.array_equal(chunk, demo_chunk(runtime, pose))
    assert chunk.shape == (50, 6)
    steps = np.abs(np.diff(np.vstack([pose, chunk]), axis=0))
    assert steps.max() < 0.06, 'more than 0.06 rad between 30 Hz steps'
    assert np.abs(chunk[0] - pose).max() < 0.06
    # It moves (plausibly, inside the SO-101's joint ranges) and responds to the state.
    assert np.abs(chunk[-1] - chunk[0]).max() > 0.1
    gripper = chunk[:, 5]
    assert np.all(np.abs(chunk[:, :5]) < 1.6) and np.all((gripper > -0.17) & (gripper < 1.74))
    assert not np.allclose(demo_chunk(runtime, [0.0] * 6), chunk)


def test_demo_continues_one_loop_across_chunks():
    runtime = DemoRuntime(semantics='si-radians-v1')
    pose = loop_positions(1.0)
    first = demo_chunk(runtime, pose)
    # Replanning from where the first chunk got to continues the same curve.
    second = demo_chunk(runtime, first[24])
    assert np.abs(second[:10] - first[25:35]).max() < 0.02


def test_demo_leans_toward_a_red_object_in_the_image():
    runtime = DemoRuntime(cameras=['front'])
    assert [f.name for f in runtime.spec.features] == ['observation.state',
                                                       'observation.images.front']
    right = np.zeros((3, 48, 64), np.float32)
    right[0, :, 48:] = 1.0
    left = right[:, :, ::-1].copy()
    assert red_centroid_x(right) > 0.5 and red_centroid_x(left) < -0.5
    assert red_centroid_x(np.full((3, 48, 64), 0.5, np.float32)) == 0.0
    pose = [0.0] * 6
    pan_right = demo_chunk(runtime, pose, right)[-1, 0]
    pan_left = demo_chunk(runtime, pose, left)[-1, 0]
    assert pan_right - pan_left > 0.2


def test_demo_batch_equals_single_rows():
    runtime = DemoRuntime()
    converter = JointConverter(SO101, models.JOINTS)
    poses = np.array([[0.1] * 6, [-0.3, 0.2, 0.0, 0.5, 0.0, 0.3]])
    batch = runtime.infer({'observation.state': converter.to_policy(poses).astype(np.float32)},
                          ['', ''])
    for row, pose in enumerate(poses):
        single = runtime.infer({'observation.state': converter.to_policy(pose)[None].astype(
            np.float32)}, [''])
        assert np.allclose(batch[row], single[0], atol=1e-4)
    assert warm_up(runtime, 2).batch_sizes == tuple(range(1, 17))
    assert warm_up(runtime, 2, 3).batch_sizes == (1, 2, 3)


# ---- TorchScript and torch.export ----------------------------------------------------------

def torch_output(model, inputs):
    with torch.no_grad():
        return model(*[torch.from_numpy(inputs[n]) for n in inputs]).numpy()


def test_torchscript_file_and_manifest(tmp_path):
    model = models.TinyPolicy()
    path = models.save_torchscript(tmp_path, model)
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path)))
    assert runtime.kind == 'torchscript' and runtime.spec.policy == 'tiny'
    report = warm_up(runtime, 2)
    assert report.iterations == 2 and report.batch_sizes == (1,)
    inputs = zero_inputs(runtime.spec, 1)
    inputs['observation.state'][:] = np.linspace(-1, 1, 6)
    assert np.allclose(runtime.infer(inputs, ['']), torch_output(model, inputs), atol=1e-6)


def test_torch_export_with_a_dynamic_batch(tmp_path):
    model = models.TinyPolicy()
    spec = spec_from_dict(models.manifest(max_batch_size=4))
    path = save_pt2(model, spec, tmp_path / 'tiny')
    assert path.name == 'tiny.pt2' and (tmp_path / 'tiny.json').is_file()
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path)))
    assert runtime.kind == 'torch_export' and runtime.max_batch_size == 4
    assert warm_up(runtime, 1).batch_sizes == (1, 2, 3, 4)
    rng = np.random.default_rng(3)
    inputs = {name: rng.standard_normal(value.shape).astype(np.float32)
              for name, value in zero_inputs(runtime.spec, 3).items()}
    batched = runtime.infer(inputs, [''] * 3)
    assert np.allclose(batched, torch_output(model, inputs), atol=1e-5)
    single = runtime.infer({n: v[1:2] for n, v in inputs.items()}, [''])
    assert np.allclose(batched[1], single[0], atol=1e-5)


def test_torch_export_with_a_static_batch_is_served_one_at_a_time(tmp_path):
    path = models.save_exported(tmp_path, max_batch_size=8)
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path), manifest=str(
        tmp_path / 'tiny.json')))
    assert runtime.max_batch_size == 1


def test_exported_input_shapes_are_checked_against_the_manifest(tmp_path):
    path = models.save_exported(tmp_path, model_image=(30, 40))
    with pytest.raises(RuntimeLoadError, match=r"expects input 'observation.images.front' of "
                                               r'shape \[1, 3, 24, 32\], the manifest '
                                               r'declares \[B, 3, 30, 40\]'):
        load_runtime(RuntimeOptions(checkpoint=str(path)))


@pytest.mark.parametrize('save', [models.save_torchscript, models.save_exported])
def test_action_dimension_mismatch_is_named(tmp_path, save):
    path = save(tmp_path, model=models.TinyPolicy(actions=7))
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path)))
    with pytest.raises(RuntimeLoadError, match=r'outputs 7 action values per step, but 6 '
                                               r'action names are declared'):
        warm_up(runtime, 1)


def test_chunk_length_mismatch_and_rejected_inputs_are_named(tmp_path):
    path = models.save_torchscript(tmp_path, steps=30)
    with pytest.raises(RuntimeLoadError, match=r'outputs chunks of 20 steps, but chunk_length '
                                               r'30 is declared'):
        warm_up(load_runtime(RuntimeOptions(checkpoint=str(path))), 1)
    path = models.save_torchscript(tmp_path, model_image=(4, 4))
    with pytest.raises(RuntimeLoadError, match=r'rejected the declared inputs '
                                               r'\(observation.state \[1, 6\], '
                                               r'observation.images.front \[1, 3, 4, 4\]\)'):
        warm_up(load_runtime(RuntimeOptions(checkpoint=str(path))), 1)


def test_missing_files_and_devices_are_named(tmp_path):
    with pytest.raises(RuntimeLoadError, match=r"checkpoint file '.*missing.pt2' does not "
                                               'exist'):
        load_runtime(RuntimeOptions(checkpoint=str(tmp_path / 'missing.pt2')))
    (tmp_path / 'lonely.pt').write_bytes(b'')
    with pytest.raises(RuntimeLoadError, match=r'no manifest for .*lonely.pt'):
        load_runtime(RuntimeOptions(checkpoint=str(tmp_path / 'lonely.pt')))
    path = models.save_torchscript(tmp_path)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeLoadError, match=r"device 'cuda' requested but "
                                                   r'torch.cuda.is_available\(\) is False'):
            load_runtime(RuntimeOptions(checkpoint=str(path), device='cuda'))
    with pytest.raises(RuntimeLoadError, match=r"device 'mps' is not available"):
        load_runtime(RuntimeOptions(checkpoint=str(path), device='mps'))
    with pytest.raises(RuntimeLoadError, match=r"device 'gpu' is not one of cpu, cuda"):
        load_runtime(RuntimeOptions(device='gpu'))
    (tmp_path / 'garbage.pt').write_bytes(b'not a model')
    (tmp_path / 'garbage.json').write_text((tmp_path / 'tiny.json').read_text())
    with pytest.raises(RuntimeLoadError, match=r'cannot load torchscript checkpoint '
                                               r'\S*garbage.pt'):
        load_runtime(RuntimeOptions(checkpoint=str(tmp_path / 'garbage.pt')))


def test_semantics_and_fps_parameters_must_match_the_policy(tmp_path):
    path = models.save_torchscript(tmp_path)
    with pytest.raises(RuntimeLoadError, match="parameter semantics is 'si-radians-v1' but "
                                               f"the policy declares '{SO101}'"):
        load_runtime(RuntimeOptions(checkpoint=str(path), semantics='si-radians-v1'))
    with pytest.raises(RuntimeLoadError, match='parameter fps is 50.0 Hz'):
        load_runtime(RuntimeOptions(checkpoint=str(path), fps=50.0))
    with pytest.raises(RuntimeLoadError, match="unknown semantics 'furlongs'"):
        load_runtime(RuntimeOptions(semantics='furlongs'))


def test_lerobot_without_lerobot_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'lerobot', None)     # as if it were not installed
    with pytest.raises(LeRobotMissing, match=r'needs the `lerobot` package, which is not '
                                             r'installed.*pip install --no-deps -r '
                                             r'requirements-lerobot.txt'):
        load_runtime(RuntimeOptions(policy_type='lerobot', checkpoint='lerobot/act_so101',
                                    fps=30.0))


def make_runtime(options):
    """Python runtime factory used by the test below: the demo at another rate."""
    runtime = DemoRuntime()
    runtime.spec = dataclasses.replace(runtime.spec, policy='from python')
    return runtime


def test_python_runtime_factory():
    runtime = load_runtime(RuntimeOptions(policy_type='python',
                                          checkpoint='test_policy_runtimes:make_runtime'))
    assert isinstance(runtime, PolicyRuntime) and runtime.spec.policy == 'from python'
    with pytest.raises(RuntimeLoadError, match="cannot load python policy 'nope:x'"):
        load_runtime(RuntimeOptions(policy_type='python', checkpoint='nope:x'))
    # One list of runtimes: the setting's choices, checked when the options are made.
    with pytest.raises(ValueError, match="parameter 'policy_type' is 'bogus'; expected one of "
                       'auto, demo, torchscript, torch_export, flow_matching, lerobot, python$'):
        RuntimeOptions(policy_type='bogus')
    assert math.isfinite(warm_up(runtime, 1).last_ms)


def test_a_lerobot_config_maps_onto_our_spec():
    # LeRobot's PolicyFeature: a FeatureType enum member and a shape; plain stand-ins here.
    def feature(kind, shape):
        return SimpleNamespace(type=SimpleNamespace(name=kind), shape=shape)

    inputs = {'observation.state': feature('STATE', (6,)),
              'observation.images.front': feature('VISUAL', (3, 96, 128))}
    spec = spec_from_lerobot_config(inputs, 6, 50, RuntimeOptions(fps=30.0), 'act')
    assert spec.policy == 'act' and spec.semantics == SO101 and spec.chunk_length == 50
    front = spec.features[1]
    assert front.shape == (96, 128, 3) and front.model_shape == (3, 96, 128)
    assert spec.action_joints == tuple(models.JOINTS) and spec.max_batch_size == 1
    with pytest.raises(RuntimeLoadError, match="set the parameter 'fps'"):
        spec_from_lerobot_config(inputs, 6, 50, RuntimeOptions(), 'act')
    with pytest.raises(RuntimeLoadError, match='outputs 7 action values'):
        spec_from_lerobot_config(inputs, 7, 50, RuntimeOptions(fps=30.0), 'act')
    with pytest.raises(RuntimeLoadError, match="type 'env' is not supported"):
        spec_from_lerobot_config({'x': feature('ENV', (3,))}, 6, 50, RuntimeOptions(fps=30.0))
