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

"""The GPU path on the CPU: the device, dtype and compile settings, input staging, warm-up.

The suite never has a GPU: ``auto`` must run as on the CPU, ``cuda`` must be refused by name
(torch.cuda.is_available() is made False here, so the refusal is checked on a GPU host too),
float16 is refused on the CPU and bfloat16 runs there. docs/gpu.md.
"""

import re

import model_fixtures as models
import numpy as np
import pytest
import torch

from remote_inference_py.policy_server.config import ServerConfig
from remote_inference_py.policy_server.devices import autocast, InputStager
from remote_inference_py.policy_server.export import save_pt2
from remote_inference_py.policy_server.loading import load_policy, load_runtime
from remote_inference_py.policy_server.manifest import spec_from_dict
from remote_inference_py.policy_server.runtimes import (
    resolve_device, resolve_dtype, RuntimeLoadError, RuntimeOptions, serving_batch_sizes,
    warm_up, zero_inputs)


def test_settings_defaults_and_validation():
    config = ServerConfig()
    assert (config.device, config.dtype, config.compile) == ('auto', 'float32', False)
    for device in ('auto', 'cpu', 'cuda', 'cuda:1', 'mps'):
        assert ServerConfig(device=device).device == device
    for device in ('gpu', 'cuda:', 'cuda:x', 'CPU', ''):
        with pytest.raises(ValueError, match="parameter 'device' must be auto, cpu, cuda"):
            ServerConfig(device=device)
    with pytest.raises(ValueError, match='dtype'):
        ServerConfig(dtype='float64')
    assert ServerConfig(dtype='bfloat16', compile=True).dtype == 'bfloat16'
    assert RuntimeOptions.from_config(ServerConfig(dtype='float16', compile=True)).compile


def test_auto_is_the_gpu_when_there_is_one_else_the_cpu(monkeypatch):
    expected = 'cuda:0' if torch.cuda.is_available() else 'cpu'
    assert str(resolve_device('auto')) == expected
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert resolve_device('auto') == torch.device('cpu')
    assert resolve_device('cpu') == torch.device('cpu')


def test_cuda_without_a_gpu_is_refused_by_name(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    for device in ('cuda', 'cuda:1'):
        with pytest.raises(RuntimeLoadError, match=rf"device '{device}' requested but "
                                                   r'torch.cuda.is_available\(\) is False: '
                                                   rf'torch {re.escape(torch.__version__)}'):
            resolve_device(device)
    path = models.save_torchscript(tmp_path)
    with pytest.raises(RuntimeLoadError, match=r"device 'cuda' requested .* use device "
                                               "'auto' or 'cpu'"):
        load_runtime(RuntimeOptions(checkpoint=str(path), device='cuda'))
    # auto runs as before: on the CPU, as float32.
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path), device='auto'))
    assert runtime.device == 'cpu' and runtime.stager.pinned is False


def test_dtypes_on_the_cpu():
    cpu = torch.device('cpu')
    assert resolve_dtype('float32', cpu) is torch.float32
    assert resolve_dtype('bfloat16', cpu) is torch.bfloat16
    with pytest.raises(RuntimeLoadError, match="dtype 'float16' is not supported on device "
                                               "'cpu'"):
        resolve_dtype('float16', cpu)
    with pytest.raises(RuntimeLoadError, match="dtype 'bfloat16' is not supported by the x "
                                               'policy; it runs in float32'):
        resolve_dtype('bfloat16', cpu, ('float32',), 'the x policy')
    with pytest.raises(RuntimeLoadError, match="dtype 'float64' is not one of"):
        resolve_dtype('float64', cpu)


def test_inputs_are_staged_once_and_cast_on_the_cpu():
    frame = np.full((2, 3, 4, 4), 7, np.uint8)
    state = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    plain = InputStager(torch.device('cpu'))
    staged = plain.stage_dict({'frame': frame, 'state': state})
    assert staged['state'].data_ptr() == state.ctypes.data      # no copy on the CPU
    assert staged['frame'].dtype == torch.uint8 and plain.pinned_bytes == 0
    half = InputStager(torch.device('cpu'), torch.bfloat16)
    frame_t, state_t = half.stage({'frame': frame, 'state': state}, ['frame', 'state'])
    assert frame_t.dtype == torch.uint8                           # bytes stay bytes
    assert state_t.dtype == torch.bfloat16
    assert torch.allclose(state_t.float(), torch.from_numpy(state), atol=1e-2)


def exported(tmp_path, batch=4):
    spec = spec_from_dict(models.manifest(max_batch_size=batch))
    return save_pt2(models.TinyPolicy(), spec, tmp_path / 'tiny')


def test_bfloat16_on_the_cpu_runs_and_returns_float32_near_float32(tmp_path):
    path = exported(tmp_path)
    full = load_runtime(RuntimeOptions(checkpoint=str(path), device='cpu'))
    half = load_runtime(RuntimeOptions(checkpoint=str(path), device='cpu', dtype='bfloat16'))
    assert half.dtype is torch.bfloat16
    assert all(p.dtype == torch.bfloat16 for p in half.model.parameters())
    rng = np.random.default_rng(1)
    inputs = {name: rng.random(value.shape, dtype=np.float32)
              for name, value in zero_inputs(full.spec, 3).items()}
    expected, got = full.infer(inputs, [''] * 3), half.infer(inputs, [''] * 3)
    assert got.dtype == np.float32 and got.shape == expected.shape
    difference = np.abs(got - expected).max()
    assert 0 < difference < 0.05 * max(1.0, np.abs(expected).max())
    with pytest.raises(RuntimeLoadError, match="dtype 'float16' is not supported on device"):
        load_runtime(RuntimeOptions(checkpoint=str(path), device='cpu', dtype='float16'))


def test_autocast_is_off_in_float32():
    with autocast('cpu', torch.float32):
        assert not torch.is_autocast_enabled('cpu')
    with autocast('cpu', torch.bfloat16):
        assert torch.is_autocast_enabled('cpu')


def test_torchscript_cannot_be_compiled(tmp_path):
    path = models.save_torchscript(tmp_path)
    with pytest.raises(RuntimeLoadError, match='compile: checkpoint .*tiny.pt.* is TorchScript'):
        load_runtime(RuntimeOptions(checkpoint=str(path), compile=True))


def test_warm_up_covers_every_batch_size_the_scheduler_forms(tmp_path):
    path = exported(tmp_path)
    runtime = load_runtime(RuntimeOptions(checkpoint=str(path)))
    assert serving_batch_sizes(runtime) == (1, 2, 3, 4)
    assert serving_batch_sizes(runtime, 2) == (1, 2)
    assert serving_batch_sizes(runtime, 9) == (1, 2, 3, 4)
    seen = []
    infer = runtime.infer
    runtime.infer = lambda inputs, tasks: seen.append(len(tasks)) or infer(inputs, tasks)
    report = warm_up(runtime, 3, 3)
    assert seen == [1, 2, 3, 1, 1] and report.batch_sizes == (1, 2, 3)
    assert report.iterations == 5
    # The server: at most one request per admitted session in a pass.
    for clients, sizes in ((1, (1,)), (3, (1, 2, 3)), (6, (1, 2, 3, 4))):
        config = ServerConfig(checkpoint=str(path), max_clients=clients, max_batch_size=8,
                              warmup_iterations=1)
        lines = []
        loaded = load_policy(config, lines.append)
        assert loaded.report.batch_sizes == sizes, clients
        assert 'device=auto, dtype=float32)' in lines[0] and ' on cpu ' in lines[1]
        loaded.runtime.close()
