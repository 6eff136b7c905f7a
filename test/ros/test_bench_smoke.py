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
Every benchmark still runs: each one's smoke mode (bench/smoke.py) as a subprocess.

A smoke run goes through the benchmark's real code (its nodes over DDS, models, tables and
plots) at tiny sizes for a few seconds, so a change that breaks a benchmark fails here and
not at the next measurement. Its numbers are not checked (benchmarks measure, tests do not):
only that it exits 0, prints a markdown table, writes its results where it is told and
leaves bench/results alone. The benchmarks are found by name (bench/bench_*.py), so a new
one is smoke-tested without a change here.
"""

import os
import pathlib
import re
import resource
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / 'bench'
sys.path.insert(0, str(BENCH))

import smoke  # noqa: E402,I100 - bench/ is not a package

BENCHMARKS = sorted(path.stem[len('bench_'):] for path in BENCH.glob('bench_*.py'))
PRINTS_ONLY = {'servo_bus'}   # prints its table, writes no results file
# One domain per cell: the run's spare block (test/conftest.py), not the next workers' domains.
DOMAIN_PER_CELL = {'transport'}
TABLE = re.compile(r'^\|.*\|\n\|(:?---+:?\|)+$', re.M)   # a header, then |---|, |---:| ...
TIMEOUT_S = 600   # a smoke run takes seconds; the bound only stops a hung one


def results_snapshot():
    return {path.name: path.stat().st_mtime_ns for path in (BENCH / 'results').iterdir()}


def run_bench(args, results_dir, domain=None):
    env = dict(os.environ, **{smoke.RESULTS_ENV: str(results_dir),
                              'RI_BENCH_DOMAIN_ID': domain or os.environ['ROS_DOMAIN_ID'],
                              'HF_HUB_OFFLINE': '1'})
    began, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f'{" ".join(args)}: {time.monotonic() - began:.1f} s, CPU '
          f'{after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime:.1f} s, load '
          f'{os.getloadavg()[0]:.1f}')
    return done


def test_the_benchmarks_are_found():
    assert {'executor', 'transport', 'servo_bus'} <= set(BENCHMARKS)


@pytest.mark.parametrize('name', BENCHMARKS)
def test_a_benchmark_runs_in_its_smoke_mode(name, tmp_path):
    before = results_snapshot()
    done = run_bench([f'bench/bench_{name}.py', '--smoke'], tmp_path,
                     os.environ['RI_TEST_SPARE_DOMAIN'] if name in DOMAIN_PER_CELL else None)
    assert done.returncode == 0, f'{name} --smoke failed:\n{done.stdout[-3000:]}\n' \
                                 f'{done.stderr[-3000:]}'
    assert TABLE.search(done.stdout), f'{name} --smoke printed no table:\n{done.stdout}'
    if name not in PRINTS_ONLY:
        assert (tmp_path / f'{name}.md').is_file(), sorted(os.listdir(tmp_path))
    assert results_snapshot() == before, 'a smoke run wrote into bench/results'


def test_run_all_smokes_the_named_benchmarks_into_one_document(tmp_path):
    done = run_bench(['bench/run_all.py', '--smoke', 'servo_bus'], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '# bench_servo_bus' in done.stdout and TABLE.search(done.stdout)
    assert '`./run bench --smoke` took' in (tmp_path / 'README.md').read_text()


def test_run_all_names_an_unknown_benchmark(tmp_path):
    done = run_bench(['bench/run_all.py', '--smoke', 'servo_bus', 'warp_drive'], tmp_path)
    assert done.returncode == 2
    assert 'no benchmark warp_drive' in done.stderr
    assert not (tmp_path / 'README.md').exists()


def test_smoke_settings_must_name_options_of_the_benchmark():
    import argparse
    parser = argparse.ArgumentParser(prog='bench_x.py')
    parser.add_argument('--seconds', type=float, default=8.0)
    assert smoke.parse_args(parser, ['--smoke'], seconds=0.5).seconds == 0.5
    parser = argparse.ArgumentParser(prog='bench_x.py')
    parser.add_argument('--seconds', type=float, default=8.0)
    assert smoke.parse_args(parser, ['--seconds', '3'], seconds=0.5).seconds == 3.0
    parser = argparse.ArgumentParser(prog='bench_x.py')
    with pytest.raises(ValueError, match=r"\['rounds'\] are not options of bench_x.py"):
        smoke.parse_args(parser, [], rounds=1)
