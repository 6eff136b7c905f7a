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
Real text generation, offline: a tiny SmolVLM made here, answering about a camera frame.

The folder is :func:`lerobot_checkpoints.make_smolvlm_backbone`'s (config, byte-level BPE
tokenizer, processors) plus random weights saved with ``save_pretrained``; the policy server's
``text_model`` loads it with transformers and generates greedily. The answer's content is
not judged (random weights); its path is: image and question in, tokens out, timings.
"""

import os

from core_fixtures import admit, make_server
import numpy as np
import pytest

from remote_inference_py.policy_server.demo_policy import DemoRuntime
from remote_inference_py.policy_server.images import RawImage
from remote_inference_py.policy_server.runtimes import RuntimeLoadError
from remote_inference_py.policy_server.text import AskJob, TextWorker

MS = 1_000_000
JOINTS = ['shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll', 'gripper']


@pytest.fixture(scope='module')
def vlm_folder(tmp_path_factory):
    os.environ['HF_HUB_OFFLINE'] = '1'
    import lerobot_checkpoints as checkpoints
    import torch

    from remote_inference_py.policy_server.lerobot_import import import_torchvision
    import_torchvision()
    from transformers import AutoConfig, AutoModelForImageTextToText
    folder = checkpoints.make_smolvlm_backbone(tmp_path_factory.mktemp('vlm') / 'smolvlm')
    torch.manual_seed(0)
    AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(folder)).save_pretrained(
        folder)
    return folder


def test_the_text_model_answers_a_question_about_the_camera_frame(vlm_folder):
    from remote_inference_py.policy_server.vlm_text import VisionLanguageText
    text = VisionLanguageText(str(vlm_folder), max_new_tokens=6)
    assert text.text_commands == ('question', 'subtask', 'steering')
    core = make_server(DemoRuntime(cameras=('front',), image_size=(48, 64)),
                       observation_wait_s=0.2)
    session = admit(core)
    core.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
    frame = np.zeros((48, 64, 3), np.uint8)
    frame[10:30, 20:40] = (255, 0, 0)
    raw = RawImage('rgb8', 48, 64, 64 * 3, frame.tobytes(), False)
    assert core.on_image('', 'observation.images.front', 100 * MS, raw) is None
    worker = TextWorker(text, core.text_inputs, 0.2)
    result = worker.answer(AskJob('', session, 'question', 'where is the red cube?', 'pick', 0))
    assert result.success, result.message
    assert isinstance(result.answer, str) and 1 <= result.generated_tokens <= 6
    assert result.generate_ms > 0 and result.capture_ns == 100 * MS
    subtask = worker.answer(AskJob('', session, 'subtask', 'tidy up', 'pick', 0))
    assert subtask.success and subtask.generated_tokens >= 1
    # A steering round is a subtask query: the same prompt, so (greedy) the same answer.
    steering = worker.answer(AskJob('', session, 'steering', 'tidy up', 'pick', 0))
    assert steering.success and steering.generated_tokens >= 1, steering.message
    assert steering.answer == subtask.answer
    assert text.prompt('steering', 'tidy up', 'pick') == text.prompt('subtask', 'tidy up', 'pick')
    refused = worker.answer(AskJob('', session, 'poem', 'tidy up', 'pick', 0))
    assert not refused.success and "does not offer 'poem'" in refused.message


def test_a_policy_without_a_camera_cannot_feed_the_text_model(vlm_folder):
    from remote_inference_py.policy_server.vlm_text import VisionLanguageText
    text = VisionLanguageText(str(vlm_folder), max_new_tokens=2)
    core = make_server(observation_wait_s=0.2)   # the demo policy without cameras
    session = admit(core)
    core.on_joint_states('', 100 * MS, JOINTS, [0.1] * 6)
    result = TextWorker(text, core.text_inputs, 0.2).answer(
        AskJob('', session, 'question', 'where?', '', 0))
    assert not result.success and 'no RGB camera in the observation' in result.message


def test_a_folder_without_weights_is_refused_by_name(tmp_path):
    from remote_inference_py.policy_server.vlm_text import VisionLanguageText
    with pytest.raises(RuntimeLoadError, match='is not a transformers model folder'):
        VisionLanguageText(str(tmp_path))
    (tmp_path / 'config.json').write_text('{}')
    with pytest.raises(RuntimeLoadError, match=r'has no weights \(\*.safetensors\)'):
        VisionLanguageText(str(tmp_path))
