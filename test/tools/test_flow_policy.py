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
The flow-matching runtime on exported velocity fields, and the flow policy's training code.

Most tests serve an analytic field: the exact flow of Gaussian chunks (mean = the state,
``VARIANCE`` per value, values independent), exported to ``.pt2`` like a trained one. Its
guided samples can be reasoned about: with every value independent, guidance moves the plan's
rows and leaves the rows past the execution horizon exactly as unguided.
"""

import dataclasses
import json
import pathlib
import re

from core_fixtures import serve_one
import numpy as np
import pytest

from remote_inference_py.contract.check import AdmitRequest
from remote_inference_py.evaluation import flow
from remote_inference_py.evaluation.learned import IMAGE_FEATURE
from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.core import PolicyServerCore, Request
from remote_inference_py.policy_server.flow_runtime import (
    FlowMatchingRuntime, StepGraphs, TracedEncoder)
from remote_inference_py.policy_server.images import RawImage
from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import (
    Prefix, RuntimeLoadError, RuntimeOptions, warm_up, zero_inputs)
from remote_inference_py.policy_server.sampler import SamplerSettings

torch = pytest.importorskip('torch')

VARIANCE = 1.0
STEPS, JOINTS = 50, 6
MS = 1_000_000


class GaussianField(torch.nn.Module):
    """The exact velocity of chunks ~ N(state, VARIANCE) per value (rectified flow)."""

    def forward(self, x_t, t, state, image):
        mean = state[:, None, :] + 0.0 * image.mean(dim=(1, 2, 3))[:, None, None]
        t = t[:, None, None]
        gain = t * VARIANCE / (t * t * VARIANCE + (1 - t) ** 2)
        clean = mean + gain * (x_t - t * mean)
        return (clean - x_t) / torch.clamp(1 - t, min=0.05)


def write_policy(directory, sampler=None, max_batch_size=2, module=None):
    """Export ``module`` (default GaussianField) with a flow manifest; return the .pt2 path."""
    data = flow.flow_spec_dict((96, 96), np.zeros(JOINTS), np.ones(JOINTS),
                               SamplerSettings(**(sampler or {})), STEPS, max_batch_size)
    spec = spec_from_dict(data)
    features = tuple(torch.from_numpy(v) for v in zero_inputs(spec, 2).values())
    inputs = (torch.zeros(2, STEPS, JOINTS), torch.full((2,), 0.5)) + features
    batch = torch.export.Dim('batch', min=1, max=max_batch_size)
    program = torch.export.export((module or GaussianField()).eval(), inputs,
                                  dynamic_shapes=tuple({0: batch} for _ in inputs),
                                  strict=False)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / 'model.pt2'
    torch.export.save(program, str(path))
    path.with_suffix('.json').write_text(json.dumps(data))
    return path


@pytest.fixture(scope='module')
def policy_path(tmp_path_factory):
    return write_policy(tmp_path_factory.mktemp('flow'),
                        {'steps': 10, 'execution_horizon': 25, 'prefix_schedule': 'linear',
                         'max_guidance_weight': 10.0, 'noise_seed': 5})


def load(path, **options):
    return load_runtime(RuntimeOptions(checkpoint=str(path), **options))


def inputs(runtime, batch=1, state=0.0):
    values = zero_inputs(runtime.spec, batch)
    values['observation.state'][:] = state
    return values


def test_auto_loads_the_flow_runtime_and_warm_up_passes(policy_path):
    runtime = load(policy_path)
    assert isinstance(runtime, FlowMatchingRuntime) and runtime.supports_prefix
    assert runtime.kind == 'flow_matching' and runtime.max_batch_size == 2
    assert runtime.sampler == SamplerSettings(10, 25, 'linear', 10.0, 5)
    report = warm_up(runtime, 2)
    assert report.batch_sizes == (1, 2)
    assert isinstance(load(policy_path.parent, policy_type='flow_matching'),
                      FlowMatchingRuntime)


def test_plain_sampling_is_deterministic_per_seed_and_follows_the_field(policy_path):
    runtime = load(policy_path)
    values = inputs(runtime, state=2.0)
    runtime.reset(11)
    first = runtime.infer(values, [''])
    second = runtime.infer(values, [''])
    runtime.reset(11)
    again = runtime.infer(values, [''])
    runtime.reset(12)
    other = runtime.infer(values, [''])
    assert first.shape == (1, STEPS, JOINTS) and first.dtype == np.float32
    np.testing.assert_array_equal(first, again)
    assert np.abs(first - second).mean() > 0.1 and np.abs(first - other).mean() > 0.1
    # Samples of N(2, 1): the mean and spread of 300 values.
    assert abs(first.mean() - 2.0) < 0.3 and 0.7 < first.std() < 1.3
    fresh = load(policy_path)   # a new runtime starts from noise_seed
    reloaded = load(policy_path)
    np.testing.assert_array_equal(fresh.infer(values, ['']), reloaded.infer(values, ['']))


def test_guidance_pulls_the_plan_rows_and_leaves_the_rest(policy_path):
    runtime = load(policy_path)
    values = inputs(runtime)
    plan = np.full((40, JOINTS), 3.0, dtype=np.float32)
    runtime.reset(1)
    plain = runtime.infer(values, [''])[0]
    runtime.reset(1)
    guided = runtime.infer(values, [''], [Prefix(plan, frozen_steps=8)])[0]
    plain_error = np.abs(plain[:8] - 3.0).mean()
    guided_error = np.abs(guided[:8] - 3.0).mean()
    assert plain_error > 2.0
    assert guided_error < 0.3 * plain_error, (guided_error, plain_error)
    # Fading rows move part of the way; rows from the horizon on are not forced.
    assert np.abs(guided[8:25] - 3.0).mean() < np.abs(plain[8:25] - 3.0).mean()
    np.testing.assert_allclose(guided[25:], plain[25:], atol=1e-5)
    assert np.abs(guided[25:] - 3.0).mean() > 2.0


def test_rows_are_guided_independently_within_a_batch(policy_path):
    runtime = load(policy_path)
    values = inputs(runtime, batch=2)
    plan = np.full((50, JOINTS), -3.0, dtype=np.float32)
    runtime.reset(2)
    plain = runtime.infer(values, ['', ''])
    runtime.reset(2)
    mixed = runtime.infer(values, ['', ''], [None, Prefix(plan, 5)])
    np.testing.assert_allclose(mixed[0], plain[0], atol=1e-5)
    assert np.abs(mixed[1, :5] + 3.0).mean() < 0.3 * np.abs(plain[1, :5] + 3.0).mean()
    with pytest.raises(ValueError, match='1 prefixes for a batch of 2'):
        runtime.infer(values, ['', ''], [Prefix(plan, 5)])
    with pytest.raises(ValueError, match=r'expected \[steps, 6\]'):
        runtime.infer(values, ['', ''], [None, Prefix(plan[:, :3], 5)])


def test_parameters_override_the_manifest(policy_path):
    runtime = load(policy_path, flow_steps=3, rtc_execution_horizon=10,
                   rtc_prefix_schedule='zeros', rtc_max_guidance_weight=2.0)
    assert runtime.sampler == SamplerSettings(3, 10, 'zeros', 2.0, 5)
    plan = np.full((50, JOINTS), 3.0, dtype=np.float32)
    runtime.reset(1)
    guided = runtime.infer(inputs(runtime), [''], [Prefix(plan, 4)])[0]
    runtime.reset(1)
    plain = runtime.infer(inputs(runtime), [''])[0]
    np.testing.assert_allclose(guided[4:], plain[4:], atol=1e-5)   # zeros: frozen rows only


def test_bad_sampler_fields_and_parameters_are_named(tmp_path, policy_path):
    data = json.loads(policy_path.with_suffix('.json').read_text())
    for field, value in (('steps', 0), ('prefix_schedule', 'cosine'),
                         ('max_guidance_weight', -1), ('execution_horizon', 51)):
        bad = tmp_path / field / 'model.pt2'
        bad.parent.mkdir()
        bad.write_bytes(policy_path.read_bytes())
        bad.with_suffix('.json').write_text(json.dumps(
            {**data, 'sampler': {**data['sampler'], field: value}}))
        with pytest.raises(RuntimeLoadError, match=f'sampler.{field}'):
            load(bad)
    with pytest.raises(RuntimeLoadError, match="parameter 'rtc_execution_horizon'"):
        load(policy_path, rtc_execution_horizon=60)
    with pytest.raises(ValueError, match="parameter 'rtc_prefix_schedule'"):
        load(policy_path, rtc_prefix_schedule='cosine')
    with pytest.raises(RuntimeLoadError, match='use policy_type flow_matching'):
        load(policy_path, policy_type='torch_export')


def test_a_chunk_model_is_not_a_velocity_field(tmp_path, policy_path):
    data = json.loads(policy_path.with_suffix('.json').read_text())
    path = tmp_path / 'model.pt2'
    path.write_bytes(policy_path.read_bytes())
    path.with_suffix('.json').write_text(json.dumps({**data, 'policy': 'act'}))
    with pytest.raises(RuntimeLoadError, match="declares policy 'act', not 'flow_matching'"):
        load(path, policy_type='flow_matching')

    class ChunkModel(torch.nn.Module):
        def forward(self, state, image):
            return state[:, None, :].expand(-1, STEPS, -1)

    spec = spec_from_dict({**data, 'max_batch_size': 1})
    program = torch.export.export(ChunkModel(), tuple(
        torch.from_numpy(v) for v in zero_inputs(spec, 1).values()), strict=False)
    torch.export.save(program, str(path))
    path.with_suffix('.json').write_text(json.dumps(data))
    with pytest.raises(RuntimeLoadError, match='takes 2 inputs but 4 are expected'):
        load(path)


def test_policy_server_core_round_trip(policy_path):
    runtime = load(policy_path)
    core = PolicyServerCore(ServerConfig(deployment='so101', max_batch_size=2), runtime)
    assert 'rtc' in core.contract.merge_modes
    contract = core.contract
    result = core.admit('', AdmitRequest(
        protocol_version=contract.protocol_version, client_name='/executor',
        deployment=contract.deployment, semantics=contract.semantics,
        action_names=contract.action_names, action_rate=contract.action_rate,
        features=contract.features, merge_mode='aligned', hardware_position_hold=True))
    assert result.success, result.message
    core.on_joint_states('', 1000 * MS, list(runtime.spec.action_joints), [0.5] * JOINTS)
    image = np.full((96, 96, 3), 100, dtype=np.uint8)
    assert core.on_image('', IMAGE_FEATURE, 1000 * MS,
                         RawImage('rgb8', 96, 96, 96 * 3, image.tobytes())) is None
    assert core.on_request(Request('', result.session_id, 1, 900 * MS)) == []
    [answer] = serve_one(core)
    assert answer.error == '', answer.error
    assert answer.positions.shape == (STEPS, JOINTS) and np.all(np.isfinite(answer.positions))
    # Identity action statistics: radians = normalized values ~ N(state 0.5, 1).
    assert abs(float(answer.positions.mean()) - 0.5) < 0.3


def test_train_export_and_serve_a_tiny_flow_policy(tmp_path):
    rng = np.random.default_rng(0)
    count = 48
    states = rng.normal(0.0, 0.3, (count, JOINTS)).astype(np.float32)
    moves = np.cumsum(rng.normal(0.0, 0.01, (count, STEPS, JOINTS)), axis=1)
    chunks = (states[:, None, :] + moves).astype(np.float32)
    frames = rng.integers(0, 255, (count, 64, 64, 3), dtype=np.uint8)
    dataset = tmp_path / 'demonstrations.npz'
    np.savez(dataset, frames=frames, states=states, chunks=chunks,
             episodes=np.zeros(count), image_size=np.array([96, 96]))
    mean, std = flow.action_statistics(states, chunks)
    np.testing.assert_allclose(mean, chunks.reshape(-1, JOINTS).mean(axis=0), rtol=1e-5)
    assert np.all(std < 0.2), 'std measures moves around the state, not the poses'
    settings = flow.FlowTrainSettings(epochs=2, batch_size=16, noise_draws=2)
    model, image_size, (mean, std), history = flow.train_flow(
        dataset, settings, progress=lambda text: None)
    assert image_size == (96, 96) and len(history) == 2 and np.all(np.isfinite(history))
    path = flow.export_flow(model, image_size, mean, std, tmp_path / 'out',
                            SamplerSettings(steps=4, noise_seed=3), max_batch_size=2)
    manifest = json.loads(path.with_suffix('.json').read_text())
    assert manifest['policy'] == 'flow_matching' and manifest['sampler']['steps'] == 4
    assert manifest['action']['normalization']['mode'] == 'mean_std'
    runtime = load(path)
    assert isinstance(runtime, FlowMatchingRuntime)
    warm_up(runtime, 1)
    # The exported module is differentiable in x_t: guidance changes the plan rows.
    values = zero_inputs(runtime.spec, 1)
    values['observation.state'][:] = states[0]
    runtime.reset(0)
    plain = runtime.infer(values, [''])
    plan = runtime.spec.action_normalization.normalize(chunks[0].astype(np.float64) + 0.5)
    runtime.reset(0)
    guided = runtime.infer(values, [''], [Prefix(plan.astype(np.float32), 10)])
    assert np.abs(guided - plain)[0, :10].mean() > 1e-3
    with pytest.raises(ValueError, match='steps'):
        dataclasses.replace(SamplerSettings(), steps=0).check()
    # Training can continue from an exported model's weights.
    resumed, _, (resumed_mean, _), _ = flow.train_flow(
        dataset, dataclasses.replace(settings, epochs=0), progress=lambda text: None, init=path)
    np.testing.assert_allclose(resumed_mean, mean)
    for name, value in model.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name


def test_the_encoder_of_a_trained_cnn_is_copied_frozen_and_only_the_head_trains(tmp_path):
    from remote_inference_py.evaluation import learned
    rng = np.random.default_rng(1)
    count = 32
    states = rng.normal(0.0, 0.3, (count, JOINTS)).astype(np.float32)
    chunks = (states[:, None, :] + np.cumsum(rng.normal(0.0, 0.01, (count, STEPS, JOINTS)),
                                             axis=1)).astype(np.float32)
    dataset = tmp_path / 'demonstrations.npz'
    np.savez(dataset, frames=rng.integers(0, 255, (count, 64, 64, 3), dtype=np.uint8),
             states=states, chunks=chunks, episodes=np.zeros(count),
             image_size=np.array([96, 96]))
    cnn = learned.make_model(STEPS, JOINTS)
    cnn_path = learned.export(cnn, (96, 96), tmp_path / 'cnn')
    settings = flow.FlowTrainSettings(epochs=2, batch_size=16, noise_draws=1, hidden=24)
    model, *_ = flow.train_flow(dataset, settings, progress=lambda text: None,
                                encoder_from=cnn_path)
    assert model.head[0].out_features == 24 and model.head[-1].in_features == 24
    for name, value in cnn.encoder.state_dict().items():
        assert torch.equal(model.encoder.state_dict()[name], value), name
    assert not any(p.requires_grad for p in model.encoder.parameters())
    other = tmp_path / 'linear.pt2'
    torch.export.save(torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),)),
                      str(other))
    with pytest.raises(ValueError, match='has no encoder weights'):
        flow.train_flow(dataset, settings, progress=lambda text: None, encoder_from=other)


def tiny_flow_export(directory, seed=0, **sampler):
    """Export a small flow network (random weights) with its encoder/head split."""
    torch.manual_seed(seed)
    mean, std = np.zeros(JOINTS), np.full(JOINTS, 0.1)
    model = flow.make_flow_model(mean, std, STEPS, channels=4, keypoints=4, hidden=32)
    return flow.export_flow(model, (96, 96), mean, std, directory,
                            SamplerSettings(**sampler), max_batch_size=2)


class Counting:
    """Call ``module`` and count the calls."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def __call__(self, *args):
        self.calls += 1
        return self.module(*args)


@pytest.fixture(scope='module')
def split_exports(tmp_path_factory):
    """Two tiny flow exports with different weights (6 steps, horizon 20)."""
    root = tmp_path_factory.mktemp('split')
    return [tiny_flow_export(root / name, seed, steps=6, execution_horizon=20, noise_seed=2)
            for seed, name in enumerate('ab')]


def test_the_split_encodes_once_per_chunk_and_samples_the_same_chunks(split_exports):
    path = split_exports[0]
    manifest = json.loads(path.with_suffix('.json').read_text())
    assert manifest['split'] == {'encoder': 'model.encoder.pt2', 'head': 'model.head.pt2'}
    options = RuntimeOptions(checkpoint=str(path))
    # Before: model.pt2 at every step, op by op; the split op by op; the split traced; now
    # (the default): the split's head in numpy, its backward pass written by hand.
    whole = FlowMatchingRuntime.load(options, use_split=False, trace=False, by_hand=False)
    untraced = FlowMatchingRuntime.load(options, trace=False, by_hand=False)
    split = FlowMatchingRuntime.load(options, by_hand=False)
    hand = load(path)
    assert whole.encoder is None and split.encoder is not None
    assert whole.steps is None and untraced.steps is None
    assert split.steps is not None and split.trace_error == ''
    assert (whole.hand, split.hand) == (None, None)
    assert hand.hand is not None and hand.hand_error == '' and hand.steps is None
    assert hand.traced_encoder is not None and hand.encoder_trace_error == ''
    hand.hand.velocity = Counting(hand.hand.velocity)
    encoder_graphs = hand.traced_encoder.graphs
    hand.traced_encoder = Counting(hand.traced_encoder)
    untraced.encoder, untraced.head = Counting(untraced.encoder), Counting(untraced.head)
    split.encoder, split.steps.field = Counting(split.encoder), Counting(split.steps.field)
    split.steps.velocity = Counting(split.steps.velocity)
    rng = np.random.default_rng(3)
    values = zero_inputs(split.spec, 2)
    values[IMAGE_FEATURE][:] = rng.integers(0, 256, values[IMAGE_FEATURE].shape)
    values['observation.state'][:] = rng.normal(0.0, 0.3, (2, JOINTS))
    plan = rng.normal(0.0, 1.0, (STEPS, JOINTS)).astype(np.float32)
    for prefixes in (None, [Prefix(plan, 5), None], [Prefix(plan, 0), Prefix(plan[:12], 3)]):
        chunks = []
        for runtime in (whole, untraced, split, hand):
            runtime.reset(7)
            chunks.append(runtime.infer(values, ['', ''], prefixes))
        for chunk in chunks[1:]:
            np.testing.assert_allclose(chunk, chunks[0], rtol=0, atol=1e-5)
        assert np.abs(chunks[0]).max() > 0.1   # a chunk, not zeros
    # Three chunks (batch of 2): the image encoded once per chunk, the head at every step.
    assert (untraced.encoder.calls, untraced.head.calls) == (3, 3 * 6)
    # Traced: a graph call per step; the head module itself ran only to trace the two new
    # shapes (plain and guided at batch 2; batch 1 was traced at load).
    assert (split.encoder.calls, split.steps.velocity.calls) == (3, 3 * 6)
    assert split.steps.field.calls == 2
    assert sorted((key[0], key[1][0]) for key in split.steps.graphs) == [
        ('guided', 1), ('guided', 2), ('plain', 1), ('plain', 2)]
    # The numpy head: the encoder once per chunk, the hand-written step at every Euler step.
    # (its encoder a graph traced per batch size: 1 at load, 2 at the first chunk).
    assert (hand.traced_encoder.calls, hand.hand.velocity.calls) == (3, 3 * 6)
    assert sorted(key[0][0][0] for key in encoder_graphs) == [1, 2]
    # Guidance reaches through the head alone: a guided chunk differs from a plain one.
    for runtime in (split, hand):
        runtime.reset(7)
        guided = runtime.infer(values, ['', ''], [Prefix(plan, 5), None])
        runtime.reset(7)
        plain = runtime.infer(values, ['', ''])
        assert np.abs(guided - plain)[0, :5].mean() > 1e-3
        np.testing.assert_array_equal(guided[1], plain[1])


def test_the_numpy_head_is_used_only_when_it_equals_the_exported_head(
        split_exports, monkeypatch):
    from remote_inference_py.policy_server import flow_head, flow_runtime
    reference = FlowMatchingRuntime.load(RuntimeOptions(checkpoint=str(split_exports[0])),
                                         trace=False, by_hand=False)
    spec, probe = reference.spec, reference._probe()

    def runtime(split=(reference.encoder, reference.head)):
        """A runtime of the same export, its steps untraced when the numpy head is refused."""
        return FlowMatchingRuntime(spec, reference.model, reference.torch_device, 'probe',
                                   reference.sampler, split, trace=False)

    def check(head=reference.head):
        return flow_runtime.checked_hand_head(head, spec, probe)

    checked = check()[0].checked_difference
    assert 0 < checked < flow_runtime.HAND_TOLERANCE
    # The tolerance's edge: the largest difference of the check passes, just below it not.
    monkeypatch.setattr(flow_runtime, 'HAND_TOLERANCE', checked)
    assert check()[0] is not None
    monkeypatch.setattr(flow_runtime, 'HAND_TOLERANCE', checked * 0.999)
    hand, reason = check()
    assert hand is None and re.fullmatch(
        r"the numpy head's (plain|guided) step at t = \S+ differs from the exported head by "
        r'\S+ \(relative\) > \S+', reason), reason
    monkeypatch.undo()
    # A wrong activation derivative (the backward pass only): refused at load, and the
    # runtime samples with the exported head, the same chunks as without the numpy head.
    monkeypatch.setattr(flow_head, '_silu_derivative', lambda h, sigma: sigma)
    broken = runtime()
    assert broken.hand is None
    assert broken.hand_error.startswith("the numpy head's guided step at t = 0.0 differs")
    values = zero_inputs(spec, 1)
    plan = np.linspace(-1.0, 1.0, STEPS * JOINTS, dtype=np.float32).reshape(STEPS, JOINTS)
    chunks = []
    for sampler in (reference, broken):
        sampler.reset(3)
        chunks.append(sampler.infer(values, [''], [Prefix(plan, 4)]))
    np.testing.assert_array_equal(chunks[1], chunks[0])
    # A head that is not the flow policy's MLP, and an export without a split, are named.
    assert runtime(None).hand_error == 'the export has no split (encoder and head)'
    head = reference.head
    state = dict(head.named_parameters())
    del state['policy.head.2.bias']

    class Renamed(torch.nn.Module):
        def named_parameters(self):
            return iter(state.items())

        def named_buffers(self):
            return head.named_buffers()

    assert check(Renamed()) == (
        None, "the head is not the flow policy's MLP: the head has no policy.head.2.bias")


def test_a_field_that_traces_differently_or_not_at_all_is_sampled_untraced(split_exports):
    runtime = load(split_exports[0])
    head = runtime.head
    probe = runtime._probe()

    class Drifting(torch.nn.Module):
        """The head times a factor that grows by ``step`` at every call (state tracing bakes)."""

        def __init__(self, step):
            super().__init__()
            self.calls, self.step = 0, step

        def forward(self, *args):
            self.calls += 1
            return head(*args) * (1.0 + self.calls * self.step)

    def untraceable(x_t, t, *encoding):
        return head(x_t, t, *encoding) + float(x_t.sum())   # a Python number from the data

    steps, reason = StepGraphs.checked(untraceable, probe)
    assert steps is None and reason.startswith('the velocity field cannot be traced: ')
    steps, reason = StepGraphs.checked(Drifting(0.05), probe)
    assert steps is None
    assert re.fullmatch(r'the traced plain step differs from the velocity field by \S+ > '
                        r'0\.0001', reason), reason
    steps, reason = StepGraphs.checked(Drifting(0.0), probe)
    assert steps is not None and reason == ''
    # The encoder of the numpy head's path likewise.
    encoder, probes = runtime.encoder, [runtime._random_features(seed) for seed in (0, 1)]

    def untraceable_encoder(*features):
        return 'keypoints'   # not a tensor

    def data_dependent_encoder(*features):
        return encoder(*features) + float(features[0].sum())   # frozen by the trace

    class DriftingEncoder(torch.nn.Module):
        def __init__(self, step):
            super().__init__()
            self.calls, self.step = 0, step

        def forward(self, *features):
            self.calls += 1
            return encoder(*features) * (1.0 + self.calls * self.step)

    traced, reason = TracedEncoder.checked(untraceable_encoder, probes)
    assert traced is None and reason.startswith('the encoder cannot be traced: ')
    for module in (data_dependent_encoder, DriftingEncoder(0.05)):
        traced, reason = TracedEncoder.checked(module, probes)
        assert traced is None and re.fullmatch(
            r'the traced encoder differs from the exported one by \S+ > 0\.0001', reason), reason
    traced, reason = TracedEncoder.checked(DriftingEncoder(0.0), probes)
    assert traced is not None and reason == ''


def test_a_bad_split_is_refused_naming_the_file(tmp_path, split_exports):
    import shutil
    path = pathlib.Path(shutil.copytree(split_exports[0].parent, tmp_path / 'a')) / 'model.pt2'
    other = split_exports[1]
    manifest = path.with_suffix('.json')
    data = json.loads(manifest.read_text())
    # Another model's head: the velocity differs, named.
    (path.parent / 'model.head.pt2').write_bytes((other.parent / 'model.head.pt2').read_bytes())
    with pytest.raises(RuntimeLoadError, match=r'split\.head\(split\.encoder\) differs'):
        load(path)
    assert FlowMatchingRuntime.load(RuntimeOptions(checkpoint=str(path)),
                                    use_split=False).encoder is None
    for section, message in (
            ({'encoder': 'gone.pt2', 'head': 'model.head.pt2'}, r'split\.encoder file .*gone'),
            ({'encoder': 'model.encoder.pt2'}, 'split must map exactly'),
            ({'encoder': 'model.json', 'head': 'model.head.pt2'}, r'cannot load split\.encoder')):
        manifest.write_text(json.dumps(dict(data, split=section)))
        with pytest.raises(RuntimeLoadError, match=message):
            load(path)


def test_the_simulated_runner_takes_the_servers_sampler_parameters(split_exports):
    from remote_inference_py.evaluation.settings import EvalSettings, resolve_policy
    choice = resolve_policy(str(split_exports[0]))
    assert choice.make_runtime().sampler.execution_horizon == 20
    # As the node does: the parameters set override the manifest, 0 / '' keep it.
    server = dict(EvalSettings.load().node('policy_server'), rtc_execution_horizon=7,
                  rtc_prefix_schedule='exp')
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        runtime = choice.make_runtime(server)
        # And torch's threads, as the node sets them (cpu_threads: its declared 1).
        assert 'cpu_threads' not in server and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert (runtime.sampler.execution_horizon, runtime.sampler.prefix_schedule,
            runtime.sampler.steps) == (7, 'exp', 6)
    with pytest.raises(ValueError, match='rtc_max_guidance_weight'):
        choice.make_runtime({'rtc_max_guidance_weight': -1.0})
