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
Summarise and plot a recorded run: ``ros2 run remote_inference analyze BAG``.

BAG is a rosbag2 folder (MCAP or sqlite3), from ``record:=true``, ``ros2 bag record`` or
``./run demo``. Prints the summary table and writes ``BAG/run.png`` (or ``--plot PATH``);
``--video`` also renders a run of the simulated arm to ``BAG/run.webp`` (or ``--video PATH``,
``.webp`` or ``.gif``; see :mod:`.video`). When the bag holds camera frames
(``record_images:=true``), also ``BAG/frames_<camera>.png``, a contact sheet of what the
policy saw, and with ``--frames video`` (or ``both``) an MP4.
"""

import argparse
import pathlib
import sys

from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.analysis.frames import write_frames
from remote_inference_py.analysis.plot import plot_run
from remote_inference_py.analysis.summary import format_summary, summarize


def main(argv=None):
    """Analyse one bag; exit 1 with a message naming the problem if it cannot."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('bag', help='rosbag2 folder')
    parser.add_argument('--namespace', default='', help='robot namespace, e.g. /robot1')
    parser.add_argument('--plot', default='', help='PNG path (default: BAG/run.png)')
    parser.add_argument('--video', nargs='?', const='', default=None, metavar='PATH',
                        help='also render the run of the simulated arm (default path: '
                        'BAG/run.webp; .webp or .gif)')
    parser.add_argument('--frames', default='sheet', choices=('sheet', 'video', 'both', 'none'),
                        help='what to write of recorded camera frames, next to the plot')
    options = parser.parse_args(argv)
    try:
        topics = read_bag(options.bag, options.namespace)
        summary = summarize(topics)
    except (ValueError, OSError) as error:
        print(f'analyze: {error}', file=sys.stderr)
        return 1
    print(format_summary(summary))
    png = options.plot or str(pathlib.Path(options.bag) / 'run.png')
    plot_run(topics, png, title=pathlib.Path(options.bag).name)
    print(f'plot: {png}')
    if options.video is not None:
        from remote_inference_py.analysis.video import write_video
        path = options.video or str(pathlib.Path(options.bag) / 'run.webp')
        try:
            write_video(topics, path)
        except (ValueError, OSError) as error:
            print(f'analyze: video: {error}', file=sys.stderr)
            return 1
        print(f'video: {path}')
    kinds = {'sheet': ('sheet',), 'video': ('video',), 'both': ('sheet', 'video'),
             'none': ()}[options.frames]
    try:
        written = write_frames(topics, pathlib.Path(png).parent, kinds,
                               title=pathlib.Path(options.bag).name)
    except (ValueError, OSError) as error:
        print(f'analyze: camera frames: {error}', file=sys.stderr)
        return 1
    for path in written:
        print(f'frames: {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
