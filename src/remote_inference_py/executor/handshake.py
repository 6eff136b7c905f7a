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
The executor's side of the admission handshake as a state machine (no ROS).

Before any motion the executor asks the policy server what it serves
(``policy/get_capabilities``), compares that with what it wants
(:func:`~remote_inference_py.contract.check.check_admission`, the check the server runs
too), asks to be admitted (``policy/admit``) and then waits until its request and chunk
topics are matched with the server's, since a request published before that is lost::

    DISCOVER --service ready--> CAPABILITIES --reply matches--> ADMIT --success--> MATCHING
       ^                             |                            |                   |
       +---- no reply after RETRY_S -+----------------------------+        both topics matched
                                                                                      v
    any difference, a refusal or a timeout ------------------> REFUSED            ADMITTED

While the hardware must declare position hold (``require_position_hold``) and has not, the
machine stays in DISCOVER. The Admit request offers the features the server consumes, each
image at the size the hardware declares on ``hardware/info`` for its topic
(:func:`offered_features`): a camera the server cannot serve (another size where it does not
resize, other channels) is refused here, before motion. DISCOVER (hardware and server
together) and MATCHING are each bounded by ``timeout_s``: the first from the start of
admission, the second from the admit reply. A request that got no reply within
:data:`RETRY_S` (a request sent right after discovery can be lost while the server's reply
writer is not matched yet) starts again at DISCOVER.

The node hands :meth:`Admission.step` the facts of one control tick (:class:`Facts`) and
carries out the actions it returns (:class:`AskCapabilities`, :class:`AskAdmission`,
:class:`Admitted`, :class:`Refused`, :class:`Log`); the machine never blocks, keeps no clock
and touches no ROS object. Replies are read by duck typing (the fields of the
``GetCapabilities`` and ``Admit`` responses).
"""

import dataclasses
import enum
from typing import Any, List, Optional, Sequence, Tuple

from remote_inference_py.common.service_call import RETRY_S   # a lost reply: ask again
from remote_inference_py.common.settings import check_settings, setting_of
from remote_inference_py.contract.check import (
    AdmitRequest, check_admission, FeatureDeclaration, protocol_for, ServerContract)
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings


WAITING_LOG_PERIOD_S = 5.0
"""Say what admission waits for at most this often [s]."""


class Phase(enum.Enum):
    """Where the handshake is."""

    DISCOVER = 'discover'          # waiting for position hold and the capabilities service
    CAPABILITIES = 'capabilities'  # policy/get_capabilities asked, no reply yet
    ADMIT = 'admit'                # policy/admit asked, no reply yet
    MATCHING = 'matching'          # admitted; waiting for the request and chunk topics
    ADMITTED = 'admitted'          # done: motion may start
    REFUSED = 'refused'            # done: the arm never moves


DONE = (Phase.ADMITTED, Phase.REFUSED)


@dataclasses.dataclass(frozen=True)
class Hardware:
    """What the driver declares on ``hardware/info`` (the fields admission reads)."""

    backend: str
    state: str
    position_hold: bool
    cameras: Tuple[FeatureDeclaration, ...] = ()   # what the cameras publish (topic, shape)

    @classmethod
    def from_message(cls, msg) -> 'Hardware':
        """Read a ``remote_inference/HardwareInfo`` (or anything with its fields)."""
        return cls(msg.backend, msg.state, bool(msg.position_hold),
                   tuple(FeatureDeclaration.from_message(c) for c in getattr(msg, 'cameras', ())))


COMPRESSED_SUFFIX = '/compressed'


def offered_features(features: Sequence[FeatureDeclaration],
                     cameras: Sequence[FeatureDeclaration]) -> Tuple[FeatureDeclaration, ...]:
    """Return the server's features at the shape the robot's cameras declare for their topics.

    A feature read from a topic the hardware declares (``cameras/front/image_raw``, or its
    ``/compressed`` twin) is offered at the declared shape, dtype and kind; any other as the
    server declares it (what a robot side that declares nothing offers, as before).
    """
    declared = {c.topic.strip('/'): c for c in cameras}
    out = []
    for feature in features:
        topic = feature.topic.strip('/')
        if topic.endswith(COMPRESSED_SUFFIX):
            topic = topic[:-len(COMPRESSED_SUFFIX)]
        camera = declared.get(topic) if feature.is_image else None
        out.append(feature if camera is None else dataclasses.replace(
            feature, shape=tuple(camera.shape), dtype=camera.dtype, kind=camera.kind,
            resizes=False))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Client:
    """What this executor asks for (from its parameters).

    The fields with a default are the executor's settings of that name (``timeout_s``:
    ``admission_timeout_s``), with their defaults and checks; a bad value raises ValueError
    naming the field. ``expected_features`` ``[any]`` is stored empty, as the setting is.
    """

    client_name: str
    deployment: str
    semantics: str
    action_names: Tuple[str, ...]
    action_rate: float
    merge_mode: str
    expected_features: Tuple[str, ...] = setting_of(NodeSettings, 'expected_features')
    require_position_hold: bool = setting_of(NodeSettings, 'require_position_hold')
    timeout_s: float = setting_of(NodeSettings, 'admission_timeout_s')
    presence_lease_s: float = setting_of(NodeSettings, 'presence_lease_s')
    max_requests_in_flight: int = setting_of(ExecutorConfig, 'max_requests_in_flight')

    def __post_init__(self):
        """Check the settings; store the sequences as tuples."""
        check_settings(self)
        object.__setattr__(self, 'action_names', tuple(self.action_names))
        if self.expected_features == ('any',):
            object.__setattr__(self, 'expected_features', ())

    def request(self, contract: ServerContract, position_hold: bool,
                cameras: Sequence[FeatureDeclaration] = ()) -> AdmitRequest:
        """Return the Admit request for a server's contract: we offer what it consumes.

        The protocol version is the server's when it is an older one we admit
        (:func:`~remote_inference_py.contract.check.protocol_for`), else ours.

        Images come at the size the hardware declares for their topic (``cameras``), when it
        does (:func:`offered_features`).
        """
        return AdmitRequest(
            protocol_version=protocol_for(contract.protocol_version),
            client_name=self.client_name,
            deployment=self.deployment, semantics=self.semantics,
            action_names=self.action_names, action_rate=self.action_rate,
            features=offered_features(contract.features, cameras), merge_mode=self.merge_mode,
            hardware_position_hold=position_hold, presence_lease_s=self.presence_lease_s,
            max_requests_in_flight=self.max_requests_in_flight)


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the node observed at one control tick.

    ``reply`` is the answer to the request in flight once it has come (a ``GetCapabilities``
    response in CAPABILITIES, an ``Admit`` response in ADMIT), None before. The counts are
    the matched subscribers of ``policy/request`` and publishers of ``policy/chunk``.
    """

    now: float
    hardware: Optional[Hardware] = None
    service_ready: bool = False
    reply: Any = None
    request_subscribers: int = 0
    chunk_publishers: int = 0


@dataclasses.dataclass(frozen=True)
class AskCapabilities:
    """Call ``policy/get_capabilities`` (its reply goes in ``Facts.reply``)."""


@dataclasses.dataclass(frozen=True)
class AskAdmission:
    """Call ``policy/admit`` with this request; ``capabilities`` is the reply it answers."""

    request: AdmitRequest
    capabilities: Any


@dataclasses.dataclass(frozen=True)
class Admitted:
    """The handshake succeeded: ``reply`` is the Admit response, ``capabilities`` the server's."""

    session_id: str
    instance_id: str
    chunk_length: int
    reply: Any
    capabilities: Any


@dataclasses.dataclass(frozen=True)
class Refused:
    """The handshake failed for good: never move, say why, exit non-zero."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Log:
    """Log ``text`` at ``level`` (``info`` or ``warning``)."""

    level: str
    text: str


def hardware_not_ready(hardware: Optional[Hardware], require_position_hold: bool) -> str:
    """Return what the hardware still lacks before motion, or an empty string."""
    if not require_position_hold:
        return ''
    if hardware is None:
        return 'no hardware/info received yet (position hold unknown)'
    if not hardware.position_hold:
        return (f'hardware {hardware.backend!r} does not declare position hold '
                f'(state {hardware.state!r}); refusing to move')
    return ''


class Admission:
    """The handshake of one executor: feed it :class:`Facts`, carry out its actions."""

    def __init__(self, client: Client, started: float):
        """Begin in DISCOVER at time ``started`` [s] (the clock of ``Facts.now``)."""
        self.client = client
        self.phase = Phase.DISCOVER
        self.started = started
        self.sent = started          # when the request in flight went out / MATCHING began
        self.next_log = started
        self.capabilities = None     # the server's reply that passed the check
        self.reply = None            # the Admit reply, kept while MATCHING

    @property
    def done(self) -> bool:
        """Return True once admitted or refused."""
        return self.phase in DONE

    def update(self, client: Client) -> None:
        """Use new settings from the next step (e.g. a live ``admission_timeout_s``)."""
        self.client = client

    def not_ready_to_start(self, measured: bool, hardware: Optional[Hardware]) -> str:
        """Return why motion cannot start yet, or an empty string when it can."""
        if self.phase is not Phase.ADMITTED:
            return 'not admitted by a policy server yet'
        if not measured:
            return 'no joint_states received yet'
        return hardware_not_ready(hardware, self.client.require_position_hold)

    def step(self, facts: Facts) -> List[object]:
        """Advance by what ``facts`` tell; return the actions for the node, in order."""
        actions: List[object] = []
        if self.done:
            return actions
        now = facts.now
        timeout = self.client.timeout_s
        if self.phase in (Phase.CAPABILITIES, Phase.ADMIT) and facts.reply is None \
                and now - self.sent > RETRY_S:
            actions.append(Log('warning', f'no answer to {self.phase.value} after {RETRY_S} s;'
                                          f' asking again'))
            self.phase = Phase.DISCOVER
        if self.phase is Phase.DISCOVER:
            waiting_for = hardware_not_ready(facts.hardware, self.client.require_position_hold)
            if waiting_for:
                if now - self.started > timeout:
                    actions.append(self._refuse(f'{waiting_for} after {timeout} s'))
                else:
                    self._waiting(now, f'waiting: {waiting_for}', actions)
            elif facts.service_ready:
                self.phase = Phase.CAPABILITIES
                self.sent = now
                actions.append(AskCapabilities())
            elif now - self.started > timeout:
                actions.append(self._refuse('no policy server answered policy/get_capabilities'
                                            f' within {timeout} s'))
            else:
                self._waiting(now, 'waiting for the policy server (policy/get_capabilities)',
                              actions)
        elif self.phase is Phase.CAPABILITIES and facts.reply is not None:
            actions.append(self._on_capabilities(facts.reply, facts.hardware, now))
        elif self.phase is Phase.ADMIT and facts.reply is not None:
            if not facts.reply.success:
                actions.append(self._refuse(f'server refused admission: {facts.reply.message}'))
            else:
                self.phase = Phase.MATCHING
                self.sent = now
                self.reply = facts.reply
        if self.phase is Phase.MATCHING:
            if facts.request_subscribers > 0 and facts.chunk_publishers > 0:
                self.phase = Phase.ADMITTED
                actions.append(Admitted(
                    session_id=self.reply.session_id, instance_id=self.reply.instance_id,
                    chunk_length=int(self.capabilities.chunk_length), reply=self.reply,
                    capabilities=self.capabilities))
            elif now - self.sent > timeout:
                actions.append(self._refuse(
                    'the policy server admitted us, but policy/request has no subscriber or '
                    f'policy/chunk no publisher after {timeout} s'))
        return actions

    def check(self, capabilities,
              hardware: Optional[Hardware]) -> Tuple[AdmitRequest, List[str]]:
        """Return our Admit request for a capabilities reply and every difference found."""
        contract = ServerContract.from_message(capabilities)
        request = self.client.request(contract, bool(hardware and hardware.position_hold),
                                      hardware.cameras if hardware else ())
        return request, check_admission(contract, request, self.client.expected_features)

    def _on_capabilities(self, capabilities, hardware, now):
        request, problems = self.check(capabilities, hardware)
        if problems:
            return self._refuse('; '.join(problems))
        self.capabilities = capabilities
        self.phase = Phase.ADMIT
        self.sent = now
        return AskAdmission(request, capabilities)

    def _refuse(self, reason: str) -> Refused:
        self.phase = Phase.REFUSED
        return Refused(reason)

    def _waiting(self, now: float, text: str, actions: List[object]) -> None:
        if now >= self.next_log:
            self.next_log = now + WAITING_LOG_PERIOD_S
            actions.append(Log('info', text))
