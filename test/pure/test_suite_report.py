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

"""tools/suite_report.py: the report ./run test --under-load prints from the cost log."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'tools'))
import suite_report  # noqa: E402,I100

LOG = ('1.50\t0.40\ttest/ros/test_a.py::test_slow\n'
       '0.10\t0.05\ttest/pure/test_b.py::test_fast\n'
       'rerun\tcall\ttest/ros/test_a.py::test_slow\tAssertionError: no chunk in 5 s\n'
       '1.20\t0.30\ttest/ros/test_a.py::test_slow\n')


def test_a_test_that_passed_only_on_a_rerun_is_named_and_fails_the_report(tmp_path, capsys):
    log = tmp_path / 'cost.tsv'
    log.write_text(LOG)
    assert suite_report.main([str(log), '--top', '1']) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == '2 tests: 3 s of test wall time, 1 CPU-s (workers overlap)'
    assert '     2.7      0.7  test/ros/test_a.py::test_slow' in out   # both runs counted
    assert 'test_fast' not in out   # --top 1
    assert '1 passed only when run again (timing-sensitive under load):\n' \
           '  test/ros/test_a.py::test_slow\n      first run: AssertionError: no chunk in 5 s' \
           in out


def test_a_clean_run_passes_and_a_failure_is_listed_once(tmp_path, capsys):
    log = tmp_path / 'cost.tsv'
    log.write_text('0.10\t0.05\ttest/pure/test_b.py::test_fast\n')
    assert suite_report.main([str(log)]) == 0
    assert capsys.readouterr().out.endswith('no failure, no rerun\n')
    log.write_text(LOG + 'failed\tcall\ttest/ros/test_a.py::test_slow\n'
                   'failed\t???\ttest/tools/test_c.py::test_crash\n')
    assert suite_report.main([str(log)]) == 1
    out = capsys.readouterr().out
    assert 'passed only when run again' not in out
    assert '2 failed:\n  test/ros/test_a.py::test_slow (call)\n' \
           '  test/tools/test_c.py::test_crash (???)' in out


def test_a_malformed_log_is_named(tmp_path, capsys):
    log = tmp_path / 'cost.tsv'
    log.write_text('1.0 test_x\n')
    assert suite_report.main([str(log)]) == 2
    assert f'{log}:1: expected 3 tab-separated fields' in capsys.readouterr().err
