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
The flow policy's velocity head in numpy, its vector-Jacobian product written by hand (no torch).

The head of the shipped flow policy (``model.head.pt2``, made by
:func:`remote_inference_py.evaluation.flow.make_flow_model`) is a small MLP. With ``x_t``
``[B, L, J]``, ``t`` flow time and the encoding ``[points, state]`` (``P`` + ``J`` values):

- ``a = (state - mean) / std`` (the state in action units), ``o = x_t - t a``;
- ``z = [o (L J values), sin(t f), cos(t f), points, state]`` (``f``: the ``F`` frequencies);
- ``h_1 = W_1 z + b_1``, then ``h_k = W_k silu(h_{k-1}) + b_k``, the last layer linear: ``d``
  ``[B, L J]``;
- the chunk estimate ``c = a + d`` and the velocity ``v = (c - x_t) / r``, ``r = max(1 - t,
  MIN_REMAINING_TIME)``.

A guided Euler step (:mod:`.flow_runtime`) adds ``w J^T g`` to ``v``: ``J`` the Jacobian of the
predicted chunk ``p = x_t + s v`` (``s = 1 - t``) with respect to ``x_t``, ``g = W (Y - p)``.
As ``p = (1 - s / r) x_t + (s / r) (a + d(o))`` and ``do / dx_t`` is the identity, ``J^T g =
(1 - s / r) g + D^T ((s / r) g)``, ``D^T`` the MLP's backward pass: the transposed weights and
``silu'(h) = sigma(h) (1 + h (1 - sigma(h)))`` of each hidden layer, down to the ``L J``
columns of ``W_1`` that read ``o``.

What does not depend on ``x_t`` is computed once: per chunk, ``W_1`` applied to the encoding's
columns (and ``b_1``) and to ``a``; per flow time, ``W_1`` applied to the time features (cached
for the times the sampler visits). A step is then the matrix products of the layers (one
``[B, L J] x [L J, H]``, the rest ``H x H``) and their transposes, and a few elementwise
operations on arrays of ``H`` values, each a single numpy call (about a microsecond, where a
torch operation costs 5-10 at this size).

:meth:`MlpHead.from_state` reads the weights from the exported head's parameters and buffers
by name (``policy.head.<i>.weight`` / ``.bias``, ``policy.mean``, ``policy.std``,
``policy.frequencies``); a head without them, or of other shapes, is a :class:`HeadMismatch`
naming what is missing. The names and shapes say nothing about the arithmetic between them, so
the runtime also checks the result against the exported head itself on probe inputs before
using it (:func:`.flow_runtime.checked_hand_head`).
"""

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

MIN_REMAINING_TIME = 0.05
"""Floor of ``1 - t`` in the head's velocity (the flow policy's ``MIN_REMAINING_TIME``)."""
PREFIX = 'policy.'
"""Prefix of the head's parameter and buffer names in the export."""


BLAS_LIBRARY_NAMES = ('openblas',)
"""Shared libraries whose thread count :class:`OneBlasThread` sets (by name in the process)."""
BLAS_THREAD_SYMBOLS = ('scipy_openblas_{}_num_threads64_', 'scipy_openblas_{}_num_threads',
                       'openblas_{}_num_threads64_', 'openblas_{}_num_threads')
"""Names of OpenBLAS's get / set thread count functions, as numpy's wheels have built it."""


class OneBlasThread:
    """While active, numpy's matrix products run on one thread (OpenBLAS), then as before.

    OpenBLAS splits a product of a few rows by a 512 x 512 matrix over every core: on a
    2-core host busy with other work that made a batch-2 step 7-10x slower than one thread.
    The functions are found in the OpenBLAS library loaded in the process (Linux:
    ``/proc/self/maps``); without one (another BLAS, another system) this does nothing.
    """

    _functions = None

    @classmethod
    def functions(cls):
        """Return OpenBLAS's (get, set) thread count functions, or None (looked up once)."""
        if cls._functions is None:
            cls._functions = cls._find() or ()
        return cls._functions or None

    @staticmethod
    def _find():
        import ctypes
        try:
            with open('/proc/self/maps') as maps:
                paths = {line.split()[-1] for line in maps if '/' in line}
        except OSError:
            return None
        for path in sorted(paths):
            if not any(name in path.rsplit('/', 1)[-1] for name in BLAS_LIBRARY_NAMES):
                continue
            try:
                library = ctypes.CDLL(path)
            except OSError:
                continue
            for symbol in BLAS_THREAD_SYMBOLS:
                get = getattr(library, symbol.format('get'), None)
                set_ = getattr(library, symbol.format('set'), None)
                if get is not None and set_ is not None:
                    get.restype, set_.argtypes = ctypes.c_int, [ctypes.c_int]
                    return get, set_
        return None

    def __enter__(self):
        """Set one thread, remembering the count before."""
        functions = self.functions()
        self.before = functions[0]() if functions else None
        if self.before is not None and self.before != 1:
            functions[1](1)
        return self

    def __exit__(self, *exc):
        """Restore the thread count."""
        if self.before is not None and self.before != 1:
            self.functions()[1](self.before)
        return False


class HeadMismatch(ValueError):
    """The exported head is not the flow policy's MLP; the message says what differs."""


def _silu(h: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Return (silu(h), sigma(h))."""
    sigma = np.exp(-h)
    sigma += 1.0
    np.reciprocal(sigma, out=sigma)
    return h * sigma, sigma


def _silu_derivative(h: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Return ``silu'(h) = sigma (1 + h (1 - sigma))``."""
    derivative = 1.0 - sigma
    derivative *= h
    derivative += 1.0
    derivative *= sigma
    return derivative


class ChunkContext:
    """What one chunk's steps share: the encoding's part of the first layer and the anchor."""

    __slots__ = ('anchor', 'base')

    def __init__(self, anchor: np.ndarray, base: np.ndarray):
        """Take ``a`` per chunk row ``[B, L J]`` and ``W_1 [points, state] + b_1``."""
        self.anchor = anchor
        self.base = base


class MlpHead:
    """The flow head ``v = head(x_t, t, encoding)`` and its guided step in numpy (float32)."""

    def __init__(self, layers, mean: np.ndarray, std: np.ndarray, frequencies: np.ndarray,
                 chunk_length: int, joints: int):
        """Take ``layers`` [(weight [out, in], bias [out])] and the buffers; check the shapes."""
        self.chunk_length, self.joints = int(chunk_length), int(joints)
        size = self.chunk_length * self.joints
        self.size = size
        if len(layers) < 2:
            raise HeadMismatch(f'the head has {len(layers)} linear layer(s); expected at least 2')
        f32 = np.float32
        self.mean = np.asarray(mean, f32)
        self.std = np.asarray(std, f32)
        self.frequencies = np.asarray(frequencies, f32)
        for name, value in (('mean', self.mean), ('std', self.std)):
            if value.shape != (self.joints,):
                raise HeadMismatch(f'{PREFIX}{name} has shape {list(value.shape)}; expected '
                                   f'[{self.joints}]')
        if self.frequencies.ndim != 1:
            raise HeadMismatch(f'{PREFIX}frequencies has shape '
                               f'{list(self.frequencies.shape)}; expected one dimension')
        self.weights = [np.ascontiguousarray(w, f32) for w, _ in layers]
        self.biases = [np.ascontiguousarray(b, f32) for _, b in layers]
        inputs = size
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            if weight.ndim != 2 or bias.shape != (weight.shape[0],) or (
                    index > 0 and weight.shape[1] != inputs):
                raise HeadMismatch(f'linear layer {index} has weight {list(weight.shape)} and '
                                   f'bias {list(bias.shape)}; does not follow the layer before')
            inputs = weight.shape[0]
        if self.weights[-1].shape[0] != size:
            raise HeadMismatch(f'the last layer has {self.weights[-1].shape[0]} outputs; '
                               f'expected {size} (chunk length {chunk_length} x {joints} joints)')
        first = self.weights[0]
        features = self.frequencies.shape[0]
        self.encoding_size = first.shape[1] - size - 2 * features
        if self.encoding_size < self.joints:
            raise HeadMismatch(f'the first layer reads {first.shape[1]} values; expected the '
                               f'chunk ({size}), 2 x {features} time features and an encoding '
                               f'of at least the {self.joints} joints')
        # Columns of the first layer: the chunk's offsets, the time features, the encoding.
        # One copy of each matrix (the forward pass reads it transposed): a step is bound by
        # reading the weights from memory, and a second, transposed copy measured slower.
        self.first_chunk = np.ascontiguousarray(first[:, :size])
        self.first_time = np.ascontiguousarray(first[:, size:size + 2 * features])
        self.first_encoding = np.ascontiguousarray(first[:, size + 2 * features:])
        self._time_terms: Dict[float, np.ndarray] = {}
        self.checked_difference: Optional[float] = None
        """The largest relative difference to the exported head at the load check."""

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], chunk_length: int,
                   joints: int) -> 'MlpHead':
        """Return the head from the export's named parameters and buffers (numpy arrays)."""
        missing = [f'{PREFIX}{name}' for name in ('mean', 'std', 'frequencies')
                   if f'{PREFIX}{name}' not in state]
        layers = []
        index = 0
        while f'{PREFIX}head.{index}.weight' in state:
            bias = state.get(f'{PREFIX}head.{index}.bias')
            if bias is None:
                missing.append(f'{PREFIX}head.{index}.bias')
                break
            layers.append((state[f'{PREFIX}head.{index}.weight'], bias))
            index += 2   # Linear, SiLU, Linear, ...: the linear layers are the even ones
        if not layers:
            missing.append(f'{PREFIX}head.0.weight')
        if missing:
            raise HeadMismatch(f'the head has no {", ".join(missing)}')
        return cls(layers, state[f'{PREFIX}mean'], state[f'{PREFIX}std'],
                   state[f'{PREFIX}frequencies'], chunk_length, joints)

    def prepare(self, encoding: np.ndarray) -> ChunkContext:
        """Return what the steps of a chunk share, from its encoding ``[B, P + J]``."""
        encoding = np.asarray(encoding, np.float32)
        if encoding.ndim != 2 or encoding.shape[1] != self.encoding_size:
            raise HeadMismatch(f'the encoding has shape {list(encoding.shape)}; expected '
                               f'[batch, {self.encoding_size}]')
        state = encoding[:, -self.joints:]
        anchor = (state - self.mean) / self.std
        anchor = np.ascontiguousarray(
            np.broadcast_to(anchor[:, None, :], (len(encoding), self.chunk_length,
                                                 self.joints)).reshape(len(encoding), -1))
        base = encoding @ self.first_encoding.T
        base += self.biases[0]
        return ChunkContext(anchor, base)

    def _time_term(self, t: float) -> np.ndarray:
        """Return ``W_1 [sin(t f), cos(t f)]`` (cached per flow time)."""
        term = self._time_terms.get(t)
        if term is None:
            angles = np.float32(t) * self.frequencies
            term = self.first_time @ np.concatenate([np.sin(angles), np.cos(angles)])
            if len(self._time_terms) < 4096:
                self._time_terms[t] = term
        return term

    def velocity(self, context: ChunkContext, x: np.ndarray, t: float,
                 weight: Optional[float] = None, targets: Optional[np.ndarray] = None,
                 weights: Optional[np.ndarray] = None) -> np.ndarray:
        """Return the step's velocity ``[B, L J]`` at ``x`` ``[B, L J]``; guided when ``targets``.

        ``targets`` ``[B, L J]`` and ``weights`` (broadcasting to it) are the plan and its row
        weights, ``weight`` the guidance weight at ``t`` (:func:`.sampler.guidance_weight`).
        """
        f32 = np.float32
        t32 = f32(t)
        # First layer: W_1 (x - t a) + W_1 [time] + W_1 [encoding] + b_1.
        offsets = x - t32 * context.anchor
        h = offsets @ self.first_chunk.T
        h += self._time_term(t)
        h += context.base
        hidden = []
        for weight_k, bias_k in zip(self.weights[1:], self.biases[1:]):
            activation, sigma = _silu(h)
            hidden.append((h, sigma))
            h = activation @ weight_k.T
            h += bias_k
        remaining = max(f32(1.0) - t32, f32(MIN_REMAINING_TIME))
        clean = context.anchor + h
        velocity = clean - x
        velocity /= remaining
        if targets is None:
            return velocity
        # Guided: p = x + s v, g = W (Y - p); J^T g = (1 - s / r) g + D^T (s / r) g.
        s = f32(1.0 - t)
        error = targets - (x + s * velocity)
        error *= weights
        ratio = f32(s / remaining)
        gradient = ratio * error
        for weight_k, (h_k, sigma) in zip(self.weights[:0:-1], hidden[::-1]):
            gradient = gradient @ weight_k
            gradient *= _silu_derivative(h_k, sigma)
        correction = gradient @ self.first_chunk
        if ratio != 1.0:
            correction += (f32(1.0) - ratio) * error
        correction *= f32(weight)
        velocity += correction
        return velocity
