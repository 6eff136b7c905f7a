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
The smoke mode every benchmark shares: ``--smoke`` runs it in seconds at tiny sizes.

A smoke run goes through the same code as the measurement (the same processes, messages,
tables and plots) with the fewest cells, the shortest windows and the smallest models each
benchmark names in its call to :func:`parse_args`; its numbers mean nothing. It writes its
results into ``$RI_BENCH_RESULTS_DIR`` (or a fresh temporary folder), never into
bench/results. The test suite runs every benchmark this way (test/ros/test_bench_smoke.py), so a
change that breaks a benchmark fails there rather than at the next measurement.
"""

import os
import pathlib
import shlex
import sys
import tempfile
import time

BENCH = pathlib.Path(__file__).resolve().parent
RESULTS_ENV = 'RI_BENCH_RESULTS_DIR'
HELP = ('check that the benchmark runs: a few seconds at tiny sizes, numbers meaningless; '
        f'results go to ${RESULTS_ENV} or a temporary folder, not bench/results')


def parse_args(parser, argv=None, **tiny):
    """
    Add ``--smoke`` to ``parser`` and parse ``argv``.

    With ``--smoke``, every option named in ``tiny`` takes the value given there, whatever the
    command line said; ``tiny`` may only name options the parser has.
    """
    parser.add_argument('--smoke', action='store_true', help=HELP)
    options = parser.parse_args(argv)
    unknown = sorted(set(tiny) - set(vars(options)))
    if unknown:
        raise ValueError(f'smoke settings {unknown} are not options of {parser.prog}')
    if options.smoke:
        for name, value in tiny.items():
            setattr(options, name, value)
    return options


def results_dir(options):
    """Where a run writes its results: bench/results, or outside the repository when smoking."""
    if getattr(options, 'results_folder', None) is not None:   # one folder per run
        return options.results_folder
    if not options.smoke:
        folder = BENCH / 'results'
    elif os.environ.get(RESULTS_ENV):
        folder = pathlib.Path(os.environ[RESULTS_ENV])
    else:
        folder = pathlib.Path(tempfile.mkdtemp(prefix='bench_smoke_'))
    folder.mkdir(parents=True, exist_ok=True)
    options.results_folder = folder
    return folder


def command(script, argv=None):
    """Return the ``./run bench`` command line that runs ``script`` with ``argv``."""
    argv = sys.argv[1:] if argv is None else argv
    name = pathlib.Path(script).stem.removeprefix('bench_')
    return ' '.join(['./run', 'bench', name, *map(shlex.quote, argv)])


def write_results(options, filename, text, script, argv=None):
    """Write a results page whose second paragraph says which command wrote it, and when."""
    title, _, rest = text.partition('\n')
    stamp = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    path = results_dir(options) / filename
    path.write_text(f'{title}\n\n`{command(script, argv)}`, {stamp}\n\n{rest.lstrip()}')
    return path
