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
Per-request timings and the server's activity counters, with no ROS in it.

Each answered request carries four durations [ms] (the ActionChunk fields):

- ``queue_wait_ms``: request received -> its preprocessing started (waiting for the worker,
  for a batch, and for an observation captured at or after the request's earliest stamp);
- ``preprocess_ms``: assembling and converting its observation (image decoding, resize,
  unit conversion, normalization);
- ``inference_ms``: the forward pass of the batch it was part of, plus the injected
  ``extra_compute_s`` (a test and benchmark knob that stands for a slower model; the
  injected link latency ``extra_latency_s`` comes after the answer is built and is not
  counted here);
- ``postprocess_ms``: unnormalization, conversion to SI radians and building the message.

:class:`ActivityStats` is the server's outcome accounting: every request ends counted as
served, failed (by kind, with the last reason), refused, superseded (pushed out of its full
queue by a newer one) or released (left waiting by a session that admission released), and
:meth:`ActivityStats.summary` writes the activity line the node logs every period.
"""

import dataclasses
from typing import Dict, List, Optional, Tuple

import numpy as np


@dataclasses.dataclass
class RequestTimings:
    """Durations of one request [ms]."""

    queue_wait_ms: float = 0.0
    preprocess_ms: float = 0.0
    inference_ms: float = 0.0
    postprocess_ms: float = 0.0

    @property
    def total_ms(self) -> float:
        """Sum of the four durations [ms]."""
        return self.queue_wait_ms + self.preprocess_ms + self.inference_ms + self.postprocess_ms


COUNTERS = ('requests', 'served', 'failed', 'refused', 'superseded', 'released', 'retried',
            'batches', 'batched_requests', 'largest_batch', 'repeated')


class ActivityStats:
    """Totals since start and a window since the last summary."""

    def __init__(self):
        """Start with zero counts."""
        self.totals: Dict[str, int] = {name: 0 for name in COUNTERS}
        self.failures: Dict[str, int] = {}
        self.last_failure = ''
        self._window_start = dict(self.totals)
        self._timings: List[RequestTimings] = []

    def count(self, name: str, amount: int = 1) -> None:
        """Add to a counter."""
        self.totals[name] += amount

    def batch(self, size: int) -> None:
        """Record one forward pass of ``size`` requests."""
        self.totals['batches'] += 1
        self.totals['batched_requests'] += size
        self.totals['largest_batch'] = max(self.totals['largest_batch'], size)

    def served(self, timings: RequestTimings) -> None:
        """Record an answered request."""
        self.totals['served'] += 1
        self._timings.append(timings)

    def failed(self, category: str, message: str) -> None:
        """Record a request answered with an error."""
        self.totals['failed'] += 1
        self.failures[category] = self.failures.get(category, 0) + 1
        self.last_failure = message

    def window(self) -> Dict[str, float]:
        """Return the counts and timing percentiles since the last call, and reset them."""
        out: Dict[str, float] = {name: self.totals[name] - self._window_start[name]
                                 for name in COUNTERS if name != 'largest_batch'}
        for field in ('queue_wait_ms', 'preprocess_ms', 'inference_ms', 'postprocess_ms',
                      'total_ms'):
            values = np.array([getattr(t, field) for t in self._timings]) if self._timings \
                else np.zeros(1)
            out[f'{field}_p50'] = float(np.percentile(values, 50))
            out[f'{field}_max'] = float(values.max())
        self._window_start = dict(self.totals)
        self._timings = []
        return out

    def summary(self, clients: int, max_clients: int,
                rejected: Dict[str, Tuple[int, str]]) -> Optional[str]:
        """Return the activity line since the last call, or None when idle and alone.

        ``clients`` of ``max_clients`` are admitted; ``rejected``: per stream with rejected
        samples, (count, last reason).
        """
        window = self.window()
        if not clients and not window['requests']:
            return None
        text = (f'{clients}/{max_clients} client(s); last period: '
                f'{window["requests"]:.0f} requests, {window["served"]:.0f} served, '
                f'{window["failed"]:.0f} failed, {window["refused"]:.0f} refused, '
                f'{window["superseded"]:.0f} superseded, {window["released"]:.0f} released, '
                f'{window["batches"]:.0f} forward passes')
        if window['repeated']:
            text += f' ({window["repeated"]:.0f} of the requests repeats)'
        if window['served']:
            text += (f'; ms p50/max: queue {window["queue_wait_ms_p50"]:.1f}/'
                     f'{window["queue_wait_ms_max"]:.1f}, pre '
                     f'{window["preprocess_ms_p50"]:.1f}/{window["preprocess_ms_max"]:.1f}, '
                     f'inference {window["inference_ms_p50"]:.1f}/'
                     f'{window["inference_ms_max"]:.1f}, post '
                     f'{window["postprocess_ms_p50"]:.1f}/{window["postprocess_ms_max"]:.1f}')
        text += (f'; totals: {self.totals["served"]} served, {self.totals["failed"]} failed, '
                 f'largest batch {self.totals["largest_batch"]}')
        if self.failures:
            text += (f' (failures: '
                     f'{", ".join(f"{k} {v}" for k, v in sorted(self.failures.items()))}'
                     f'; last: {self.last_failure})')
        if rejected:
            text += '; rejected samples: ' + ', '.join(
                f'{key} {count} (last: {why})' for key, (count, why) in sorted(rejected.items()))
        return text
