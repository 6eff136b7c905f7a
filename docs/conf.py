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

"""Sphinx configuration of the documentation site (MyST Markdown pages under docs/).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (in ``./run shell``;
``test/tools/test_docs.py`` builds it the same way into a temporary folder). Warnings are
errors, so a page missing from every toctree, a broken link between pages or to a heading
(``page.md#heading``), a missing image or included file fails the build. External links are
never fetched (no linkcheck builder, no intersphinx).
"""

project = 'remote_inference'
author = 'remote_inference contributors'
copyright = '2026, remote_inference contributors'

extensions = ['myst_parser']
source_suffix = {'.md': 'markdown', '.rst': 'restructuredtext'}
root_doc = 'index'
exclude_patterns = ['_build']

# Links to headings of other pages ([text](page.md#a-heading)) resolve like GitHub's anchors.
myst_heading_anchors = 4
# Every cross-reference must resolve.
nitpicky = True

html_theme = 'alabaster'
html_title = 'remote_inference'
html_theme_options = {'nosidebar': False}
