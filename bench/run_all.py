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
this prints them in turn and exits non-zero if one failed. Benchmarks measure, they do not
pass or fail, and CI does not run them.
"""

import pathlib
import subprocess
import sys
import time


def main():
    """Run each bench_*.py in its own process."""
    here = pathlib.Path(__file__).resolve().parent
    failed = []
    for script in sorted(here.glob('bench_*.py')):
        print(f'\n# {script.stem}\n', flush=True)
        start = time.monotonic()
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
        print(f'\n({script.stem}: {time.monotonic() - start:.0f} s)', flush=True)
    if failed:
        sys.exit(f'failed: {", ".join(failed)}')


if __name__ == '__main__':
    main()
