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
Recording and analysis of runs (no ROS needed, except by the recorder node).

- :mod:`.record`: the recorder node (``record``, imports ROS): a run's topics, raw, to a
  rosbag2 MCAP bag, until the robot side has left the graph.
- :mod:`.bag`: rosbag2 files (MCAP or sqlite3) read and written with ``rosbags``, without a ROS
  install.
- :mod:`.summary`: a run summarised from its recorded topics, by the messages' own stamps
  (what the demo and ``analyze`` print).
- :mod:`.plot`: the run plotted so that it reads the same for 10 s and for 10 minutes.
- :mod:`.frames`: what the cameras saw: a contact sheet (PNG) or a video per camera.
- :mod:`.video`: a video of a run on the simulated SO-101, rendered afterwards from its bag
  with MuJoCo.
- :mod:`.analyze`: the ``analyze BAG`` command: the summary, the plot, and optionally the video
  and the camera frames; ``--dataset`` writes the run as a LeRobot dataset instead.
- :mod:`.dataset_rows`: a run's messages as LeRobot dataset rows (pure: no ROS, no LeRobot),
  shared by the live recorder and ``analyze --dataset`` (docs/recording.md).
- :mod:`.dataset_writer`: rows written by LeRobot's ``LeRobotDataset`` on a thread of its own;
  a dataset folder of another schema refused by name.
- :mod:`.dataset_bag`: a bag's messages through :mod:`.dataset_rows`.
- :mod:`.dataset_record`: the dataset recorder node (``record_dataset``, imports ROS).
"""
