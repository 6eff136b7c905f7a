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

"""The flow head in numpy against the flow policy's own network and torch's autograd."""

import numpy as np
import pytest

from remote_inference_py.evaluation import flow
from remote_inference_py.policy_server.flow_head import HeadMismatch, MlpHead, OneBlasThread

torch = pytest.importorskip('torch')

LENGTH, JOINTS, KEYPOINTS = 5, 3, 2


@pytest.fixture(scope='module')
def network():
    """A tiny flow network of the shipped architecture (random weights) and its numpy head."""
    torch.manual_seed(4)
    rng = np.random.default_rng(4)
    model = flow.make_flow_model(rng.normal(0.0, 0.5, JOINTS), rng.uniform(0.1, 0.3, JOINTS),
                                 LENGTH, channels=2, keypoints=KEYPOINTS, hidden=16,
                                 time_features=4).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    # The names the exported head carries (the export wraps the network as ``policy``).
    state = {f'policy.{name}': value.numpy() for name, value in
             list(model.named_parameters()) + list(model.named_buffers())}
    return model, MlpHead.from_state(state, LENGTH, JOINTS), state


def reference(model, x, t, encoding, weight=None, targets=None, weights=None):
    """The velocity (guided: plus ``weight`` times the vjp of the predicted chunk) by autograd."""
    t_batch = torch.full((x.shape[0],), t)

    def predict(x_in):
        velocity = model.head_velocity(x_in, t_batch, encoding)
        return x_in + (1.0 - t) * velocity, velocity

    predicted, pull_back, velocity = torch.func.vjp(predict, x, has_aux=True)
    if targets is None:
        return velocity
    correction, = pull_back(weights * (targets - predicted))
    return velocity + weight * correction


@pytest.mark.parametrize('t', [0.0, 0.3, 0.9, 0.96])   # 0.96: 1 - t below its floor of 0.05
def test_plain_and_guided_steps_equal_autograd(network, t):
    model, head, _ = network
    generator = torch.Generator().manual_seed(int(t * 100))
    x = torch.randn((2, LENGTH, JOINTS), generator=generator)
    encoding = torch.randn((2, 2 * KEYPOINTS + JOINTS), generator=generator)
    targets = torch.randn((2, LENGTH, JOINTS), generator=generator)
    weights = torch.zeros((2, LENGTH, 1))
    weights[0, :, 0] = torch.linspace(1.0, 0.2, LENGTH)   # the second row is not guided
    weight = 7.5
    context = head.prepare(encoding.numpy())
    flat = x.numpy().reshape(2, -1)
    plain = head.velocity(context, flat, t)
    guided = head.velocity(context, flat, t, weight, targets.numpy().reshape(2, -1),
                           np.broadcast_to(weights.numpy(), x.shape).reshape(2, -1))
    expected_plain = reference(model, x, t, encoding).numpy().reshape(2, -1)
    expected = reference(model, x, t, encoding, weight, targets, weights).numpy().reshape(2, -1)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(plain, expected_plain, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(guided, expected, rtol=0, atol=1e-6 * scale)
    # Guidance changes the guided row, and leaves the other one exactly plain.
    assert np.abs(guided[0] - plain[0]).max() > 1e-2 * scale
    np.testing.assert_array_equal(guided[1], plain[1])


def test_a_head_of_other_names_or_shapes_is_named(network):
    _, head, state = network
    with pytest.raises(HeadMismatch, match=r'the head has no policy\.mean'):
        MlpHead.from_state({k: v for k, v in state.items() if k != 'policy.mean'},
                           LENGTH, JOINTS)
    with pytest.raises(HeadMismatch, match=r'the head has no policy\.head\.0\.weight'):
        MlpHead.from_state({k: v for k, v in state.items() if '.head.' not in k},
                           LENGTH, JOINTS)
    with pytest.raises(HeadMismatch, match=r'policy\.mean has shape \[3\]; expected \[4\]'):
        MlpHead.from_state(state, LENGTH, JOINTS + 1)
    with pytest.raises(HeadMismatch, match=r'the last layer has 15 outputs; expected 18 '
                                           r'\(chunk length 6 x 3 joints\)'):
        MlpHead.from_state(state, LENGTH + 1, JOINTS)
    wrong = dict(state, **{'policy.head.4.weight': state['policy.head.4.weight'][:, :8]})
    with pytest.raises(HeadMismatch, match=r'linear layer 2 has weight \[16, 8\] and bias '
                                           r'\[16\]; does not follow the layer before'):
        MlpHead.from_state(wrong, LENGTH, JOINTS)
    with pytest.raises(HeadMismatch, match=r'the encoding has shape \[1, 6\]; expected '
                                           r'\[batch, 7\]'):
        head.prepare(np.zeros((1, 6), np.float32))


def test_numpy_products_run_on_one_blas_thread_inside_and_as_before_after():
    blas = np.show_config(mode='dicts')['Build Dependencies']['blas']['name']
    functions = OneBlasThread.functions()
    if 'openblas' not in blas:
        assert functions is None
        pytest.skip(f'numpy uses {blas}, not OpenBLAS')
    get, set_ = functions
    before = get()
    try:
        set_(2)
        with OneBlasThread():
            assert get() == 1
        assert get() == 2
        with pytest.raises(ZeroDivisionError), OneBlasThread():
            1 / 0
        assert get() == 2
    finally:
        set_(before)
