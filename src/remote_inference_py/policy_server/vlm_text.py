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

r"""Text generation with a transformers vision-language model folder (the ``text_model``).

The policy server's ``text_model`` parameter names a folder that ``transformers`` loads with
``AutoProcessor`` and ``AutoModelForImageTextToText`` (a SmolVLM folder: config, tokenizer,
processors and weights; read offline, nothing is downloaded). :class:`VisionLanguageText`
then answers the executor's ``question``, ``subtask`` and ``steering`` queries about the
policy's first RGB camera, greedily, at most ``max_new_tokens`` tokens. A steering round is a
subtask query (the executor repeats it and uses each answer as the task), so it gets the same
prompt; how good the subtasks are depends on the checkpoint, as for ``subtask``.

The prompt is SmolVLM's chat turn, ``<|im_start|>User:<image>{prompt}<end_of_utterance>
\nAssistant:``, where the prompt is the question, or for a subtask (and a steering round)
``What is the next step to {text}? The task so far: {task}.``. Whether the answers are useful
depends on the weights.
"""

import pathlib
import time
from typing import Dict, Optional

import numpy as np

from remote_inference_py.policy_server.runtimes import RuntimeLoadError, TextAnswer

COMMANDS = ('question', 'subtask', 'steering')
RGB_SUFFIX = '.rgb'     # text_inputs adds '<feature>.rgb': the frame in [0, 1], before normalizing


class VisionLanguageText:
    """Answer queries with a vision-language model (see the module docstring)."""

    text_commands = COMMANDS

    def __init__(self, folder: str, device: str = 'cpu', max_new_tokens: int = 24,
                 image_feature: Optional[str] = None):
        """Load the processor and the model from ``folder``; RuntimeLoadError names problems."""
        path = pathlib.Path(folder)
        if not path.is_dir() or not (path / 'config.json').is_file():
            raise RuntimeLoadError(f'text_model {folder!r} is not a transformers model folder '
                                   '(no config.json)')
        if not any(path.glob('*.safetensors')) and not any(path.glob('*.bin')):
            raise RuntimeLoadError(f'text_model {folder!r} has no weights (*.safetensors)')
        try:
            import torch
            from remote_inference_py.policy_server.lerobot_import import import_torchvision
            import_torchvision()   # transformers imports it; see lerobot_runtime
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as error:
            raise RuntimeLoadError(f'text_model needs torch and transformers (the LeRobot '
                                   f'extra, requirements-lerobot.txt): {error}') from None
        self.source = str(path)
        self.image_feature = image_feature
        self.max_new_tokens = max_new_tokens
        self._torch = torch
        self.device = torch.device(device)
        started = time.perf_counter()
        try:
            self.processor = AutoProcessor.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForImageTextToText.from_pretrained(
                path, local_files_only=True).to(self.device).eval()
        except (OSError, ValueError, KeyError) as error:
            raise RuntimeLoadError(f'text_model {folder!r} could not be loaded: '
                                   f'{str(error).splitlines()[0][:300]}') from None
        self.load_s = time.perf_counter() - started

    def prompt(self, kind: str, text: str, task: str) -> str:
        """Return the chat turn for a query."""
        if kind in ('subtask', 'steering'):
            ask = f'What is the next step to {text.strip()}? The task so far: {task.strip()}.'
        else:
            ask = text.strip()
        return f'<|im_start|>User:<image>{ask}<end_of_utterance>\nAssistant:'

    def frame(self, inputs: Dict[str, np.ndarray]) -> np.ndarray:
        """Return the camera frame as height x width x 3 uint8."""
        names = [name for name in inputs if name.endswith(RGB_SUFFIX)]
        if self.image_feature:
            names = [n for n in names if n == self.image_feature + RGB_SUFFIX]
        if not names:
            raise ValueError('no RGB camera in the observation for the text model'
                             + (f' (text_model_image {self.image_feature!r})'
                                if self.image_feature else ''))
        image = np.asarray(inputs[names[0]], dtype=np.float32)
        if image.ndim == 4:
            image = image[-1]      # a history: the newest frame
        if image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
            image = image.transpose(1, 2, 0)
        if image.shape[-1] == 1:
            image = np.repeat(image, 3, axis=-1)
        return (np.clip(image, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)

    def generate_text(self, kind: str, text: str, task: str,
                      inputs: Dict[str, np.ndarray]) -> TextAnswer:
        """Generate the answer: image and prompt in, greedy decoding, text out."""
        if kind not in COMMANDS:
            raise ValueError(f'the text model does not answer {kind!r}')
        batch = self.processor(text=[self.prompt(kind, text, task)],
                               images=[[self.frame(inputs)]], return_tensors='pt')
        batch.pop('token_type_ids', None)
        batch = {name: value.to(self.device) for name, value in batch.items()}
        with self._torch.no_grad():
            output = self.model.generate(**batch, max_new_tokens=self.max_new_tokens,
                                         do_sample=False)
        new = output[0, batch['input_ids'].shape[1]:]
        return TextAnswer(self.processor.decode(new, skip_special_tokens=True).strip(),
                          int(new.shape[0]))

    def close(self) -> None:
        """Release the model."""
        self.model = None
