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

"""What the hardware runner says: its status message, its log lines and its counters (no ROS).

:class:`RunnerReport` is the part of :class:`.runner.HardwareRunner` that every other part
speaks through: the status message (the node publishes it on ``hardware/info``; the sink
hears of every change), one log call per severity (rclpy's logger refuses two severities
from one call site), warnings throttled per kind to one a second (:class:`Throttle`), the
counters of reads, writes, commands and errors, the rejected commands by reason, and the
one-line summary the node logs every period.
"""

from typing import Dict

from remote_inference_py.hardware.backend import Backend, describe_counters
from remote_inference_py.hardware.commands import CommandRejected, REJECT_REASONS

COUNTERS = ('reads', 'read_errors', 'write_errors', 'commands_applied', 'commands_clamped',
            'commands_superseded', 'watchdog_holds', 'overruns')


class Throttle:
    """Let a message through at most once per period per key."""

    def __init__(self, period_s: float = 1.0):
        """Allow one message per key every ``period_s``."""
        self.period_s = period_s
        self._last: Dict[str, float] = {}

    def ready(self, key: str, now: float) -> bool:
        """Return True (and remember ``now``) when a message for ``key`` may be logged."""
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            return False
        self._last[key] = now
        return True


class RunnerReport:
    """The status message, the log, the counters and the rejections (see the module doc)."""

    def __init__(self, on_status=None, logger=None):
        """Tell ``on_status()`` of every message change; log to ``logger`` (None: nowhere)."""
        self.on_status = on_status or (lambda: None)
        self.logger = logger
        self.message = ''
        self.throttle = Throttle()
        self.counters: Dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self.rejected: Dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)

    def log(self, level: str, text: str) -> None:
        """Log ``text`` at ``level`` (info, warning, error, anything else: fatal)."""
        # One call per severity: rclpy's logger refuses two severities from one call site.
        log = self.logger
        if log is None:
            return
        if level == 'info':
            log.info(text)
        elif level == 'warning':
            log.warning(text)
        elif level == 'error':
            log.error(text)
        else:
            log.fatal(text)

    def warn_throttled(self, kind: str, now: float, text: str) -> None:
        """Log a warning of ``kind`` unless one of that kind was logged within the period."""
        if self.throttle.ready(kind, now):
            self.log('warning', text)

    def set_message(self, text: str) -> None:
        """Set the status message; the sink hears of it when it changed."""
        changed = text != self.message
        self.message = text
        if changed:
            self.on_status()

    def reject(self, rejection: CommandRejected) -> None:
        """Count a rejected command by its reason and make it the status message."""
        self.rejected[rejection.reason] += 1
        self.set_message(f'command rejected ({rejection.reason}): {rejection}')

    def summary(self, backend: Backend) -> str:
        """Return the non-zero counters (and the backend's) as one line for the log."""
        counters = {key: value for key, value in self.counters.items() if value}
        rejected = {key: value for key, value in self.rejected.items() if value}
        text = describe_counters(counters)
        if rejected:
            text += f'; rejected: {describe_counters(rejected)}'
        counted = backend.counters()
        if counted:
            text += f'; {backend.name}: {describe_counters(counted)}'
        return text
