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

"""Who drives the follower: the follow step at its edges, and the supervisor's switching.

fps = 10 and two joints, as in test_executor_supervisor.py; the clock is the test's. The
follower's limits are [-1, 1] rad, ``max_step_rad`` 0.2 and the catch-up 0.5 rad/s (0.05 rad
per tick) until every joint is within 0.05 rad of the leader.
"""

from types import SimpleNamespace

from core_fixtures import FPS, JOINTS, make_chunk
import numpy as np
import pytest
from supervisor_fixtures import admit, io, kinds, sent_values

from remote_inference_py.executor import supervisor as sv
from remote_inference_py.executor.config import ExecutorConfig, NodeSettings
from remote_inference_py.executor.core import State
from remote_inference_py.executor.driver import Driver, follow_step, FollowLimits
from remote_inference_py.executor.handshake import Log

LIMITS = FollowLimits(lower=(-1.0, -1.0), upper=(1.0, 1.0), max_step_rad=0.2,
                      catch_up_step_rad=0.05, catch_up_tolerance_rad=0.05)


# ----------------------------------------------------------------------------- the step

def test_a_leader_just_inside_a_limit_is_reached_and_one_just_outside_is_clamped():
    previous = np.array([0.95, -0.95])
    assert follow_step(previous, [0.999, -0.999], (-1, -1), (1, 1), 0.2).tolist() == \
        pytest.approx([0.999, -0.999])
    assert follow_step(previous, [1.001, -1.5], (-1, -1), (1, 1), 0.2).tolist() == [1.0, -1.0]


def test_a_far_leader_moves_each_joint_by_at_most_the_step_and_never_past_the_leader():
    step = follow_step(np.zeros(2), [0.9, 0.01], (-1, -1), (1, 1), 0.2)
    assert step.tolist() == pytest.approx([0.2, 0.01])   # bounded; the near joint arrives
    assert follow_step(np.zeros(2), [-0.2, 0.2], (-1, -1), (1, 1), 0.2).tolist() == \
        pytest.approx([-0.2, 0.2])                        # exactly one step: reached


def test_the_catch_up_is_slow_and_bounded_then_the_follower_follows_at_full_rate():
    driver = Driver(JOINTS, LIMITS, leader_timeout_s=0.2)
    driver.take()
    driver.on_leader([0.5, 0.0], now=0.0)
    previous, steps = np.zeros(2), []
    for k in range(12):
        target, problem = driver.target(previous, now=0.0)
        assert problem == ''
        steps.append(float(np.max(np.abs(target - previous))))
        previous = target
    assert steps[:9] == pytest.approx([0.05] * 9)   # 0.45 rad at the catch-up speed
    assert not driver.catching_up                   # within 0.05: following
    assert previous.tolist() == pytest.approx([0.5, 0.0])
    driver.on_leader([0.9, 0.0], now=0.1)           # the human moves fast: full rate now
    target, _ = driver.target(previous, now=0.1)
    assert target.tolist() == pytest.approx([0.7, 0.0])


@pytest.mark.parametrize('silence, holds', [(0.2, False), (0.2001, True)])
def test_a_leader_silent_just_past_its_timeout_holds_the_follower(silence, holds):
    driver = Driver(JOINTS, LIMITS, leader_timeout_s=0.2)
    driver.take()
    driver.on_leader([0.01, 0.0], now=1.0)
    target, problem = driver.target(np.zeros(2), now=1.0 + silence)
    assert (target is None) == holds
    assert problem.startswith('leader silent: no leader/joint_states for 0.20 s') == holds
    if holds:
        assert driver.catching_up   # after a hold, the follower catches up again


def test_leader_faults_and_bad_samples_are_named_and_hold_the_follower():
    driver = Driver(JOINTS, LIMITS, leader_timeout_s=0.2)
    driver.take()
    assert driver.target(np.zeros(2), 0.0) == (
        None, 'leader not heard (no valid leader/joint_states yet)')
    driver.on_leader([0.0, 0.0], 0.0)
    driver.on_leader_fault("leader unplugged: port '/dev/ttyACM1' gone")
    assert driver.target(np.zeros(2), 0.0) == (
        None, "leader fault: leader unplugged: port '/dev/ttyACM1' gone")
    driver.on_leader_fault('')
    assert driver.target(np.zeros(2), 0.0)[1] == ''
    assert driver.on_leader([float('nan'), 0.0], 0.05) == (
        "leader/joint_states: non-finite position for joint 'j1'")
    assert driver.target(np.zeros(2), 0.05)[0] is None   # not the stale sample
    assert driver.on_leader([0.0], 0.1) == (
        'leader/joint_states has 1 positions but joint_names has 2')


# ----------------------------------------------------------------------------- the supervisor

def make(now=0.0, **settings):
    config = ExecutorConfig(joint_names=JOINTS, fps=FPS, max_step_rad=0.2,
                            joint_lower_limits=[-1.0, -1.0], joint_upper_limits=[1.0, 1.0])
    settings.setdefault('deployment', 'so101')
    settings.setdefault('autostart', True)
    return sv.Supervisor(config, NodeSettings(**settings), '/executor', now)


def running(sup):
    """Admit, measure and run `sup` on a chunk of 0.01, 0.02, ...; tick 0.1 .. 0.3."""
    sup.on_measured(np.zeros(2))
    request = next(a for a in admit(sup, 0.0) if isinstance(a, sv.SendRequest))
    sup.sent(SimpleNamespace(request_id=request.order.request_id, session_id='s1'), 0.0)
    sup.on_answer(sv.Answer('s1', request.order.request_id, 'i1', '', False, make_chunk(
        request.order.request_id, 0.01, [0.01 * k for k in range(1, 40)])), '', 0.05)
    sent = []
    for k in range(1, 4):
        sent += sent_values(sup.tick(0.1 * k, io()))
    return sent


def requests(actions):
    return [a for a in actions if isinstance(a, sv.SendRequest)]


def test_the_human_takes_over_from_the_last_sent_target_and_the_plan_is_drained():
    sup = make()
    assert running(sup) == [0.01, 0.02, 0.03]
    sup.on_leader([0.3, 0.0], 0.3)
    assert sup.set_driver(True, 0.31) == (True, 'the human drives')
    assert sup.core.stats().requests_in_flight == 0 and sup.core.paused
    sent = []
    for k in range(4, 12):
        sup.on_leader([0.3, 0.0], 0.1 * k)
        actions = sup.tick(0.1 * k, io())
        assert requests(actions) == []            # no request while the human drives
        sent += sent_values(actions)
    # From 0.03 (never back to the plan), 0.05 rad per tick up to 0.3, then followed.
    assert sent == pytest.approx([0.08, 0.13, 0.18, 0.23, 0.28, 0.3, 0.3, 0.3])
    assert sup.driver.holding == '' and not sup.driver.catching_up


def test_the_hand_back_moves_only_from_a_capture_taken_after_it():
    sup = make()
    running(sup)
    sup.on_leader([0.1, 0.0], 0.3)
    sup.set_driver(True, 0.3)
    for k in range(4, 8):
        sup.on_leader([0.1, 0.0], 0.1 * k)
        sup.tick(0.1 * k, io())
    assert sup.set_driver(False, 0.75) == (True, 'the policy drives again from a fresh capture')
    actions = sup.tick(0.8, io())
    assert sent_values(actions) == pytest.approx([0.1])   # holds the human's last target
    request = requests(actions)[0].order
    assert request.earliest_capture_time >= 0.75
    # A chunk captured before the hand-back (the policy's old plan) is never replayed.
    sup.on_answer(sv.Answer('s1', request.request_id, 'i1', '', False, make_chunk(
        request.request_id, 0.7, [0.5] * 20)), '', 0.82)
    assert sent_values(sup.tick(0.9, io())) == pytest.approx([0.1])
    assert sup.core.state == State.WAITING


def test_a_leader_fault_holds_the_follower_and_is_named_once():
    sup = make()
    running(sup)
    sup.on_leader([0.5, 0.0], 0.3)
    sup.set_driver(True, 0.3)
    sup.tick(0.4, io())
    logs = sup.on_leader_fault("leader motor silent: motor 'elbow_flex' (id 3) no reply")
    assert logs == [Log('error', "leader arm fault: leader motor silent: motor 'elbow_flex' "
                                 '(id 3) no reply; the follower holds')]
    held = []
    for k in range(5, 9):
        sup.on_leader([0.9, 0.0], 0.1 * k)        # samples after a fault are not followed
        actions = sup.tick(0.1 * k, io())
        held += sent_values(actions)
        if k == 5:
            assert Log('error', 'the follower holds: leader fault: leader motor silent: motor '
                                "'elbow_flex' (id 3) no reply") in actions
            assert kinds(actions, 'PublishStatus') == ['PublishStatus']
    assert held == pytest.approx([0.08] * 4)
    assert sup.on_leader_fault('') == [Log('info', 'leader arm healthy again')]
    actions = sup.tick(0.9, io())
    assert sent_values(actions) == pytest.approx([0.13])   # catching up again, bounded
    assert Log('info', 'following the leader arm (catching up first)') in actions


def test_who_drives_is_refused_by_name_when_it_cannot_switch():
    sup = make(autostart=False)
    assert sup.set_driver(True, 0.0) == (
        False, 'motion has not started (state IDLE): start it first, or launch with '
               'driver:=human')
    assert sup.set_driver(False, 0.0) == (True, 'the policy already drives')
    sup = make()
    running(sup)
    assert sup.begin_query('goal', 'question', 'where?') == ''
    assert sup.set_driver(True, 0.3) == (
        False, 'a query is running (executor/query): cancel it first')
    sup = make()
    running(sup)
    sup.set_driver(True, 0.3)
    assert sup.begin_query('goal', 'question', 'where?') == (
        'the human drives (executor/set_driver): hand back to the policy first')


def test_driver_human_at_launch_hands_over_as_motion_starts():
    sup = make(driver='human')
    sup.on_measured(np.zeros(2))
    actions = admit(sup, 0.0)
    assert Log('info', 'the human on the leader arm drives (driver human)') in actions
    assert sup.driver.human and sup.core.paused
    assert requests(actions) == []                # nothing asked of the policy
    assert Log('error', 'the follower holds: leader not heard (no valid leader/joint_states '
                        'yet)') in actions
    sup.on_leader([0.02, 0.0], 0.1)
    assert sent_values(sup.tick(0.1, io())) == pytest.approx([0.02])


def test_a_bad_driver_parameter_is_refused_by_name():
    with pytest.raises(ValueError, match='driver'):
        NodeSettings(deployment='so101', driver='robot')
