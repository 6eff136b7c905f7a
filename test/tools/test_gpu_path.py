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

"""The dtype and compile settings on real policies, on the CPU (docs/gpu.md).

The flow policy (evaluation/flow.py, split into encoder and head) in bfloat16: the numpy head
steps aside (it computes in float32), the Euler steps are traced in bfloat16, and plain and
guided chunks stay within bfloat16 rounding of float32's (measured 0.015 on values up to 3.3,
0.5 %; the bound is 3 %). A tiny LeRobot ACT in bfloat16 likewise (its latent is made in
float32 inside the model: autocast joins it; measured 0.11 degrees against a chunk that
spreads 53 degrees about its mean, 0.2 %; the same 3 % bound). ``compile`` wraps the parts
in torch.compile (compiling itself takes minutes on two busy cores, so it is not run here;
bench_gpu.py measures it on a GPU).
"""

import numpy as np
import pytest

from remote_inference_py.policy_server.loading import load_runtime
from remote_inference_py.policy_server.runtimes import (
    Prefix, RuntimeLoadError, RuntimeOptions, warm_up, zero_inputs)

torch = pytest.importorskip('torch')
BOUND = 0.03   # relative to the largest value of the float32 chunk


@pytest.fixture(scope='module')
def flow_path(tmp_path_factory):
    from remote_inference_py.evaluation import flow
    from remote_inference_py.policy_server.sampler import SamplerSettings
    torch.manual_seed(0)
    mean, std = np.zeros(6), np.full(6, 0.3)
    model = flow.make_flow_model(mean, std, hidden=64, channels=8, keypoints=8)
    return flow.export_flow(model, (48, 64), mean, std, tmp_path_factory.mktemp('flow'),
                            SamplerSettings(steps=10, execution_horizon=25,
                                            prefix_schedule='exp', max_guidance_weight=10.0),
                            max_batch_size=4)


def random_inputs(spec, batch, seed=0):
    rng = np.random.default_rng(seed)
    inputs = zero_inputs(spec, batch)
    for value in inputs.values():
        value[:] = rng.random(value.shape)
    return inputs


def test_the_flow_policy_in_bfloat16_on_the_cpu(flow_path):
    full = load_runtime(RuntimeOptions(checkpoint=str(flow_path), device='auto'))
    half = load_runtime(RuntimeOptions(checkpoint=str(flow_path), device='auto',
                                       dtype='bfloat16'))
    assert full.hand is not None and full.device == 'cpu'
    assert half.hand is None and 'float32, not torch.bfloat16' in half.hand_error
    assert half.steps is not None, half.trace_error   # traced in bfloat16, checked at load
    assert all(p.dtype == torch.bfloat16 for p in half.head.parameters())
    assert warm_up(half, 1, 3).batch_sizes == (1, 2, 3)
    inputs = random_inputs(full.spec, 2)
    chunks = {}
    for name, runtime in (('full', full), ('half', half)):
        runtime.reset(3)
        plain = runtime.infer(inputs, ['', ''])
        runtime.reset(3)
        guided = runtime.infer(inputs, ['', ''], [Prefix(plain[0] + 0.5, 5), None])
        assert plain.dtype == guided.dtype == np.float32
        chunks[name] = plain, guided
    scale = np.abs(chunks['full'][0]).max()
    for got, expected in zip(chunks['half'], chunks['full']):
        difference = np.abs(got - expected).max()
        assert 0 < difference < BOUND * scale, difference
    with pytest.raises(RuntimeLoadError, match="dtype 'float16' is not supported on device "
                                               "'cpu'"):
        load_runtime(RuntimeOptions(checkpoint=str(flow_path), dtype='float16'))


def test_compile_wraps_the_flow_parts_instead_of_the_numpy_head(flow_path):
    runtime = load_runtime(RuntimeOptions(checkpoint=str(flow_path), compile=True))
    compiled = torch._dynamo.eval_frame.OptimizedModule
    assert isinstance(runtime.head, compiled) and isinstance(runtime.encoder, compiled)
    assert runtime.hand is None and runtime.steps is None
    assert 'compile is on' in runtime.hand_error


def test_compile_wraps_an_exported_policy(tmp_path):
    import model_fixtures as models
    from remote_inference_py.policy_server.export import save_pt2
    from remote_inference_py.policy_server.manifest import spec_from_dict
    spec = spec_from_dict(models.manifest(max_batch_size=2))
    path = save_pt2(models.TinyPolicy(), spec, tmp_path / 'tiny')
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path), compile=True))
    assert isinstance(runtime.model, torch._dynamo.eval_frame.OptimizedModule)
    eager = load_runtime(RuntimeOptions(checkpoint=str(path)))
    assert not isinstance(eager.model, torch._dynamo.eval_frame.OptimizedModule)


def test_a_lerobot_act_in_bfloat16_on_the_cpu(tmp_path):
    checkpoints = pytest.importorskip('lerobot_checkpoints')
    pytest.importorskip('lerobot')
    folder = checkpoints.make_checkpoint(tmp_path / 'act', 'act')
    full = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0))
    half = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0, dtype='bfloat16'))
    assert next(half.policy.parameters()).dtype == torch.bfloat16
    inputs = random_inputs(full.spec, 2, seed=4)
    expected, got = full.infer(inputs, ['', '']), half.infer(inputs, ['', ''])
    assert got.dtype == np.float32 and got.shape == expected.shape
    # In the policy's units (degrees); relative to the spread of the chunk about its mean.
    spread = np.abs(expected - expected.mean()).max()
    assert 0 < np.abs(got - expected).max() < BOUND * spread
    # compile: ACT's model is compiled in place (nn.Module.compile), at its first call.
    compiled = load_runtime(RuntimeOptions(checkpoint=str(folder), fps=30.0, compile=True))
    assert compiled.policy.model._compiled_call_impl is not None
    assert full.policy.model._compiled_call_impl is None


def test_an_export_made_on_the_cpu_is_moved_whole_to_another_device(flow_path):
    # The flow encoder's spatial softmax creates tensors on the CPU inside its graph; moving
    # its weights alone would leave those behind on a GPU. 'meta' stands in for one here.
    from remote_inference_py.policy_server.torch_runtime import exported_module
    program = torch.export.load(str(flow_path.with_name('model.encoder.pt2')))
    assert "device(type='cpu')" in exported_module(program, torch.device('cpu')).code
    moved = exported_module(program, torch.device('meta'))
    assert "device(type='cpu')" not in moved.code and "device = 'meta'" in moved.code
    assert all(p.device.type == 'meta' for p in moved.parameters())
