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
The table of admitted sessions, with no ROS in it.

:class:`SessionTable` hands out session ids (new per admission) and enforces ``max_clients``.
A session that sent no request for ``idle_timeout_s`` is *idle*; an idle session is released
when a new client needs its slot (not before: an executor admitted a while before its user
starts motion must not lose its session for being patient). A client that asks again with
the same name from the same robot namespace is a restart of that client and replaces its
old session. Requests carrying an unknown or released session id are refused and counted.
"""

import dataclasses
import time
from typing import Callable, Dict, Optional, Sequence, Tuple
import uuid


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
    answers: Tuple = ()   # error answers of the requests the released sessions left waiting


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
