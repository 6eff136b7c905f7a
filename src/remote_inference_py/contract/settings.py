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
The settings both nodes have, declared once: each node's config embeds them by name.

The executor (``executor/config.py``, :class:`NodeSettings`) and the policy server
(``policy_server/config.py``, :class:`ServerConfig`) each have a ``deployment`` and a
``presence_lease_s`` parameter that must be equal on both sides. Each is declared here, once,
with :func:`~remote_inference_py.common.settings.setting`, and is a field of both configs by
:func:`~remote_inference_py.common.settings.shared`: one default, range, unit and description
(docs/parameters.md shows it under each node).

Settings of the same subject that differ by design are each node's own, with their bounds
from the contract: the executor's ``fps`` (the rate it runs, default 30 Hz) and the server's
(0: the policy's), both up to :data:`MAX_ACTION_RATE_HZ`; the executor's ``semantics`` (what it
requires) and the server's (empty: the policy's); the executor's ``max_requests_in_flight``
(what it asks, default 1) and the server's ``max_requests_per_client`` (what it queues,
default 4), both up to :data:`~.check.MAX_REQUESTS_IN_FLIGHT`.
"""

from dataclasses import dataclass

from remote_inference_py.common.settings import check_settings, setting
from remote_inference_py.contract.check import PRESENCE_LEASE_S
from remote_inference_py.contract.presence import PRESENCE_SAMPLES_PER_LEASE

MAX_ACTION_RATE_HZ = 1000.0
"""Upper bound of an action rate setting (``fps`` of either node) [Hz]."""

_SAMPLES = PRESENCE_SAMPLES_PER_LEASE


@dataclass(frozen=True)
class ContractSettings:
    """The settings both nodes have (each field is a parameter of each; see the module)."""

    deployment: str = setting(
        'so101', 'Deployment name: the policy server serves it and the executor asks for it at '
        'admission; the two must be equal.')
    presence_lease_s: float = setting(
        PRESENCE_LEASE_S, 'Presence lease: the policy server publishes a presence sample on '
        f'policy/presence every lease / {_SAMPLES}; the executor counts its server lost when '
        'nothing of it (presence sample, chunk) came this long, and a silence up to '
        f'{_SAMPLES - 1}/{_SAMPLES} of it never costs the session. Both must use the same.',
        unit='s', low=0.1, high=3600.0)

    def __post_init__(self):
        """Check every declared setting."""
        check_settings(self)
