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

"""The learned policy's code path on a tiny configuration (the real training is not run)."""

import numpy as np

from remote_inference_py.evaluation import learned
from remote_inference_py.evaluation.expert import CUBE_FEATURE, STATE_FEATURE
from remote_inference_py.evaluation.matrix import run_matrix
from remote_inference_py.evaluation.settings import (
    Configuration, EvalSettings, resolve_policy)
from remote_inference_py.evaluation.task import episode_seeds, TaskConfig
from remote_inference_py.policy_server.runtimes import warm_up


def test_record_train_export_serve_and_evaluate(tmp_path):
    settings = EvalSettings.load()
    dataset = tmp_path / learned.DATASET_FILE
    counts = learned.record_demonstrations(dataset, 1, settings=settings,
                                           task=TaskConfig(time_limit_s=8.0),
                                           progress=lambda text: None)
    assert counts['kept'] == 1 and counts['frames'] > 60
    data = np.load(dataset)
    frames, states, chunks = data['frames'], data['states'], data['chunks']
    assert frames.shape[1:] == (*learned.MODEL_IMAGE_SIZE, 3) and frames.dtype == np.uint8
    assert states.shape == (len(frames), 6) and chunks.shape == (len(frames), 50, 6)
    assert frames.std() > 5, 'the camera sees something'

    model, image_size, history = learned.train(
        dataset, learned.TrainSettings(epochs=1, batch_size=16), max_samples=32,
        progress=lambda text: None)
    assert image_size == (96, 96) and len(history) == 1 and np.isfinite(history[0])
    path = learned.export(model, image_size, tmp_path)
    assert path.name == 'model.pt2' and path.with_suffix('.json').is_file()

    policy = resolve_policy(str(path))
    runtime = policy.make_runtime()
    assert runtime.kind == 'torch_export'
    names = [f.name for f in runtime.spec.features]
    assert names == [STATE_FEATURE, learned.IMAGE_FEATURE] and CUBE_FEATURE not in names
    warm_up(runtime, 1)
    results = run_matrix(policy, [Configuration('aligned', 0.1)], episode_seeds(0, 1), 'sim',
                         settings, TaskConfig(time_limit_s=1.5))
    assert len(results) == 1 and not results[0].error, results[0].error
    assert results[0].chunks_accepted >= 1, 'the learned policy was served and its chunks used'
