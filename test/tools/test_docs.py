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

"""The documentation: the site under docs/ builds without a warning, and what it names exists.

Sphinx + MyST (``requirements-docs.txt``, installed by ``./run test``) builds ``docs/`` into a
temporary folder with warnings as errors and every cross-reference checked (``nitpicky``): a
page in no toctree, a broken link between pages or to a heading, a missing image or included
results file fails. External links are never fetched. Beside the build: the README stays a
short router whose first code block is the two commands, every results file of
``bench/results`` has its page, every repository path the docs name in backticks exists, and
``CHANGELOG.rst`` parses as a ROS (catkin_pkg) changelog.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest
from ros_fixtures import batch_priority

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs'
README = ROOT / 'README.md'
RESULTS = ROOT / 'bench' / 'results'
# Top-level folders and files of the repository: a backticked word starting with one of these
# is a path the docs promise exists.
TOP = ('src/', 'test/', 'tools/', 'bench/', 'config/', 'docs/', 'launch/', 'msg/', 'srv/',
       'action/', '.ci/')
ROOT_FILES = re.compile(r'^(requirements[-a-z]*\.txt|constraints-ros-apt\.txt|package\.xml|'
                        r'CMakeLists\.txt|colcon\.meta|setup\.cfg|pytest\.ini|CHANGELOG\.rst)$')
# Paths inside other projects, named as they are there.
EXTERNAL = ('lerobot/',)
# A path relative to the Python package (``executor/config.py``) is checked there too.
PACKAGE = ROOT / 'src' / 'remote_inference_py'


def doc_texts():
    """Return ``{path: text}`` of the hand-written docs (not the included results files)."""
    texts = {README: README.read_text(), ROOT / 'CHANGELOG.rst': (ROOT / 'CHANGELOG.rst')
             .read_text()}
    for page in sorted(DOCS.glob('*.md')):
        texts[page] = page.read_text()
    return texts


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip('sphinx', reason='pip install -r requirements-docs.txt (./run test does)')
    pytest.importorskip('myst_parser')
    out = tmp_path / 'html'
    # No proxy reaches anything: a page that made Sphinx fetch a URL would fail here.
    env = dict(os.environ, http_proxy='http://127.0.0.1:9', https_proxy='http://127.0.0.1:9')
    result = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-b', 'html',
         '-d', str(tmp_path / 'doctrees'), str(DOCS), str(out)],
        cwd=ROOT, capture_output=True, text=True, env=env, preexec_fn=batch_priority)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not result.stderr.strip(), result.stderr
    built = {p.relative_to(out).with_suffix('').as_posix() for p in out.rglob('*.html')}
    pages = {p.relative_to(DOCS).with_suffix('').as_posix() for p in DOCS.rglob('*.md')
             if '_build' not in p.parts}
    assert pages <= built, f'pages not built: {sorted(pages - built)}'
    assert 'demo_run.webp' in (out / 'first-run.html').read_text()


def test_the_configuration_fetches_nothing_and_checks_every_reference():
    conf = {}
    exec(compile((DOCS / 'conf.py').read_text(), 'conf.py', 'exec'), conf)
    assert conf['nitpicky'] is True
    assert conf['extensions'] == ['myst_parser'], 'no extension that fetches (intersphinx)'
    assert conf['myst_heading_anchors'] >= 2, 'links to headings of other pages resolve'


def test_the_readme_is_a_short_router_that_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    block = re.search(r'```bash\n(.*?)```', text, re.S).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith('#')]
    assert commands[0].startswith('./run demo')
    assert commands[1].startswith('./run test')
    for target in re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text):
        if not target.startswith(('http://', 'https://')):
            assert (ROOT / target).exists(), f'README links to {target}, which does not exist'
    linked = set(re.findall(r'\]\(docs/([a-z0-9-]+)\.md\)', text))
    index = (DOCS / 'index.md').read_text()
    assert linked <= set(re.findall(r'^([a-z0-9-]+)$', index, re.M)), 'README pages in the site'


def test_every_results_file_has_its_page():
    for result in sorted(RESULTS.glob('*.md')):
        if result.name == 'README.md':   # all tables at once, written by bench/run_all.py
            continue
        page = DOCS / 'results' / result.name
        assert page.is_file(), f'{result.name} has no page: add docs/results/{result.name} ' \
            f'(an include of ../../bench/results/{result.name}) and list it in a toctree'
        assert f'../../bench/results/{result.name}' in page.read_text()


def test_every_results_file_says_its_date_and_command():
    # A figure the docs show comes with when and how it was measured (bench/smoke.py writes
    # both; the gpu page waits for its device run and says so).
    undated = []
    for result in sorted(RESULTS.glob('*.md')):
        head = result.read_text()[:2000]
        if 'device run pending' in head:
            continue
        if not re.search(r'\b20\d\d-\d\d-\d\d\b', head) or \
                not re.search(r'`(\./run|evaluate|python)\b[^`]*`', head):
            undated.append(result.name)
    assert not undated, f'results without a date or a command near the top: {undated}'


def test_every_repository_path_the_docs_name_exists():
    missing = []
    for path, text in doc_texts().items():
        for number, line in enumerate(text.splitlines(), 1):
            for word in re.findall(r'`+([^`\s]+)`+', line):
                word = word.rstrip('.,;:)')
                if any(mark in word for mark in '<>*{}$') or '...' in word or '://' in word \
                        or word.split('/')[0].isupper() or word.startswith(EXTERNAL):
                    continue
                if word.startswith(TOP) or ROOT_FILES.match(word):
                    found = (ROOT / word).exists()
                elif '/' in word and re.search(r'\.(py|yaml|xml|md|msg|srv|action)$', word):
                    found = any((base / word).exists() for base in (ROOT, PACKAGE, ROOT / 'test'))
                else:
                    continue
                if not found:
                    missing.append(f'{path.relative_to(ROOT)}:{number}: {word}')
    assert not missing, 'paths named in the docs that do not exist:\n' + '\n'.join(missing)


@pytest.mark.filterwarnings('ignore::DeprecationWarning')   # catkin_pkg's docutils calls
def test_the_changelog_is_a_ros_changelog():
    changelog = pytest.importorskip('catkin_pkg.changelog')
    text = (ROOT / 'CHANGELOG.rst').read_text()
    assert text.splitlines()[1] == 'Changelog for package remote_inference'
    parsed = changelog.Changelog('remote_inference')
    changelog.populate_changelog_from_rst(parsed, text)
    versions = [version for version, _date, _changes in parsed.foreach_version()]
    assert versions, 'no version section'
    listed = re.findall(r'^(\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)\n-+$', text, re.M)
    assert [version for version, _date in listed] == versions[::-1] or \
        [version for version, _date in listed] == versions
    numbers = [tuple(int(n) for n in version.split('.')) for version, _date in listed]
    assert numbers == sorted(numbers, reverse=True), 'newest version first'
    # The package's version is the newest released section's (catkin_prepare_release's rule).
    declared = re.search(r'<version>([^<]+)</version>', (ROOT / 'package.xml').read_text())
    assert declared.group(1) == listed[0][0], 'package.xml and CHANGELOG.rst disagree'
    assert f'version = {listed[0][0]}' in (ROOT / 'setup.cfg').read_text().splitlines()
