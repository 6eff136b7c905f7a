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

"""Asking the policy while the arm holds: the executor's query, with no ROS in it.

A query (the node's ``executor/query`` action, remote_inference/action/Query) is one of:

- ``question``: the policy answers a question about what it sees; the task stays.
- ``subtask``: the policy answers with the next subtask toward the text; the answer becomes
  the task of every later request.
- ``steering``: a subtask round, repeated every ``steering_period_s`` of motion until the goal
  is cancelled (each answer becomes the task).

:func:`refusal` says why a goal cannot run (the kind, the text, the executor's state, the
server's offer); nothing moves then. :class:`Query` is the state machine of one accepted
goal. The node calls :meth:`Query.step` once per control tick with what it saw
(:class:`Facts`) and carries out the actions it returns, in order, as the admission handshake
does:

1. :class:`Pause`: the core holds the last command sent and discards the buffered
   continuation (``ExecutorCore.pause``); then :class:`Ask` sends the text to the policy
   server (``policy/ask``), for an observation captured at or after the pause.
2. The answer (or a failure, or the answer timeout) -> :class:`SetTask` for a subtask, then
   :class:`Resume`: the core waits for a chunk computed on a capture taken after this moment.
   A reply saying the server had no observation captured at or after the pause yet (it waits
   ``observation_wait_s`` for one, as for a request) is not an answer: the query asks again,
   for the same capture, as the executor retries a request, until ``query_answer_timeout_s``
   from the first ask; the timeout then names the missing observation.
3. The first target of that fresh chunk is dispatched -> the goal finishes (:class:`Finish`),
   or, steering, motion goes on until the next round is due.

Cancelling resumes the same way (an answer that comes later is ignored; the task stays). A
query whose executor leaves RUNNING/WAITING (a stop, a fault, server loss during the text work,
which the core turns into a fault) is aborted with the executor's reason. The arm holds from
the pause until the first fresh target: that is ``hold_s``, the cost of the text work.
"""

import ast
from dataclasses import dataclass
import enum
import re

from remote_inference_py.common.settings import check_settings, setting_of
from remote_inference_py.executor.config import NodeSettings

QUESTION = 'question'
SUBTASK = 'subtask'
STEERING = 'steering'
KINDS = (QUESTION, SUBTASK, STEERING)
MOVING_STATES = ('RUNNING', 'WAITING')


class Phase(enum.Enum):
    """Where a query is; the values are the Query.action feedback phases."""

    PAUSED = 'paused'
    ASKING = 'asking'
    RESUMING = 'resuming'
    MOVING = 'moving'       # steering: moving between rounds
    DONE = 'done'


# What the query puts into the executor's status (ExecutorCore.pause and resume frame it:
# 'holding for <reason> at t=...', 'resuming after <reason>: ...'), so a recording shows the
# question and the answer at their moments (the demo's video reads them back).
_ASKED = re.compile(r'holding for a (\w+) query \((.+)\) at t=-?[\d.]+: ')
_ANSWERED = re.compile(r'resuming after the answer (.+): a fresh capture taken after t=')


def pause_reason(kind: str, text: str) -> str:
    """Return the pause's reason: the kind and the text (in the status while holding)."""
    return f'a {kind} query ({text!r})'


def answer_reason(answer: str) -> str:
    """Return the resume's reason after an answer (in the status while resuming)."""
    return f'the answer {answer!r}'


def read_status(message: str):
    """Return ('asked', kind, text) or ('answered', answer) from a status message, or None."""
    match = _ASKED.search(message)
    if match:
        return 'asked', match.group(1), _literal(match.group(2))
    match = _ANSWERED.search(message)
    if match:
        return 'answered', _literal(match.group(1))
    return None


def _literal(text: str) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, str) else text


@dataclass(frozen=True)
class QuerySettings:
    """Limits of a query: the executor's parameters, checked as they are (config.py)."""

    max_text_chars: int = setting_of(NodeSettings, 'query_max_text_chars')
    answer_timeout_s: float = setting_of(NodeSettings, 'query_answer_timeout_s')
    steering_period_s: float = setting_of(NodeSettings, 'steering_period_s')

    def __post_init__(self):
        """Check each value as its parameter is checked; errors name both."""
        check_settings(self)


def refusal(kind: str, text: str, *, offered, admitted: bool, state: str, server_lost: bool,
            busy: bool, settings: QuerySettings) -> str:
    """Return why a query cannot run now ('' when it can); nothing moves on a refusal."""
    if kind not in KINDS:
        return f'unknown query kind {kind!r}: use one of {", ".join(KINDS)}'
    if not text.strip():
        return f'empty text: a {kind} query needs text'
    if len(text) > settings.max_text_chars:
        return (f'text too long: {len(text)} characters, at most {settings.max_text_chars} '
                '(query_max_text_chars)')
    if not admitted:
        return 'no session admitted yet: the policy server has not admitted this executor'
    if busy:
        return 'another query is running: wait for it or cancel it'
    if state not in MOVING_STATES:   # first: a fault after server loss names the fault
        return f'the executor is {state}: a query needs it RUNNING or WAITING'
    if server_lost:
        return 'the policy server was lost: this session does not resume'
    if kind not in offered:
        what = ', '.join(offered) if offered else 'no text commands'
        return f'the served policy does not offer {kind!r} (it offers: {what})'
    return ''


@dataclass(frozen=True)
class Reply:
    """The policy server's reply to an Ask."""

    success: bool
    message: str = ''
    answer: str = ''
    generate_ms: float = 0.0
    observation_missing: bool = False   # no capture at or after the pause yet: ask again


@dataclass(frozen=True)
class Facts:
    """What the node saw on one control tick."""

    now: float
    state: str                  # the core's state name
    message: str = ''           # the core's status message
    dispatched: bool = False    # this tick sent a planned target (not a hold)
    reply: Reply | None = None  # the reply to the last Ask, on the tick it came
    cancel: bool = False        # the goal's cancel was requested


@dataclass(frozen=True)
class Pause:
    """Hold the last command sent; discard the buffered continuation."""

    reason: str


@dataclass(frozen=True)
class Ask:
    """Send the text to the policy server (an observation captured at or after `earliest`)."""

    kind: str
    text: str
    task: str
    earliest: float


@dataclass(frozen=True)
class SetTask:
    """Make `task` the task of every later request (and publish it on executor/task)."""

    task: str


@dataclass(frozen=True)
class Resume:
    """End the hold: move again only from a capture taken after now."""

    reason: str


@dataclass(frozen=True)
class Feedback:
    """A Query.action feedback message."""

    phase: str
    round: int
    answer: str = ''


@dataclass(frozen=True)
class Finish:
    """End the goal: status succeeded, aborted or canceled, with the result's fields."""

    status: str
    message: str
    answer: str
    task: str
    rounds: int
    hold_s: float
    ask_s: float
    generate_ms: float
    resume_s: float


class Query:
    """One accepted query, stepped once per control tick (see the module docstring)."""

    def __init__(self, kind: str, text: str, task: str, settings: QuerySettings):
        """Prepare a query of `kind` about `text` while the session runs `task`."""
        if kind not in KINDS:
            raise ValueError(f'unknown query kind {kind!r}')
        self.kind, self.text, self.task, self.settings = kind, text, task, settings
        self.phase = Phase.PAUSED
        self.rounds = 0
        self.answer = ''
        self.failure = ''
        self.missing = ''    # why the last ask found no observation (the server's words)
        self.asks = 0        # Ask actions of this round
        self.cancelled = False
        self.hold_s = 0.0
        self.ask_s = 0.0
        self.resume_s = 0.0
        self.generate_ms = 0.0
        self._hold_began = None
        self._asked_at = None
        self._resumed_at = None
        self._next_round = None

    @property
    def done(self) -> bool:
        """Return True once the goal has finished."""
        return self.phase is Phase.DONE

    def step(self, facts: Facts) -> list:
        """Return the actions for this tick, in order."""
        if self.phase is Phase.DONE:
            return []
        if facts.state not in MOVING_STATES:
            why = facts.message or 'no reason given'
            return self._finish('aborted', f'the executor is {facts.state}: {why}', facts.now)
        if self.phase is Phase.PAUSED:
            return self._begin_round(facts.now)
        if self.phase is Phase.ASKING:
            return self._asking(facts)
        if self.phase is Phase.RESUMING:
            return self._resuming(facts)
        if facts.cancel:   # MOVING between steering rounds
            return self._finish('canceled', f'steering cancelled after {self.rounds} '
                                            'round(s)', facts.now)
        if facts.now >= self._next_round:
            return self._begin_round(facts.now)
        return []

    def _begin_round(self, now: float) -> list:
        self._hold_began = self._asked_at = now
        self.phase = Phase.ASKING
        self.missing, self.asks = '', 1
        return [Pause(pause_reason(self.kind, self.text)),
                Feedback(Phase.PAUSED.value, self.rounds + 1),
                Ask(self.kind, self.text, self.task, now),
                Feedback(Phase.ASKING.value, self.rounds + 1)]

    def _asking(self, facts: Facts) -> list:
        now = facts.now
        actions = []
        if facts.cancel:
            self.cancelled = True
            why = 'cancel'
        elif facts.reply is not None and facts.reply.observation_missing \
                and now - self._asked_at <= self.settings.answer_timeout_s:
            self.missing = facts.reply.message   # asked again for the same capture
            self.asks += 1
            return [Ask(self.kind, self.text, self.task, self._asked_at)]
        elif facts.reply is not None:
            self.ask_s = now - self._asked_at
            reply = facts.reply
            answer = reply.answer.strip()
            if not reply.success:
                self.failure = f'the policy server did not answer: {reply.message}'
            elif not answer:
                self.failure = 'the policy answered with empty text; the task stays'
            else:
                self.rounds += 1
                self.answer = answer
                self.generate_ms = reply.generate_ms
                if self.kind in (SUBTASK, STEERING):
                    self.task = answer
                    actions.append(SetTask(answer))
            why = answer_reason(self.answer) if not self.failure else 'a failed query'
        elif now - self._asked_at > self.settings.answer_timeout_s:
            self.failure = (f'no answer within the {self.settings.answer_timeout_s:g} s '
                            'query_answer_timeout_s'
                            + (f' ({self.asks} asks; the server had {self.missing})'
                               if self.missing else ''))
            why = 'a query that timed out'
        else:
            return []
        self._resumed_at = now
        self.phase = Phase.RESUMING
        return actions + [Resume(why), Feedback(Phase.RESUMING.value, self.rounds, self.answer)]

    def _resuming(self, facts: Facts) -> list:
        now = facts.now
        self.cancelled = self.cancelled or facts.cancel
        if not facts.dispatched:
            return []
        self.hold_s += now - self._hold_began
        self.resume_s = now - self._resumed_at
        if self.failure:
            return self._finish('aborted', self.failure, now, held=False)
        if self.cancelled:
            return self._finish('canceled', 'cancelled; resumed from a fresh capture', now,
                                held=False)
        if self.kind == STEERING:
            self.phase = Phase.MOVING
            self._next_round = now + self.settings.steering_period_s
            return [Feedback(Phase.MOVING.value, self.rounds, self.answer)]
        what = 'answered' if self.kind == QUESTION else f'new task {self.task!r}'
        return self._finish('succeeded', f'{what}; resumed from a fresh capture after '
                                         f'{self.hold_s:.2f} s of holding', now, held=False)

    def _finish(self, status: str, message: str, now: float, held: bool = True) -> list:
        if held and self._hold_began is not None and self.phase in (Phase.ASKING,
                                                                    Phase.RESUMING):
            self.hold_s += now - self._hold_began
        self.phase = Phase.DONE
        return [Finish(status, message, self.answer, self.task, self.rounds, self.hold_s,
                       self.ask_s, self.generate_ms, self.resume_s)]
