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

"""Plot a run: commanded vs measured joints with chunk arrivals, buffered playback, turnaround."""

import numpy as np

from remote_inference_py.analysis.summary import joint_vector, turnarounds


def plot_run(topics, path, title='remote_inference run'):
    """Write a PNG with three panels; return the path."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    commands = topics.get('/joint_commands', [])
    measured = topics.get('/joint_states', [])
    statuses = topics.get('/executor/status', [])
    first = commands[:1] or measured[:1] or statuses[:1]
    t0 = first[0][0] if first else 0

    def seconds(t):
        return (t - t0) * 1e-9

    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True,
                             gridspec_kw={'height_ratios': [3, 1, 1]})
    ax = axes[0]
    names = list(measured[0][1].name) if measured else []
    colours = plt.rcParams['axes.prop_cycle'].by_key()['color']
    if commands:
        values = np.array([joint_vector(m) for _, m in commands])
        tc = np.array([seconds(t) for t, _ in commands])
        cmd_names = list(getattr(commands[0][1], 'name', [])) or names
        for j in range(values.shape[1]):
            label = cmd_names[j] if j < len(cmd_names) else f'joint {j}'
            ax.plot(tc, values[:, j], color=colours[j % len(colours)], lw=1.2,
                    label=f'{label} commanded')
    if measured:
        tm = np.array([seconds(t) for t, _ in measured])
        values = np.array([joint_vector(m) for _, m in measured])
        for j in range(values.shape[1]):
            ax.plot(tm, values[:, j], color=colours[j % len(colours)], lw=0.8, ls='--')
    for _, _, chunk_ns in turnarounds(topics):
        ax.axvline(seconds(chunk_ns), color='grey', lw=0.5, alpha=0.6)
    ax.set_ylabel('position [rad]')
    ax.set_title(f'{title}: commanded (solid), measured (dashed), chunk arrivals (grey)')
    ax.legend(loc='upper right', fontsize=7, ncol=2)

    ax = axes[1]
    if statuses:
        ts = [seconds(t) for t, _ in statuses]
        ax.plot(ts, [m.buffered_playback_s for _, m in statuses], label='buffered playback')
        ax.plot(ts, [m.effective_refill_s for _, m in statuses], ls=':',
                label='effective refill')
        held = [seconds(t) for t, m in statuses if m.state_name == 'WAITING']
        if held:
            ax.plot(held, [0] * len(held), 'r|', ms=12, label='holding')
    ax.set_ylabel('[s]')
    ax.legend(loc='upper right', fontsize=7)

    ax = axes[2]
    pairs = turnarounds(topics)
    if pairs:
        ax.plot([seconds(c) for _, _, c in pairs], [(c - r) * 1e-6 for _, r, c in pairs], 'o',
                ms=3)
    ax.set_ylabel('turnaround [ms]')
    ax.set_xlabel('time [s]')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
