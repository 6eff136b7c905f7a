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
Who drives the follower: the policy, or a human on the leader arm. Pure (no ROS, no clock).

The executor's supervisor owns one :class:`Driver`. The rules (docs/recording.md, "A human on
the leader arm"):

- policy -> human: the supervisor pauses the core (the buffered plan is discarded, the
  requests in flight are drained, as for a query), then each tick asks :meth:`Driver.target`
  for the next follower target and holds it;
- the target follows the leader rate-limited: clamped to the follower's joint limits, and
  moving at most ``max_step_rad`` per control tick and joint (the follower's limit). When the
  leader is far from the follower (more than ``catch_up_tolerance_rad`` on some joint) at the
  hand-over or after a leader fault, the follower first catches up at ``catch_up_speed_rad_s``
  (bounded per tick as well), and follows at the full rate once within the tolerance: never a
  jump;
- a leader fault (its node names one: unplugged, a motor silent, a reply corrupt), a leader
  silent for longer than ``leader_timeout_s`` or a non-finite leader sample holds the follower
  where it is (:meth:`Driver.target` returns no target and the reason);
- human -> policy: the supervisor resumes the core, which moves again only from a chunk
  computed on a capture taken after the hand-back; nothing planned before is replayed.
"""

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

POLICY = 'policy'
HUMAN = 'human'
DRIVERS = (POLICY, HUMAN)
"""Who may drive the follower (the executor's ``driver`` parameter and executor/set_driver)."""


@dataclass(frozen=True)
class FollowLimits:
    """How the follower may follow the leader: joint limits [rad] and speeds."""

    lower: Tuple[float, ...]
    upper: Tuple[float, ...]
    max_step_rad: float           # per control tick and joint, while following
    catch_up_step_rad: float      # per control tick and joint, while catching up
    catch_up_tolerance_rad: float   # within this on every joint: following


def follow_step(previous: np.ndarray, leader: np.ndarray, lower: Sequence[float],
                upper: Sequence[float], max_step: float) -> np.ndarray:
    """Return the next target: `previous` moved toward `leader` by at most `max_step`.

    The leader is clamped to [`lower`, `upper`] first, so a leader beyond a follower's limit
    drives the follower to that limit and no further. Each joint moves independently (a
    far joint does not slow the others); ``max_step`` bounds every joint's change.
    """
    previous = np.asarray(previous, dtype=np.float64)
    goal = np.clip(np.asarray(leader, dtype=np.float64), lower, upper)
    return previous + np.clip(goal - previous, -max_step, max_step)


class Driver:
    """Who drives, the leader's latest sample and health, and the follow step."""

    def __init__(self, joint_names: Sequence[str], limits: FollowLimits,
                 leader_timeout_s: float):
        """Start with the policy driving and no leader sample."""
        self.joint_names = tuple(joint_names)
        self.limits = limits
        self.leader_timeout_s = float(leader_timeout_s)
        self.driver = POLICY
        self.leader: Optional[np.ndarray] = None
        self.leader_time: Optional[float] = None
        self.leader_fault = ''        # as the leader's node named it; '' healthy
        self.catching_up = True
        self.holding = ''             # why the follower holds under the human ('' following)

    @property
    def human(self) -> bool:
        """Return True while the human on the leader arm drives."""
        return self.driver == HUMAN

    def configure(self, limits: FollowLimits, leader_timeout_s: float) -> None:
        """Use new limits (live parameter changes) from the next step on."""
        self.limits, self.leader_timeout_s = limits, float(leader_timeout_s)

    def on_leader(self, positions, now: float) -> str:
        """Store a leader sample [rad, config order] taken at `now`; return an error or ''."""
        vector = np.asarray(positions, dtype=np.float64).reshape(-1)
        if vector.shape != (len(self.joint_names),):
            return (f'leader/joint_states has {vector.size} positions but joint_names has '
                    f'{len(self.joint_names)}')
        bad = np.flatnonzero(~np.isfinite(vector))
        if bad.size:
            self.leader = None
            name = self.joint_names[bad[0]]
            return f"leader/joint_states: non-finite position for joint '{name}'"
        self.leader, self.leader_time = vector, now
        return ''

    def on_leader_fault(self, fault: str) -> None:
        """Note the leader node's fault ('' once healthy again)."""
        self.leader_fault = fault

    def take(self) -> None:
        """Let the human drive from now on: catch up first."""
        self.driver, self.catching_up, self.holding = HUMAN, True, ''

    def hand_back(self) -> None:
        """Let the policy drive from now on."""
        self.driver, self.holding = POLICY, ''

    def problem(self, now: float) -> str:
        """Return why the leader cannot be followed at `now`, or ''."""
        if self.leader_fault:
            return f'leader fault: {self.leader_fault}'
        if self.leader is None or self.leader_time is None:
            return 'leader not heard (no valid leader/joint_states yet)'
        silent = now - self.leader_time
        if silent > self.leader_timeout_s:
            return (f'leader silent: no leader/joint_states for {silent:.2f} s (more than '
                    f'leader_timeout_s {self.leader_timeout_s:g} s)')
        return ''

    def target(self, previous: np.ndarray, now: float) -> Tuple[Optional[np.ndarray], str]:
        """Return (the next follower target or None to hold, the hold's reason or '').

        ``previous`` is the last target sent. After a hold the follower catches up again.
        """
        problem = self.problem(now)
        if problem:
            self.catching_up = True
            return None, problem
        lim = self.limits
        goal = np.clip(self.leader, lim.lower, lim.upper)
        if self.catching_up and np.max(np.abs(goal - previous)) <= lim.catch_up_tolerance_rad:
            self.catching_up = False
        step = (min(lim.catch_up_step_rad, lim.max_step_rad) if self.catching_up
                else lim.max_step_rad)
        return follow_step(previous, self.leader, lim.lower, lim.upper, step), ''
