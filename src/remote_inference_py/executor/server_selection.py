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
Choosing a policy server among several candidates (no ROS).

An executor may be given several candidate servers (``policy_servers``: the namespace of each
one's policy interface). :class:`Selection` drives admission over them: it asks every
candidate for its capabilities (the *survey*), ranks the answers with :func:`choose_server`
and then runs the one-server handshake (:class:`.handshake.Admission`) with the best; when
that server refuses (it filled up since it answered, say) it goes on with the next. With one
candidate there is no survey: the handshake runs as it always did.

The choice rule (:func:`choose_server`), per candidate:

- no answer (service not up, or no reply by the time the survey ends): not chosen;
- an answer whose contract differs from ours (:func:`..contract.check.check_admission`):
  not chosen, with every difference;
- full (``active_clients >= max_clients``): not chosen;
- otherwise usable, ranked by load ``active_clients / max_clients`` (least loaded first),
  ties by the SHA-256 of ``'<executor name>|<candidate>'`` (:func:`tie_key`): the same robot
  always breaks a tie the same way, and robots that start together spread over equally loaded
  servers instead of all trying the first one.

The survey ends when every candidate has answered, or :data:`SURVEY_WAIT_S` after the first
usable answer (a server that is down does not hold the others up), or after the admission
timeout. No usable candidate: a refusal before motion naming each candidate and why. When
every ranked candidate refused at admission while another had not answered yet (a server
still starting on a busy host), the survey starts again, until the admission timeout: a
robot is not refused for the one server it could not hear from in time.
"""

import dataclasses
import hashlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from remote_inference_py.executor.config import ON_SERVER_LOSS
from remote_inference_py.executor.handshake import (
    Admission, Admitted, AskAdmission, AskCapabilities, Client, Facts, Hardware,
    hardware_not_ready, Log, Phase, Refused, RETRY_S, WAITING_LOG_PERIOD_S)

SURVEY_WAIT_S = 1.0
"""How long the survey waits for the other candidates after the first usable answer [s]."""


def candidate_label(candidate: str) -> str:
    """Name a candidate in messages ('' is the policy interface in our own namespace)."""
    return repr(candidate) if candidate else "'' (policy/ in our namespace)"


def tie_key(client_name: str, candidate: str) -> str:
    """Return the tie-break key of a candidate for a client: deterministic, spread."""
    return hashlib.sha256(f'{client_name}|{candidate}'.encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Choice:
    """The usable candidates best first, and a word on every candidate (in the given order)."""

    ranking: Tuple[str, ...]
    notes: Tuple[Tuple[str, str], ...]

    def text(self) -> str:
        """Return one line: each candidate and what was found."""
        return '; '.join(f'{candidate_label(c)}: {note}' for c, note in self.notes)


def choose_server(client_name: str, candidates: Sequence[str], answers: Mapping[str, Any],
                  check: Callable[[Any], List[str]]) -> Choice:
    """Rank the candidates by the rule of the module docstring.

    ``answers`` maps a candidate to its ``GetCapabilities`` reply (absent or None: no answer);
    ``check(reply)`` returns the contract differences (empty when it matches).
    """
    usable = []
    notes = []
    for candidate in candidates:
        reply = answers.get(candidate)
        if reply is None:
            notes.append((candidate, 'no answer'))
            continue
        if not reply.success:
            notes.append((candidate, f'not serving: {reply.message}'))
            continue
        problems = check(reply)
        if problems:
            notes.append((candidate, 'contract differs: ' + '; '.join(problems)))
            continue
        active, most = int(reply.active_clients), max(1, int(reply.max_clients))
        if active >= most:
            notes.append((candidate, f'full ({active}/{most} clients)'))
            continue
        usable.append((active / most, tie_key(client_name, candidate), candidate))
        notes.append((candidate, f'{active}/{most} clients'))
    ranking = tuple(c for _, _, c in sorted(usable))
    return Choice(ranking, tuple(notes))


@dataclasses.dataclass(frozen=True)
class AskCandidate:
    """Call ``<candidate>/policy/get_capabilities`` for the survey."""

    candidate: str


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The survey ranked the candidates; the handshake starts with ``candidate``."""

    candidate: str
    choice: Choice


@dataclasses.dataclass(frozen=True)
class SelectionFacts:
    """What the node observed at one control tick, per candidate where it differs.

    ``ready`` says whose capabilities service is up; ``answers`` holds the survey's replies
    that have come; ``reply`` is the reply to the handshake's request in flight (of the
    current candidate), and the counts are that candidate's matched endpoints.
    """

    now: float
    hardware: Optional[Hardware] = None
    ready: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    answers: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reply: Any = None
    request_subscribers: int = 0
    chunk_publishers: int = 0


class Selection:
    """Admission over candidate servers: survey, choice, handshake (see the module doc)."""

    def __init__(self, client: Client, candidates: Sequence[str], started: float,
                 exclude: Sequence[str] = ()):
        """Begin at ``started``; ``exclude`` lists candidates not to ask (a lost server)."""
        self.client = client
        self.candidates = tuple(c for c in candidates if c not in set(exclude))
        self.excluded = tuple(c for c in candidates if c in set(exclude))
        self.started = started
        self.next_log = started
        self.asked: Dict[str, float] = {}
        self.answers: Dict[str, Any] = {}
        self.first_usable: Optional[float] = None
        self.ranking: List[str] = []
        self.refusals: List[Tuple[str, str]] = []
        self.choice: Optional[Choice] = None
        self.surveying = len(candidates) > 1 or bool(exclude)
        self.current = None if self.surveying else self.candidates[0]
        self.handshake = None if self.surveying else Admission(client, started)
        self.refused = False

    @property
    def phase(self) -> Phase:
        """Return where the handshake is (DISCOVER while surveying, REFUSED once refused)."""
        if self.refused:
            return Phase.REFUSED
        return Phase.DISCOVER if self.handshake is None else self.handshake.phase

    @property
    def done(self) -> bool:
        """Return True once admitted or refused."""
        return self.phase in (Phase.ADMITTED, Phase.REFUSED)

    def update(self, client: Client) -> None:
        """Use new settings from the next step."""
        self.client = client
        if self.handshake is not None:
            self.handshake.update(client)

    def not_ready_to_start(self, measured: bool, hardware: Optional[Hardware]) -> str:
        """Return why motion cannot start yet, or an empty string when it can."""
        if self.handshake is None:
            return 'not admitted by a policy server yet'
        return self.handshake.not_ready_to_start(measured, hardware)

    def step(self, facts: SelectionFacts) -> List[object]:
        """Advance by what ``facts`` tell; return the actions for the node, in order."""
        if self.done:
            return []
        actions: List[object] = []
        if self.handshake is None:
            self._survey(facts, actions)
        if self.handshake is not None and not self.refused:
            for action in self.handshake.step(Facts(
                    facts.now, facts.hardware, service_ready=facts.ready.get(self.current, False),
                    reply=facts.reply, request_subscribers=facts.request_subscribers,
                    chunk_publishers=facts.chunk_publishers)):
                if isinstance(action, Refused) and self.surveying:
                    self._next_after_refusal(action.reason, facts.now, actions)
                else:
                    actions.append(action)
        return actions

    # ---- the survey -----------------------------------------------------------------------

    def check(self, reply, hardware) -> List[str]:
        """Return the contract differences of a capabilities reply (the handshake's check)."""
        return Admission(self.client, 0.0).check(reply, hardware)[1]

    def _survey(self, facts: SelectionFacts, actions: List[object]) -> None:
        now = facts.now
        timeout = self.client.timeout_s
        waiting_for = hardware_not_ready(facts.hardware, self.client.require_position_hold)
        if waiting_for:
            if now - self.started > timeout:
                self._refuse(f'{waiting_for} after {timeout} s', actions)
            elif now >= self.next_log:
                self.next_log = now + WAITING_LOG_PERIOD_S
                actions.append(Log('info', f'waiting: {waiting_for}'))
            return
        for candidate in self.candidates:
            reply = facts.answers.get(candidate)
            if reply is not None and candidate not in self.answers:
                self.answers[candidate] = reply
                if self.first_usable is None and candidate in self._choose(facts).ranking:
                    self.first_usable = now
            if candidate in self.answers or not facts.ready.get(candidate, False):
                continue
            if candidate not in self.asked or now - self.asked[candidate] > RETRY_S:
                self.asked[candidate] = now
                actions.append(AskCandidate(candidate))
        if not self.asked and now >= self.next_log:
            self.next_log = now + WAITING_LOG_PERIOD_S
            names = ', '.join(candidate_label(c) for c in self.candidates)
            actions.append(Log('info', f'waiting for the candidate policy servers {names}'))
        everyone = all(c in self.answers for c in self.candidates)
        waited = self.first_usable is not None and now - self.first_usable >= SURVEY_WAIT_S
        if not (everyone or waited or now - self.started > timeout):
            return
        choice = self.choice = self._choose(facts)
        if not choice.ranking:
            self._refuse(f'no candidate policy server can take us: {self._notes(choice)}',
                         actions)
            return
        self.ranking = list(choice.ranking)
        actions.append(Log('info', f'server choice: {choice.text()}; trying '
                                   f'{" then ".join(candidate_label(c) for c in self.ranking)}'))
        self._begin(self.ranking.pop(0), now)
        actions.append(Chosen(self.current, choice))

    def _choose(self, facts: SelectionFacts) -> Choice:
        return choose_server(self.client.client_name, self.candidates, self.answers,
                             lambda reply: self.check(reply, facts.hardware))

    def _notes(self, choice: Choice) -> str:
        text = choice.text()
        for candidate in self.excluded:
            text += f'; {candidate_label(candidate)}: lost earlier'
        return text

    def _begin(self, candidate: str, now: float) -> None:
        self.current = candidate
        self.handshake = Admission(self.client, now)

    def _next_after_refusal(self, reason: str, now: float, actions: List[object]) -> None:
        self.refusals.append((self.current, reason))
        if self.ranking:
            following = self.ranking.pop(0)
            actions.append(Log('warning', f'server {candidate_label(self.current)} refused: '
                                          f'{reason}; trying {candidate_label(following)}'))
            self._begin(following, now)
            actions.append(Chosen(following, self.choice))
            return
        silent = [c for c in self.candidates if c not in self.answers]
        if silent and now - self.started <= self.client.timeout_s:
            self._survey_again(silent, reason, now, actions)
            return
        notes = dict(self.choice.notes) if self.choice else {}
        notes.update({c: f'refused: {r}' for c, r in self.refusals})
        text = '; '.join(f'{candidate_label(c)}: {notes[c]}' for c in self.candidates)
        self._refuse(f'no candidate policy server admitted us: {text}', actions)

    def _survey_again(self, silent: Sequence[str], reason: str, now: float,
                      actions: List[object]) -> None:
        names = ', '.join(candidate_label(c) for c in silent)
        actions.append(Log('warning', f'server {candidate_label(self.current)} refused: '
                                      f'{reason}; surveying again, as {names} '
                                      f'{"has" if len(silent) == 1 else "have"} not answered '
                                      'yet'))
        answered = list(self.answers)
        self.handshake, self.current, self.choice = None, None, None
        self.answers, self.first_usable = {}, None
        for candidate in answered:   # asked again now, so no old answer is taken for new
            self.asked[candidate] = now
            actions.append(AskCandidate(candidate))

    def _refuse(self, reason: str, actions: List[object]) -> None:
        self.refused = True
        actions.append(Refused(reason))


__all__ = ['Admitted', 'AskAdmission', 'AskCandidate', 'AskCapabilities', 'Choice', 'Chosen',
           'choose_server', 'Log', 'ON_SERVER_LOSS', 'Refused', 'Selection', 'SelectionFacts',
           'SURVEY_WAIT_S', 'tie_key']
