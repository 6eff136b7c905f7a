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
Run every benchmark in bench/ one after another: ``./run bench``.

Each ``bench_<name>.py`` prints its own markdown tables and writes ``bench/results/<name>.md``;
this runs them in turn, then writes all results into one document, ``bench/results/README.md``
(date, machine, every table), prints it, and exits non-zero if a benchmark failed. Benchmarks
measure, they do not pass or fail. Budget: under 15 minutes on a 2-core machine. Soaks and
other long runs (``SOAKS``: the presence soak, 40 minutes and more; the discovery benchmark,
which starts up to 32 processes per cell, 18 minutes on a loaded machine) run only by name:
``./run bench presence``, ``./run bench discovery``; so does the GPU benchmark, which refuses a
machine without CUDA: ``./run bench gpu`` (docs/gpu.md).

``python bench/run_all.py NAME ...`` runs only those benchmarks. ``--smoke`` runs each in its
smoke mode (bench/smoke.py), soaks included, with every result in one folder outside
bench/results: the test suite's check that the benchmarks still run
(test/ros/test_bench_smoke.py).
"""

import argparse
import os
import pathlib
import platform
import subprocess
import sys
import time

import smoke

SOAKS = ('bench_presence.py', 'bench_discovery.py')
BY_NAME_ONLY = SOAKS + ('bench_gpu.py',)   # bench_gpu measures a GPU: ./run bench gpu


def main(argv=None):
    """Run each bench_*.py (or those named) in its own process."""
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('names', nargs='*', help='benchmarks to run (bench_NAME.py); all')
    options = smoke.parse_args(parser, argv)
    scripts = sorted(here.glob('bench_*.py'))
    if options.names:
        known = {script.stem[len('bench_'):]: script for script in scripts}
        unknown = [name for name in options.names if name not in known]
        if unknown:
            parser.error(f'no benchmark {", ".join(unknown)} in {here}; known: '
                         f'{", ".join(known)}')
        scripts = [known[name] for name in options.names]
    elif not options.smoke:
        scripts = [script for script in scripts if script.name not in BY_NAME_ONLY]
    results = smoke.results_dir(options)
    env = dict(os.environ, **{smoke.RESULTS_ENV: str(results)}) if options.smoke else None
    failed = []
    begin = time.monotonic()
    for script in scripts:
        print(f'\n# {script.stem}\n', flush=True)
        start = time.monotonic()
        command = [sys.executable, str(script)] + (['--smoke'] if options.smoke else [])
        if subprocess.run(command, env=env).returncode != 0:
            failed.append(script.name)
        print(f'\n({script.stem}: {time.monotonic() - start:.0f} s)', flush=True)
    parts = [f'# Benchmark results\n\n{time.strftime("%Y-%m-%d")}, {platform.machine()}, '
             f'{os.cpu_count()} cores, Python {platform.python_version()}; '
             f'`./run bench{" --smoke" if options.smoke else ""}` took '
             f'{time.monotonic() - begin:.0f} s.\n']
    for script in sorted(here.glob('bench_*.py')):
        name = script.stem[len('bench_'):]
        path = results / f'{name}.md'
        if path.exists():
            parts.append('\n' + path.read_text())
    (results / 'README.md').write_text('\n'.join(parts))
    print('\n'.join(parts))
    if failed:
        sys.exit(f'failed: {", ".join(failed)}')


if __name__ == '__main__':
    main()
