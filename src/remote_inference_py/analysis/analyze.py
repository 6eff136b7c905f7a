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
policy saw, and with ``--frames video`` (or ``both``) an MP4. ``--dataset FOLDER`` writes instead
the run's episodes as a LeRobot dataset (:mod:`.dataset_bag`; docs/recording.md), the same rows
the live recorder writes from the same run.
"""

import argparse
import pathlib
import sys

from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.analysis.frames import write_frames
from remote_inference_py.analysis.plot import plot_run
from remote_inference_py.analysis.summary import format_summary, summarize
from remote_inference_py.common.process import print_stacks_on_request


def main(argv=None):
    """Analyse one bag; exit 1 with a message naming the problem if it cannot."""
    print_stacks_on_request()
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('bag', help='rosbag2 folder')
    parser.add_argument('--namespace', default='', help='robot namespace, e.g. /robot1')
    parser.add_argument('--plot', default='', help='PNG path (default: BAG/run.png)')
    parser.add_argument('--video', nargs='?', const='', default=None, metavar='PATH',
                        help='also render the run of the simulated arm (default path: '
                        'BAG/run.webp; .webp or .gif)')
    parser.add_argument('--frames', default='sheet', choices=('sheet', 'video', 'both', 'none'),
                        help='what to write of recorded camera frames, next to the plot')
    parser.add_argument('--dataset', default='', metavar='FOLDER',
                        help='write the episodes as a LeRobot dataset instead (appended to '
                        'a compatible one)')
    parser.add_argument('--repo-id', default='', help='dataset repo id (default local/FOLDER)')
    parser.add_argument('--semantics', default='so101-degrees-gripper-percent-v1',
                        help="the policy's units of observation.state and action")
    parser.add_argument('--fps', type=float, default=0.0,
                        help='dataset fps (default: the rate of joint_commands)')
    parser.add_argument('--robot-type', default='so101_follower', help='dataset robot_type')
    parser.add_argument('--calibration', default='',
                        help="the arm's LeRobot calibration JSON (default SO-101)")
    parser.add_argument('--vcodec', default='', help='video codec (default libsvtav1)')
    options = parser.parse_args(argv)
    if options.dataset:
        return write_dataset(options)
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


def write_dataset(options):
    """Write the bag's episodes to ``options.dataset``; 1 with the error named if it fails."""
    from remote_inference_py.analysis.dataset_bag import write_dataset as write
    from remote_inference_py.robot.calibration import Calibration
    try:
        calibration = Calibration.load(options.calibration) if options.calibration else None
        writer, builder = write(options.bag, options.dataset, options.repo_id,
                                options.namespace, options.semantics, options.fps,
                                options.robot_type, calibration, options.vcodec,
                                log=lambda level, text: print(text))
    except (ValueError, OSError) as error:
        print(f'analyze: dataset: {error}', file=sys.stderr)
        return 1
    for note in dict.fromkeys(builder.notes):
        print(f'dataset: {note}')
    counts = builder.counts
    print(f'dataset: {options.dataset}: {writer.episodes_saved} episodes, '
          f'{writer.frames_saved} frames saved; ticks left out: {counts["held_or_starved"]} '
          f'held or starved, {counts["returning"]} returning home, {counts["outside_run"]} '
          f'outside a run, {counts["no_observation"]} before every observation had come, '
          f'{counts["stale_observation"]} with an observation too old, '
          f"{counts['between_episodes']} between episodes (the operator's reset); "
          f"{counts['late_observation']} rows written before an observation of theirs came")
    for error in writer.errors:
        print(f'analyze: dataset: {error}', file=sys.stderr)
    return 1 if writer.errors else 0


if __name__ == '__main__':
    sys.exit(main())
