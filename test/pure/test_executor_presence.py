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

"""Server presence alone: the lease rule at its edges, the tolerance wherever a silence falls in
the presence cycle (only the presence rule can end these runs), and losses by instance."""

import math

import pytest

from remote_inference_py.contract.check import PROTOCOL_VERSION, publishes_presence
from remote_inference_py.contract.presence import (
    presence_period, PRESENCE_SAMPLES_PER_LEASE, presence_tolerance)
from remote_inference_py.executor.server_lease import LossReason, ServerPresence

LEASE = 4.0
PERIOD = presence_period(LEASE)
TOLERANCE = presence_tolerance(LEASE)
TICK = 1.0 / 30.0
EPS = 1e-3


def test_the_documented_numbers():
    assert PRESENCE_SAMPLES_PER_LEASE == 8
    assert (PERIOD, TOLERANCE) == (0.5, 3.5)
    assert presence_tolerance(1.6) == pytest.approx(1.4)


def test_silent_for_exactly_the_lease_is_present_a_hair_longer_is_lost():
    presence = ServerPresence(LEASE)
    presence.admit('a', 10.0)
    assert presence.check(10.0 + LEASE) is None and presence.state == 'alive'
    loss = presence.check(10.0 + LEASE + 1e-9)
    assert loss.reason is LossReason.LEASE_EXPIRED and presence.state == 'lost'
    assert 'policy server instance a lost: nothing of it for 4.00 s' in loss.describe()
    assert presence.check(20.0) is None and presence.heard('a', 20.0, 'x') is None   # once


def run(silence_start, silence_s, kind, chunk_times=()):
    """Simulate a server sampling its presence on its own cadence and an executor ticking.

    The server publishes at ``k * PERIOD`` (absolute deadlines). During the silence nothing
    gets through: a frozen server (``freeze``) publishes the missed sample the moment it
    resumes, a dropped link (``drop``) loses the samples due meanwhile. ``chunk_times`` are
    chunk arrivals of the admitted instance (a sparse chunk cycle). Return the loss (or None)
    over 12 s: nothing but the presence rule can end the run.
    """
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0)
    silence_end = silence_start + silence_s
    arrivals = []
    k = 1
    while k * PERIOD < 12.0:
        t = k * PERIOD
        if silence_start <= t < silence_end:
            if kind == 'freeze' and (not arrivals or arrivals[-1][0] != silence_end):
                arrivals.append((silence_end, 'a presence sample'))
        else:
            arrivals.append((t, 'a presence sample'))
        k += 1
    arrivals += [(t, 'a chunk') for t in chunk_times if not silence_start <= t < silence_end]
    arrivals.sort()
    ticks = [i * TICK for i in range(int(12.0 / TICK))]
    events = sorted([(t, 1, what) for t, what in arrivals] + [(t, 0, None) for t in ticks])
    for t, is_arrival, what in events:
        loss = presence.heard('a', t, what) if is_arrival else presence.check(t)
        if loss is not None:
            return loss
    return None


@pytest.mark.parametrize('kind', ['freeze', 'drop'])
@pytest.mark.parametrize('cycle', [1, 3, 6])   # which sample the silence falls just before
def test_a_silence_up_to_the_tolerance_never_costs_the_session(kind, cycle):
    start = cycle * PERIOD - EPS          # just before the next sample is due
    assert run(start, TOLERANCE, kind) is None
    assert run(start, TOLERANCE, kind, chunk_times=[0.3, 2.9]) is None
    assert run(start, TOLERANCE + 2 * EPS, kind) is not None


@pytest.mark.parametrize('kind', ['freeze', 'drop'])
def test_a_silence_just_above_the_tolerance_is_lost_one_lease_after_the_last_sample(kind):
    start = 3 * PERIOD - EPS
    loss = run(start, TOLERANCE + 2 * EPS, kind)
    assert loss.reason is LossReason.LEASE_EXPIRED
    last_sample = 2 * PERIOD
    assert last_sample + LEASE < loss.at <= last_sample + LEASE + TICK


def test_chunks_do_not_shorten_the_tolerance():
    # Whatever the chunk cycle (here: the last chunk 1.3 s before the freeze, the case the
    # old chunk-liveliness lease lost 2.7 s into a 3 s freeze), the samples carry presence.
    assert run(3.0 - EPS, 3.0, 'freeze', chunk_times=[1.7]) is None
    assert run(3.0 - EPS, TOLERANCE, 'freeze', chunk_times=[1.7]) is None


def test_a_silence_that_ends_after_the_lease_is_lost_even_between_ticks():
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0)
    loss = presence.heard('a', LEASE + 0.01, 'a presence sample')   # no tick checked first
    assert loss.reason is LossReason.LEASE_EXPIRED and 'for 4.01 s' in loss.describe()


@pytest.mark.parametrize('what', ['a presence sample', 'a chunk', 'an answer'])
def test_anything_from_another_instance_loses_the_admitted_one_at_once(what):
    presence = ServerPresence(LEASE)
    presence.admit('old1', 1.0)
    assert presence.heard('old1', 1.1, what) is None
    assert presence.heard('', 1.2, what) is None        # a server that does not say
    loss = presence.heard('new2', 1.3, what)
    assert (loss.reason, loss.admitted, loss.other, loss.at) == (
        LossReason.OTHER_INSTANCE, 'old1', 'new2', 1.3)
    assert loss.describe().startswith(f'policy server instance old1 lost: instance new2 sent '
                                      f'{what} (the server was restarted or replaced')
    assert presence.state == 'lost' and presence.heard('old1', 1.4, what) is None


def test_a_server_that_did_not_say_its_instance_is_not_judged_by_instance():
    presence = ServerPresence(LEASE)
    presence.admit('', 0.0)
    assert presence.heard('x', 0.5, 'a chunk') is None and presence.state == 'alive'
    assert presence.check(0.5 + LEASE + 1e-9).reason is LossReason.LEASE_EXPIRED


def test_a_refusal_names_the_instance_that_refused():
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0)
    loss = presence.refused('a', "session 's1' was released (idle)", 0.5)
    assert loss.reason is LossReason.SESSION_REFUSED
    assert loss.describe() == ("policy server instance a refused this session: session 's1' "
                               'was released (idle)')
    other = ServerPresence(LEASE)
    other.admit('a', 0.0)
    assert other.refused('b', 'not admitted', 0.5).reason is LossReason.OTHER_INSTANCE


def test_before_admission_anything_heard_is_only_seen():
    presence = ServerPresence(LEASE)
    assert presence.state == 'unknown' and presence.silence(1.0) is None
    assert presence.check(math.inf) is None
    assert presence.heard('x', 1.0, 'a presence sample') is None
    assert presence.heard('y', 2.0, 'a presence sample') is None
    assert presence.state == 'alive' and presence.silence(2.5) == 0.5
    assert presence.refused('y', 'no', 3.0) is None


def test_an_older_server_without_samples_is_judged_only_while_it_owes_an_answer():
    # A server of protocol 3 may predate presence samples: admitted, then silent for longer
    # than the lease while nothing is asked (waiting for executor/start, a query's hold) is
    # no loss, as before the samples; once a request went out, a lease without a chunk or an
    # answer is.
    assert not publishes_presence(3) and publishes_presence(PROTOCOL_VERSION)
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0, samples=publishes_presence(3))
    assert presence.check(10 * LEASE) is None and presence.state == 'alive'
    presence.requested(50.0)
    presence.requested(51.0)                                   # still owed since 50.0
    assert presence.check(50.0 + LEASE) is None                # just inside
    assert presence.heard('a', 50.0 + LEASE, 'a chunk') is None
    assert presence.check(100.0) is None, 'answered: nothing owed'
    presence.requested(100.0)
    loss = presence.check(100.0 + LEASE + 1e-9)                # just outside
    assert loss.reason is LossReason.LEASE_EXPIRED
    assert 'nothing of it for 4.00 s after a request' in loss.describe()
    assert 'publishes no presence samples' in loss.describe()


def test_an_older_server_that_samples_after_all_gets_the_full_rule():
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0, samples=False)
    assert presence.heard('a', 1.0, 'a presence sample', sample=True) is None
    assert presence.check(1.0 + LEASE) is None
    assert presence.check(1.0 + LEASE + 1e-9).reason is LossReason.LEASE_EXPIRED


def test_a_server_with_samples_is_judged_by_silence_whatever_is_owed():
    presence = ServerPresence(LEASE)
    presence.admit('a', 0.0)          # protocol 4: samples (the default)
    assert presence.check(LEASE + 1e-9).reason is LossReason.LEASE_EXPIRED


def test_silent_after_two_missed_samples_until_lost_and_never_for_an_older_server():
    presence = ServerPresence(LEASE)
    presence.admit('i1', 0.0)
    assert not presence.silent(2 * PERIOD) and presence.silent(2 * PERIOD + EPS)
    presence.heard('i1', 1.5, 'a presence sample', sample=True)
    assert not presence.silent(1.5 + 2 * PERIOD) and presence.silent(1.5 + 2 * PERIOD + EPS)
    presence.check(1.5 + LEASE + EPS)   # lost: the lease has said it, nothing is pending
    assert presence.state == 'lost' and not presence.silent(1.5 + LEASE + EPS)
    older = ServerPresence(LEASE)
    older.admit('i1', 0.0, samples=False)
    assert not older.silent(LEASE)


@pytest.mark.parametrize('gap, lost', [(2 * TICK - EPS, True), (2 * TICK + EPS, False)])
def test_a_gap_between_ticks_over_two_periods_is_a_stall_counted_as_one_period(gap, lost):
    # The executor's own process stalled (a loaded host froze it): nothing could be heard in
    # the gap, so only one tick period of it counts toward the server's silence. Just under
    # two periods it is ordinary lateness, counted in full.
    presence = ServerPresence(0.5, TICK)
    presence.admit('a', 0.0)
    assert presence.check(0.45) is None
    assert (presence.check(0.45 + gap) is not None) == lost


def test_a_freeze_of_the_whole_host_beyond_the_lease_keeps_the_session():
    # Every process froze 0.6 s, beyond the 0.5 s lease: no tick, no sample. The server's
    # next sample after it keeps the session. A server that stays silent after the freeze is
    # lost within a lease of its end; a server silent while the executor ticks, at the lease.
    frozen = ServerPresence(0.5, TICK)
    frozen.admit('a', 0.0)
    assert frozen.check(TICK) is None
    assert frozen.check(TICK + 0.6) is None                       # the first tick after it
    assert frozen.heard('a', TICK + 0.62, 'a presence sample', sample=True) is None
    assert frozen.state == 'alive'
    silent = ServerPresence(0.5, TICK)
    silent.admit('a', 0.0)
    silent.check(TICK)
    ticks = [TICK + 0.6 + k * TICK for k in range(20)]
    lost_at = [t for t in ticks if silent.check(t) is not None]
    assert lost_at and lost_at[0] <= TICK + 0.6 + 0.5, lost_at
    ticking = ServerPresence(0.5, TICK)
    ticking.admit('a', 0.0)
    assert all(ticking.check(k * TICK) is None for k in range(1, 16))   # 0.5 s
    assert ticking.check(16 * TICK).reason is LossReason.LEASE_EXPIRED
