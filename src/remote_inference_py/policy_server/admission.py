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
Admission (contract.md section 3) and the table of admitted sessions, with no ROS in it.

:func:`check_admission` lists every difference between what a client asks for and what the
server serves: protocol version, deployment, semantics, action names and their order, action
rate, observation features (by name: shape, dtype and kind must be equal; features the
client offers but the policy does not use are ignored), merge mode, and position hold. Any
difference refuses admission before motion, and the message says what differed.

:class:`SessionTable` hands out session ids (new per admission) and enforces ``max_clients``.
A session that sent no request for ``idle_timeout_s`` is *idle*; an idle session is released
when a new client needs its slot (not before: an executor admitted a while before its user
starts motion must not lose its session for being patient). A client that asks again with
the same name from the same robot namespace is a restart of that client and replaces its
old session. Requests carrying an unknown or released session id are refused and counted.
"""

import dataclasses
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple
import uuid

from remote_inference_py import PROTOCOL_VERSION

MERGE_MODES = ('append', 'aligned', 'ensemble', 'synchronous')


@dataclasses.dataclass(frozen=True)
class FeatureDeclaration:
    """One observation feature as exchanged at admission."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    kind: str


@dataclasses.dataclass(frozen=True)
class ServerContract:
    """What the server serves (the GetCapabilities answer, minus counts)."""

    deployment: str
    semantics: str
    action_names: Tuple[str, ...]
    action_rate: float
    chunk_length: int
    features: Tuple[FeatureDeclaration, ...]
    merge_modes: Tuple[str, ...] = MERGE_MODES
    protocol_version: int = PROTOCOL_VERSION


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


def check_admission(contract: ServerContract, request: AdmitRequest) -> List[str]:
    """Return one message per difference between the request and the contract."""
    problems = []
    if request.protocol_version != contract.protocol_version:
        problems.append(f'protocol version: server {contract.protocol_version}, client '
                        f'{request.protocol_version}')
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
        for field in ('shape', 'dtype', 'kind'):
            mine, yours = getattr(feature, field), getattr(other, field)
            if field == 'shape':
                mine, yours = list(mine), list(yours)
            if mine != yours:
                problems.append(f'observation feature {feature.name!r} {field}: server '
                                f'{mine}, client {yours}')
    if request.merge_mode not in contract.merge_modes:
        problems.append(f'merge mode {request.merge_mode!r} is not supported (supported: '
                        f'{", ".join(contract.merge_modes)})')
    if not request.hardware_position_hold:
        problems.append('hardware_position_hold is false: the robot driver must declare '
                        'position hold')
    return problems


@dataclasses.dataclass
class Session:
    """One admitted client."""

    session_id: str
    robot: str
    client_name: str
    admitted_at: float
    last_seen: float
    requests: int = 0


@dataclasses.dataclass(frozen=True)
class AdmitResult:
    """Outcome of an admission."""

    success: bool
    message: str
    session_id: str = ''
    released: Tuple[str, ...] = ()


class SessionTable:
    """Admitted sessions, ``max_clients`` and the lazy idle release (see the module doc)."""

    def __init__(self, max_clients: int, clock: Callable[[], float] = time.monotonic):
        """Create an empty table."""
        if max_clients < 1:
            raise ValueError(f'max_clients must be >= 1, got {max_clients}')
        self.max_clients = max_clients
        self.clock = clock
        self.sessions: Dict[str, Session] = {}
        self.released: Dict[str, str] = {}   # session id -> why, for clear refusals

    def __len__(self) -> int:
        """Return the number of admitted sessions."""
        return len(self.sessions)

    def admit(self, robot: str, client_name: str, idle_timeout_s: float,
              problems: Sequence[str] = ()) -> AdmitResult:
        """Admit a client whose contract matched (``problems`` empty), if a slot is free."""
        if problems:
            return AdmitResult(False, '; '.join(problems))
        now = self.clock()
        released = []
        for session in list(self.sessions.values()):
            if session.robot == robot and session.client_name == client_name and client_name:
                released.append(self._release(session, f'{client_name} was admitted again'))
        if len(self.sessions) >= self.max_clients:
            idle = sorted((s for s in self.sessions.values()
                           if idle_timeout_s > 0 and now - s.last_seen >= idle_timeout_s),
                          key=lambda s: s.last_seen)
            if not idle:
                busy = ', '.join(f'{s.client_name or "?"} ({s.session_id}, last request '
                                 f'{now - s.last_seen:.1f} s ago)'
                                 for s in self.sessions.values())
                return AdmitResult(False, f'server full: max_clients={self.max_clients} '
                                          f'reached by {busy}; a client is released after '
                                          f'{idle_timeout_s} s without requests', '',
                                   tuple(released))
            why = f'idle for {now - idle[0].last_seen:.1f} s and its slot was needed'
            released.append(self._release(idle[0], why))
        session_id = uuid.uuid4().hex[:16]
        self.sessions[session_id] = Session(session_id, robot, client_name, now, now)
        return AdmitResult(True, 'admitted', session_id, tuple(released))

    def _release(self, session: Session, why: str) -> str:
        del self.sessions[session.session_id]
        self.released[session.session_id] = why
        return session.session_id

    def touch(self, session_id: str, robot: str) -> Optional[str]:
        """Record a request; return None when the session may be served, else why not."""
        session = self.sessions.get(session_id)
        if session is None:
            if session_id in self.released:
                return f'session {session_id!r} was released ({self.released[session_id]})'
            return (f'session {session_id!r} is not admitted by this server instance; '
                    f'ask for admission first')
        if session.robot != robot:
            return (f'session {session_id!r} was admitted for robot namespace '
                    f'{session.robot!r}, not {robot!r}')
        session.last_seen = self.clock()
        session.requests += 1
        return None

    def get(self, session_id: str) -> Optional[Session]:
        """Return the session, or None."""
        return self.sessions.get(session_id)
