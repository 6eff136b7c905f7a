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

"""The main job (``./run demo``) runs the whole simulated system and reports it."""

import re

import pytest
from ros_fixtures import run_module
from timing_rules import late_answer_s

from remote_inference_py.analysis.bag import read_bag
from remote_inference_py.analysis.summary import stamped


def run_demo(*args, timeout=240):
    return run_module('remote_inference_py.demo', *args, timeout=timeout)


def row(stdout, name):
    match = re.search(rf'^\| {re.escape(name)} \| (.*) \|$', stdout, re.M)
    assert match, f'no row {name!r} in:\n{stdout}'
    return match.group(1)


def test_the_demo_picks_up_the_cube_and_shows_it(tmp_path):
    out = tmp_path / 'demo'
    # Asked mid-task (docs/ask.md): the arm holds for the answer, then goes on.
    result = run_demo('--out', str(out), '--ask', 'is the cube held?', '--ask-at', '2')
    assert result.returncode == 0, result.stdout + result.stderr
    picked = re.match(r'SUCCEEDED in ([\d.]+) s', row(result.stdout, 'pick the cube'))
    assert picked, result.stdout
    assert 0.5 < float(picked.group(1)) < 20.0
    asked = re.search(r"^demo: the policy answered '(no: the cube rests on the table[^']*)'; "
                      r'the arm held ([\d.]+) s for it \(answer after ([\d.]+) s, then '
                      r'([\d.]+) s to the first target', result.stdout, re.M)
    assert asked, result.stdout
    answer, resume_s = asked.group(1), float(asked.group(4))
    # The video captions the question while the arm holds, then the answer.
    shown = (r'^demo: the video shows the query at [\d.]+ s: question '
             rf"'is the cube held\?' -> '{re.escape(answer)}'$")
    assert re.search(shown, result.stdout, re.M), result.stdout
    dispatched, held, starved = (int(v) for v in re.findall(
        r'\d+', row(result.stdout, 'ticks dispatched / held / starved')))
    requests, accepted, dropped = (int(v) for v in re.findall(
        r'\d+', row(result.stdout, 'requests / chunks accepted / dropped')))
    assert accepted >= 2 and dispatched > 60, result.stdout
    # A chunk is dropped only for timing: the answer to a request the query's hold drained,
    # or that came while the query held (a loaded run: the answer was on its way when the
    # pause began), one superseded by a newer chunk, one that came too late to use, or one
    # that came after the stop. Never for its content or its session.
    topics = read_bag(out / 'bag')
    statuses = [m for _, m in topics['/executor/status']]
    reasons = {m.last_drop_reason for m in statuses if m.last_drop_reason}
    assert statuses[-1].chunks_dropped == dropped and (reasons or not dropped)
    for reason in reasons:
        assert re.match(r'(stale: .* drained when|paused for a query: |superseded: |'
                        r'unusable: all \d+ steps|executor is STOPPING)', reason), reason
    # No starved tick but the wait for the fresh chunk after the answer, one turnaround for
    # each dropped chunk (30 Hz), and what the refill rule explains (test/timing_rules.py):
    # answers later than the refill allows, and the executor's own stalls (skipped ticks);
    # both are 0 on a quiet host.
    p50, turnaround_max = (float(v) for v in re.findall(
        r'[\d.]+', row(result.stdout, 'turnaround p50 / max')))
    stop_ns = next(t for t, m in topics['/executor/status'] if m.state_name == 'STOPPING')
    late_s = late_answer_s(topics['/policy/request'], topics.get('/policy/chunk', []),
                           topics['/executor/status'], 30, stop_ns)
    assert starved <= round((resume_s + dropped * turnaround_max / 1e3 + late_s) * 30) + 2 \
        + statuses[-1].skipped_ticks, result.stdout
    assert p50 >= 200.0   # the injected 0.2 s, from the messages' stamps
    assert 'STOPPED' in row(result.stdout, 'final state')
    assert 'the arm picked up the cube' in result.stdout

    # The cube really went up in the simulation, and came with the arm's motion.
    heights = [m.pose.position.z for _, m in stamped(topics['/sim/cube_pose'])]
    assert max(heights) - heights[0] >= 0.05
    assert (out / 'run.png').read_bytes()[:4] == b'\x89PNG'
    from PIL import Image
    with Image.open(out / 'run.webp') as video:
        assert video.format == 'WEBP' and video.is_animated
        # 8 frames a second over the whole recorded run (a few seconds at least).
        assert video.n_frames >= 8 * 5
        first = video.convert('RGB').resize((40, 30))
        video.seek(video.n_frames // 2)
        middle = video.convert('RGB').resize((40, 30))
    assert first.tobytes() != middle.tobytes()
    for node in ('hardware_interface', 'executor', 'policy_server'):
        assert (out / f'{node}.log').exists()


def test_the_demo_still_serves_the_built_in_policy(tmp_path):
    out = tmp_path / 'demo'
    result = run_demo('--policy', 'demo', '--seconds', '4', '--no-video', '--out', str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'built-in demo policy' in result.stdout
    assert row(result.stdout, 'pick the cube').startswith('FAILED')
    assert 'STOPPED' in row(result.stdout, 'final state')
    assert (out / 'run.png').exists() and not (out / 'run.webp').exists()


def test_the_demo_names_a_bad_policy_before_starting_anything(tmp_path):
    result = run_demo('--policy', str(tmp_path / 'missing.pt2'), '--out', str(tmp_path / 'o'),
                      timeout=60)
    assert result.returncode == 2
    assert 'missing.pt2' in result.stderr and 'expert' in result.stderr
    assert not (tmp_path / 'o').exists()
    result = run_demo('--seconds', '-1', timeout=60)
    assert result.returncode == 2 and '--seconds' in result.stderr
    result = run_demo('--hand-back', '5', timeout=60)   # nobody to hand back from
    assert result.returncode == 2 and '--hand-back needs --human' in result.stderr
    for grace in ('0.009', '600.1'):   # just outside the executor's starvation_grace_s range
        result = run_demo('--grace', grace, timeout=60)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f'--grace must be between 0.01 and 600 s, got {grace}' in result.stderr
    result = run_demo('--camera', '4097x120', timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert '--camera 4097x120: the width must be 1-4096 px' in result.stderr, result.stderr


def test_the_camera_size_is_the_hardware_interfaces_to_its_range_edges():
    from remote_inference_py.demo import (argument_parser, camera_size, demo_policy,
                                          node_overrides)
    assert camera_size('1x1') == (1, 1) and camera_size('4096x4096') == (4096, 4096)
    for text, named in (('0x120', 'the width must be 1-4096 px'),
                        ('160x4097', 'the height must be 1-4096 px'),
                        ('160', 'takes WIDTHxHEIGHT'), ('160x120x3', 'takes WIDTHxHEIGHT')):
        with pytest.raises(ValueError, match=named):
            camera_size(text)
    options = argument_parser().parse_args(['--dataset', 'd', '--camera', '160x120'])
    hardware = node_overrides(options, demo_policy('expert'))['hardware_interface']
    assert hardware == {'sim_render': True, 'sim_image_width': 160, 'sim_image_height': 120}
    options = argument_parser().parse_args(['--dataset', 'd'])   # the interface's default
    assert node_overrides(options, demo_policy('expert'))['hardware_interface'] == {
        'sim_render': True}


def test_a_node_that_exits_before_the_start_is_named_with_the_end_of_its_log(tmp_path):
    # A folder that is no checkpoint: the policy server exits at once; the demo does not wait
    # out its start wait, and says which node exited, with its code and its last words.
    folder = tmp_path / 'not_a_checkpoint'
    folder.mkdir()
    out = tmp_path / 'demo'
    result = run_demo('--policy', str(folder), '--fps', '30', '--no-video', '--out', str(out),
                      timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'the system did not start: policy_server exited before the system was ready' in \
        result.stderr, result.stderr
    words = result.stderr.split('demo: policy_server exited 2; the end of its log:\n', 1)
    assert len(words) == 2, result.stderr
    assert f"cannot tell the format of checkpoint '{folder}'" in words[1], result.stderr
    assert 'executor exited' not in result.stderr, result.stderr
    assert read_bag(out / 'bag').get('/joint_commands', []) == []


def test_the_executor_waits_for_admission_as_long_as_the_demo_waits_for_it():
    # Every node starts at once, and LeRobot alone took 30-40 s to load on a busy host: the
    # executor's admission timeout (30 s by default) must not end the run before the demo's
    # own wait does (it once did, seen as a demo that 'did not start' with the executor gone).
    from remote_inference_py.demo import (argument_parser, demo_policy, node_overrides,
                                          START_WAIT_S)
    for policy in ('expert', 'demo', 'idle'):
        for flags in ([], ['--dataset', 'd'], ['--human', '--dataset', 'd']):
            options = argument_parser().parse_args(['--policy', policy] + flags)
            executor = node_overrides(options, demo_policy(policy))['executor']
            assert executor['admission_timeout_s'] == START_WAIT_S, (policy, flags)
            assert executor['autostart'] is False
            assert 'starvation_grace_s' not in executor   # the arm config's
    for grace in (0.01, 600.0):   # --grace: the executor's grace, its range's edges
        options = argument_parser().parse_args(['--grace', str(grace)])
        assert node_overrides(options, demo_policy('expert'))['executor'][
            'starvation_grace_s'] == grace


def test_each_policy_gets_the_parameters_it_needs(tmp_path):
    import json

    from remote_inference_py.demo import demo_policy
    from remote_inference_py.evaluation.learned import learned_spec_dict
    expert = demo_policy('expert')
    assert expert.picks and expert.overrides['policy_server']['checkpoint'].endswith(
        ':expert_runtime')
    assert expert.overrides['executor']['semantics'] == 'si-radians-v1' == \
        expert.overrides['policy_server']['semantics']
    assert expert.overrides['hardware_interface'] == {'sim_render': False}
    assert demo_policy('demo').overrides == {} and not demo_policy('demo').picks
    assert demo_policy('idle').overrides['policy_server']['checkpoint'].endswith(
        ':idle_runtime')

    model = tmp_path / 'model.pt2'
    model.write_bytes(b'')
    (tmp_path / 'model.json').write_text(json.dumps(learned_spec_dict((96, 128))))
    learned = demo_policy(str(model))
    assert learned.overrides['hardware_interface'] == {
        'sim_render': True, 'sim_image_width': 128, 'sim_image_height': 96}
    assert learned.overrides['policy_server']['checkpoint'] == str(model.resolve())
    assert learned.overrides['executor']['semantics'] == 'si-radians-v1'

    # --camera: the size the manifest declares, or none (the frames are the policy's input).
    from remote_inference_py.demo import camera_size
    assert camera_size('128x96', learned) == (128, 96)
    with pytest.raises(ValueError, match=r'--camera 160x120: checkpoint .* declares its '
                                         r'frames as 128x96 \(leave --camera out\)'):
        camera_size('160x120', learned)
    assert camera_size('160x120', expert) == (160, 120)

    assert learned.overrides['executor']['fps'] == 30.0
    assert demo_policy(str(model), 30.0).overrides == learned.overrides
    with pytest.raises(ValueError, match=r'--fps 25 differs from the 30 Hz of the manifest'):
        demo_policy(str(model), 25.0)

    folder = tmp_path / 'pretrained_model'
    folder.mkdir()
    lerobot = demo_policy(str(folder), None, 30.0)   # the simulated arm's rate
    assert lerobot.overrides == {'policy_server': {'policy_type': 'auto', 'fps': 30.0,
                                                   'checkpoint': str(folder.resolve())},
                                 'executor': {'fps': 30.0}}
    assert demo_policy(str(folder), 15.0, 30.0).overrides['executor']['fps'] == 15.0
    with pytest.raises(ValueError, match='does not record its action rate: give --fps'):
        demo_policy(str(folder))

    (tmp_path / 'model.json').unlink()
    with pytest.raises(ValueError, match='model.pt2.*no manifest'):
        demo_policy(str(model))
    with pytest.raises(ValueError, match="'nothing' is neither expert, demo, idle"):
        demo_policy('nothing')


def test_the_demo_runs_a_lerobot_folder_at_the_simulators_rate(tmp_path):
    # A tiny ACT folder with random weights, trained on 96x64 frames: the simulated camera
    # publishes 640x480, which the server resizes. The pick fails; the path runs and reports.
    import lerobot_checkpoints as checkpoints
    folder = checkpoints.make_checkpoint(tmp_path / 'act', 'act', spread=0.1)
    out = tmp_path / 'demo'
    result = run_demo('--policy', str(folder), '--seconds', '8', '--latency', '0.05',
                      '--no-video', '--out', str(out), timeout=400)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f'LeRobot checkpoint {folder} at 30 Hz' in result.stdout
    assert row(result.stdout, 'pick the cube').startswith('FAILED')
    assert 'STOPPED' in row(result.stdout, 'final state')
    assert 'the cube was not picked up' in result.stdout
    requests, accepted, dropped = (int(v) for v in re.findall(
        r'\d+', row(result.stdout, 'requests / chunks accepted / dropped')))
    assert accepted >= 1, result.stdout    # 3 in 10 s on a busy 2-core host
    log = (out / 'policy_server.log').read_text()
    assert 'observation.images.front: 640x480 frames resized to 96x64' in log
