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
Report a test run from its cost log: the time of each test, and every failure and rerun.

``RI_TEST_COST_LOG=FILE ./run test`` writes one line per test (wall seconds, CPU seconds,
node id) and one per failed or rerun phase (``failed``/``rerun``, the phase, node id, why);
``./run test --under-load`` writes it and runs this script after the suite. A test that
passed only when run again is what this report is for: it passes on a quiet machine and
fails on a busy one, so it is listed, and the exit status is 1, as for a failure.

    python tools/suite_report.py FILE [--top N]
"""

import argparse
import collections
import sys


def read(path):
    """Return ({node id: (wall, cpu)}, [(outcome, phase, node id, why)]) from a cost log."""
    costs, events = {}, []
    with open(path) as log:
        for number, line in enumerate(log, 1):
            fields = line.rstrip('\n').split('\t')
            if fields[0] in ('failed', 'rerun') and len(fields) in (3, 4):
                events.append((*fields[:3], fields[3] if len(fields) == 4 else ''))
                continue
            if len(fields) != 3:
                raise ValueError(f'{path}:{number}: expected 3 tab-separated fields: {line!r}')
            wall, cpu = float(fields[0]), float(fields[1])
            before = costs.get(fields[2], (0.0, 0.0))   # a rerun test is logged again
            costs[fields[2]] = (before[0] + wall, before[1] + cpu)
    return costs, events


def report(costs, events, top=15):
    """Return the report's lines and whether the run was clean (no failure, no rerun)."""
    lines = [f'{len(costs)} tests: {sum(w for w, _ in costs.values()):.0f} s of test wall '
             f'time, {sum(c for _, c in costs.values()):.0f} CPU-s (workers overlap)']
    lines.append(f'the {min(top, len(costs))} longest (wall s, CPU s):')
    for nodeid, (wall, cpu) in sorted(costs.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f'  {wall:8.1f} {cpu:8.1f}  {nodeid}')
    by_kind = collections.defaultdict(list)
    why = {}
    for outcome, phase, nodeid, reason in events:
        by_kind[outcome].append(f'{nodeid} ({phase})')
        why.setdefault(nodeid, reason)
    failed_ids = {nodeid for outcome, _, nodeid, _ in events if outcome == 'failed'}
    flaky = sorted({n for o, _, n, _ in events if o == 'rerun'} - failed_ids)
    if flaky:
        lines.append(f'{len(flaky)} passed only when run again (timing-sensitive under load):')
        for nodeid in flaky:
            reason = f'\n      first run: {why[nodeid]}' if why[nodeid] else ''
            lines.append(f'  {nodeid}{reason}')
    if failed_ids:
        lines.append(f'{len(failed_ids)} failed:')
        lines += [f'  {entry}' for entry in sorted(set(by_kind['failed']))]
    if not flaky and not failed_ids:
        lines.append('no failure, no rerun')
    return lines, not flaky and not failed_ids


def main(argv=None):
    """Print the report of a cost log; exit 1 after a failure or a rerun."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('log', help='the file RI_TEST_COST_LOG named')
    parser.add_argument('--top', type=int, default=15, help='longest tests to list')
    args = parser.parse_args(argv)
    try:
        costs, events = read(args.log)
    except (OSError, ValueError) as error:
        print(f'suite_report: {error}', file=sys.stderr)
        return 2
    lines, clean = report(costs, events, args.top)
    print('\n'.join(lines))
    return 0 if clean else 1


if __name__ == '__main__':
    sys.exit(main())
