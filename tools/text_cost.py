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
What a query's text work costs: generate_text timed for the runtimes that answer queries.

The arm holds for a query's text work plus one turnaround (docs/ask.md); this
times the text work alone, in this process, one torch thread (the server's ``cpu_threads``
default), on a 640x480 frame: the scripted pick expert (answers from the simulated cube pose)
and a transformers vision-language model folder (``--text-model FOLDER``, or ``--tiny``: the
tiny SmolVLM with random weights that test/tools/test_vlm_text.py builds, offline). Prints a
markdown table: tokens generated and milliseconds, p50 and max over ``--rounds`` (after one
warm-up call).

Run (with the package sourced, e.g. in ``./run shell``):
``python tools/text_cost.py --tiny [--rounds 5]``.
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

QUERIES = (('question', 'is the cube held?'), ('subtask', 'pick up the cube'))


def tiny_folder(directory):
    """Build the tests' tiny SmolVLM (config, tokenizer, processors, random weights)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / 'test'))
    import lerobot_checkpoints
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText
    folder = lerobot_checkpoints.make_smolvlm_backbone(pathlib.Path(directory) / 'smolvlm')
    torch.manual_seed(0)
    AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(folder)).save_pretrained(
        folder)
    return folder


def timed(answer, kind, text, inputs, rounds):
    """Return (tokens p50, ms p50, ms max) of ``rounds`` calls after a warm-up call."""
    answer(kind, text, 'pick up the cube', inputs)
    times, tokens = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        result = answer(kind, text, 'pick up the cube', inputs)
        times.append((time.perf_counter() - began) * 1000.0)
        tokens.append(result.generated_tokens)
    return float(np.median(tokens)), float(np.median(times)), max(times)


def main(argv=None):
    """Time each runtime's text work; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--text-model', default='', help='a SmolVLM folder')
    parser.add_argument('--tiny', action='store_true', help="the tests' tiny random SmolVLM")
    parser.add_argument('--rounds', type=int, default=5)
    options = parser.parse_args(argv)
    os.environ['HF_HUB_OFFLINE'] = '1'
    import torch
    torch.set_num_threads(1)
    from remote_inference_py.evaluation.expert import ExpertRuntime
    from remote_inference_py.evaluation.task import cube_rest_z
    from remote_inference_py.policy_server.lerobot_import import import_torchvision
    rows = []
    expert = ExpertRuntime()
    state = {'observation.state': np.array([0.0, -1.0, 1.0, 0.9, 0.0, 1.2]),
             'observation.cube_pose': np.array([0.25, 0.05, cube_rest_z(), 0, 0, 0, 1.0])}
    for kind, text in QUERIES:
        rows.append(('scripted pick expert', kind) + timed(expert.generate_text, kind, text,
                                                           state, options.rounds))
    folder = options.text_model
    with tempfile.TemporaryDirectory() as directory:
        if options.tiny:
            import_torchvision()
            folder = tiny_folder(directory)
        if folder:
            from remote_inference_py.policy_server.vlm_text import VisionLanguageText
            model = VisionLanguageText(str(folder), max_new_tokens=24)
            frame = np.random.default_rng(0).random((480, 640, 3)).astype(np.float32)
            inputs = {'observation.images.front.rgb': frame}
            label = 'tiny SmolVLM (random)' if options.tiny else str(folder)
            for kind, text in QUERIES:
                rows.append((label, kind) + timed(model.generate_text, kind, text, inputs,
                                                  options.rounds))
    print('| runtime | query | tokens | generate p50 [ms] | max [ms] |')
    print('|---|---|---|---|---|')
    for name, kind, tokens, p50, worst in rows:
        print(f'| {name} | {kind} | {tokens:.0f} | {p50:.1f} | {worst:.1f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
