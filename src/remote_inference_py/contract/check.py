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
The contract between a robot (the executor) and a policy server, with no ROS in it.

Before anything moves, the two sides compare what the server serves (:class:`ServerContract`,
the ``policy/get_capabilities`` answer) with what the robot asks for (:class:`AdmitRequest`,
the ``policy/admit`` request). :func:`check_admission` is the one place that says what
differs, and both sides call it: the executor before it asks, so it can refuse with the full
list without a round trip, and the server when it is asked, so a client that skipped the
check is still refused. It compares protocol version (equal, or both from
:data:`OLDEST_PROTOCOL_VERSION` to :data:`PROTOCOL_VERSION`), deployment, semantics, action
names and their order, action rate, observation features (by name: shape, dtype and kind must
be equal, except that an image feature the server resizes takes any height and width with
the same channels; features the client offers but the policy does not use are ignored),
features the client requires the server to consume, merge mode (``rtc`` only with a policy
that conditions its chunks on the committed plan), how many requests the client keeps in
flight (at most what the server queues per client), the presence lease (how long a silent
server counts as present: both sides must use the same), and position hold. Every difference
refuses admission before motion, and the message names it.

The messages are read by duck typing (:meth:`ServerContract.from_message`,
:meth:`AdmitRequest.from_message`), so this module imports no ROS package.
"""

import dataclasses
from typing import List, Sequence, Tuple

PROTOCOL_VERSION = 4
"""Version of the messages and of this contract.

4: the server publishes presence samples on ``policy/presence`` (:mod:`.presence`); the
messages are those of 3. A client asks for admission with the lower of its version and the
server's, and both sides admit any version from :data:`OLDEST_PROTOCOL_VERSION` on."""

OLDEST_PROTOCOL_VERSION = 3
"""The oldest version still admitted: 3 has the same messages, and its server may publish no
presence samples (:func:`publishes_presence`)."""

PRESENCE_SAMPLES_SINCE = 4
"""The first version whose server always publishes presence samples."""


def protocol_for(server_version: int) -> int:
    """Return the version a client of this package asks a server of ``server_version`` for.

    The lower of the two when the server's is one we admit (an older server requires its
    own), else ours (and admission says what differs).
    """
    if OLDEST_PROTOCOL_VERSION <= server_version <= PROTOCOL_VERSION:
        return server_version
    return PROTOCOL_VERSION


def publishes_presence(server_version: int) -> bool:
    """Return True if a server of ``server_version`` always publishes presence samples.

    A server of version 3 may be older than the samples: the executor then keeps its lease by
    what it answers, counted only while a request is owed (executor/server_lease.py).
    """
    return server_version >= PRESENCE_SAMPLES_SINCE


RTC = 'rtc'
"""The merge mode of real-time chunking (docs/design.md, section 11): each request carries the
committed plan, the policy generates the new chunk conditioned on it, and the executor keeps
the frozen prefix before switching."""

CHUNK_MERGES = ('append', 'aligned', 'ensemble', RTC)
"""How the executor joins a new chunk to its plan while it keeps moving."""

MERGE_MODES = CHUNK_MERGES + ('synchronous',)
"""What a client may ask for at admission: a chunk merge, or the synchronous baseline."""

PLAIN_MERGE_MODES = tuple(mode for mode in MERGE_MODES if mode != RTC)
"""What a server offers when its policy ignores the committed plan."""

MAX_REQUESTS_IN_FLIGHT = 8
"""Upper bound of requests one client may keep in flight (docs/design.md, section 4)."""

PRESENCE_LEASE_S = 4.0
"""Default presence lease [s] (docs/design.md, section 7; the cadence is :mod:`.presence`).

A server silent for this long is lost, and the session never resumes. It must ride through
what a loaded host and a Wi-Fi link produce (measured by bench/bench_presence.py) and stay
short beside what buffered actions and ``starvation_grace_s`` already bound."""


@dataclasses.dataclass(frozen=True)
class FeatureDeclaration:
    """One observation feature as exchanged at admission."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    kind: str
    resizes: bool = False    # server side: an image of any height x width is resized to shape
    topic: str = ''          # where the server reads it (informational)

    @classmethod
    def from_message(cls, msg) -> 'FeatureDeclaration':
        """Read a ``remote_inference/ObservationFeature`` (or anything with its fields)."""
        return cls(msg.name, tuple(int(v) for v in msg.shape), msg.dtype, msg.kind,
                   bool(getattr(msg, 'resizes', False)), str(getattr(msg, 'topic', '')))

    @property
    def is_image(self) -> bool:
        """Whether the feature is a camera image (rgb or depth)."""
        return self.kind in IMAGE_KINDS


IMAGE_KINDS = ('rgb', 'depth')


def _feature_problems(mine: FeatureDeclaration, yours: FeatureDeclaration) -> List[str]:
    """Return what differs between the server's declaration of a feature and the client's."""
    problems = []
    ours, theirs = list(mine.shape), list(yours.shape)
    if ours != theirs:
        if mine.resizes and mine.is_image and len(ours) == len(theirs) == 3:
            if ours[2] != theirs[2]:
                problems.append(f'observation feature {mine.name!r} channels: server '
                                f'{ours[2]}, client {theirs[2]} (frames of another size are '
                                'resized; other channels are not served)')
            elif min(theirs[:2]) < 1:
                problems.append(f'observation feature {mine.name!r}: client frames {theirs} '
                                'are empty')
        else:
            why = (' (the server does not resize this feature: frames must be exactly this '
                   'size)' if mine.is_image else '')
            problems.append(f'observation feature {mine.name!r} shape: server {ours}, client '
                            f'{theirs}{why}')
    for field in ('dtype', 'kind'):
        if getattr(mine, field) != getattr(yours, field):
            problems.append(f'observation feature {mine.name!r} {field}: server '
                            f'{getattr(mine, field)}, client {getattr(yours, field)}')
    return problems


@dataclasses.dataclass(frozen=True)
class ServerContract:
    """What the server serves (the GetCapabilities answer, minus counts)."""

    deployment: str
    semantics: str
    action_names: Tuple[str, ...]
    action_rate: float
    chunk_length: int
    features: Tuple[FeatureDeclaration, ...]
    merge_modes: Tuple[str, ...] = PLAIN_MERGE_MODES
    protocol_version: int = PROTOCOL_VERSION
    presence_lease_s: float = PRESENCE_LEASE_S
    max_requests_in_flight: int = 1

    @classmethod
    def from_message(cls, msg) -> 'ServerContract':
        """Read a ``GetCapabilities`` response (or anything with its fields)."""
        return cls(deployment=msg.deployment, semantics=msg.semantics,
                   action_names=tuple(msg.action_names), action_rate=float(msg.action_rate),
                   chunk_length=int(msg.chunk_length),
                   features=tuple(FeatureDeclaration.from_message(f) for f in msg.features),
                   merge_modes=tuple(msg.supported_merge_modes) or PLAIN_MERGE_MODES,
                   protocol_version=int(msg.protocol_version),
                   presence_lease_s=float(msg.presence_lease_s),
                   max_requests_in_flight=int(msg.max_requests_in_flight) or 1)


@dataclasses.dataclass(frozen=True)
class AdmitRequest:
    """What a client asks for (the fields of remote_inference/srv/Admit)."""

    protocol_version: int
    client_name: str
    deployment: str
    semantics: str
    action_names: Tuple[str, ...]
    action_rate: float
    features: Tuple[FeatureDeclaration, ...]
    merge_mode: str
    hardware_position_hold: bool
    presence_lease_s: float = PRESENCE_LEASE_S
    max_requests_in_flight: int = 1

    @classmethod
    def from_message(cls, msg) -> 'AdmitRequest':
        """Read an ``Admit`` request (or anything with its fields)."""
        return cls(protocol_version=int(msg.protocol_version), client_name=msg.client_name,
                   deployment=msg.deployment, semantics=msg.semantics,
                   action_names=tuple(msg.action_names), action_rate=float(msg.action_rate),
                   features=tuple(FeatureDeclaration.from_message(f) for f in msg.features),
                   merge_mode=msg.merge_mode,
                   hardware_position_hold=bool(msg.hardware_position_hold),
                   presence_lease_s=float(msg.presence_lease_s),
                   max_requests_in_flight=int(msg.max_requests_in_flight) or 1)


def check_admission(contract: ServerContract, request: AdmitRequest,
                    required_features: Sequence[str] = ()) -> List[str]:
    """Return one message per difference between the request and the contract.

    ``required_features`` are feature names the client insists the server consumes (the
    executor's ``expected_features``); the server itself passes none.
    """
    problems = []
    if request.protocol_version != contract.protocol_version and not all(
            OLDEST_PROTOCOL_VERSION <= version <= PROTOCOL_VERSION
            for version in (request.protocol_version, contract.protocol_version)):
        problems.append(f'protocol version: server {contract.protocol_version}, client '
                        f'{request.protocol_version} (this side admits '
                        f'{OLDEST_PROTOCOL_VERSION} to {PROTOCOL_VERSION})')
    if request.deployment != contract.deployment:
        problems.append(f'deployment: server {contract.deployment!r}, client '
                        f'{request.deployment!r}')
    if request.semantics != contract.semantics:
        problems.append(f'semantics: server {contract.semantics!r}, client '
                        f'{request.semantics!r}')
    ours, theirs = list(contract.action_names), list(request.action_names)
    if ours != theirs:
        if sorted(ours) == sorted(theirs):
            problems.append(f'action order: server {ours}, client {theirs}')
        else:
            missing = [n for n in ours if n not in theirs]
            extra = [n for n in theirs if n not in ours]
            detail = '; '.join(part for part in (
                f'missing on the client: {missing}' if missing else '',
                f'unknown to the server: {extra}' if extra else '') if part)
            problems.append(f'action names: server {ours}, client {theirs} ({detail})')
    if not abs(request.action_rate - contract.action_rate) <= 1e-6 * contract.action_rate:
        problems.append(f'action rate: server {contract.action_rate} Hz, client '
                        f'{request.action_rate} Hz')
    offered = {f.name: f for f in request.features}
    for feature in contract.features:
        other = offered.get(feature.name)
        if other is None:
            problems.append(f'observation feature {feature.name!r} is not provided by the '
                            f'client')
            continue
        problems += _feature_problems(feature, other)
    served = [f.name for f in contract.features]
    missing = [name for name in required_features if name not in served]
    if missing:
        problems.append(f'observation features {missing} not served (server: {served})')
    if request.merge_mode not in contract.merge_modes:
        why = (' (rtc needs a policy that generates chunks conditioned on the committed plan; '
               'this one does not)' if request.merge_mode == RTC else '')
        problems.append(f'merge mode {request.merge_mode!r} is not supported{why} (supported: '
                        f'{", ".join(contract.merge_modes)})')
    if not 1 <= request.max_requests_in_flight <= contract.max_requests_in_flight:
        problems.append(f'requests in flight: client keeps up to '
                        f'{request.max_requests_in_flight}, server queues 1 to '
                        f'{contract.max_requests_in_flight} per client '
                        '(set max_requests_in_flight on the executor, max_requests_per_client '
                        'on the server)')
    if request.presence_lease_s and not abs(request.presence_lease_s
                                            - contract.presence_lease_s) <= 1e-6:
        problems.append(f'presence lease: server {contract.presence_lease_s} s, client '
                        f'{request.presence_lease_s} s (set presence_lease_s equal on both)')
    if not request.hardware_position_hold:
        problems.append('hardware_position_hold is false: the robot driver must declare '
                        'position hold')
    return problems
