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

"""The Feetech bus's group packets and reply status, over ``scservo_sdk`` (no ROS).

Two parts of :class:`.feetech.FeetechBus`:

- :class:`SyncGroups` owns the group packets: one SYNC_READ of every motor's
  Present_Position (:class:`StatusGroupSyncRead`, which keeps each reply's status byte and
  names the motor that failed), one SYNC_WRITE of Goal_Position, whose payload it checks and
  encodes by motor name (:meth:`~SyncGroups.goal_payload`: nothing is sent when one goal is
  wrong), and the broadcast that switches torque off on every motor at once;
- :class:`MotorStatus` keeps the hardware error flags (overload, overheat, ...) of each
  motor's latest reply, counts the replies that carried one, logs each new set once, and
  names them in a :class:`~.feetech_link.ServoStatusError`.
"""

import logging
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import scservo_sdk as scs

from remote_inference_py.hardware.feetech_link import (
    PORT_EXCEPTIONS, reply_parameters, ServoStatusError)
from remote_inference_py.robot.control_table import ControlTable, describe_status_error

_LOGGER = logging.getLogger('remote_inference_py.hardware.feetech')


class StatusGroupSyncRead(scs.GroupSyncRead):
    """``GroupSyncRead`` that keeps each reply's status byte and the id that failed.

    The SDK's version drops the status byte of every reply, so hardware errors such as
    overload would go unseen, and does not say which motor failed; it also accepts a reply of
    another length (a short one later reads as 0, a long one, late from an earlier read, is
    cut to size). Here ``errors`` maps ids to status bytes, ``failed_id`` names the first motor
    without its reply, and a reply without exactly ``data_length`` bytes counts as corrupt.
    """

    def __init__(self, port, ph, start_address, data_length):
        """Create the reader (same arguments as the SDK's)."""
        super().__init__(port, ph, start_address, data_length)
        self.errors: Dict[int, int] = {}
        self.failed_id: Optional[int] = None

    def rxPacket(self):  # noqa: N802 (SDK method name)
        """Receive one reply per id in order; return an SDK result code."""
        self.last_result = False
        self.errors = {}
        self.failed_id = None
        if not self.data_dict:
            return scs.COMM_NOT_AVAILABLE
        for motor_id in self.data_dict:
            self.data_dict[motor_id] = []
            while True:     # as the SDK's readRx: replies of other ids are skipped
                reply, result = self.ph.rxPacket(self.port)
                if result != scs.COMM_SUCCESS or reply[scs.PKT_ID] == motor_id:
                    break
            params = None
            if result == scs.COMM_SUCCESS:
                params = reply_parameters(reply, self.data_length)
                if params is None:
                    result = scs.COMM_RX_CORRUPT
            if result != scs.COMM_SUCCESS:
                self.failed_id = motor_id
                return result
            self.data_dict[motor_id] = params
            self.errors[motor_id] = reply[scs.PKT_ERROR]
        self.last_result = True
        return scs.COMM_SUCCESS


class MotorStatus:
    """The hardware error flags of each motor's latest reply (see the module doc)."""

    def __init__(self, port: str, motors: Sequence[Tuple[str, int]], counters: Dict[str, int]):
        """Start with no flags; replies with flags are counted in ``counters``."""
        self.port = port
        self.ids: Dict[str, int] = dict(motors)
        self.names_by_id: Dict[int, str] = {i: name for name, i in motors}
        self.counters = counters
        self.flags: Dict[str, Tuple[str, ...]] = {name: () for name in self.ids}

    def note(self, motor_id: int, error: int) -> None:
        """Keep the flags of a reply's status byte (none when 0); log a new set once."""
        name = self.names_by_id[motor_id]
        flags = describe_status_error(error) if error else ()
        if flags:
            self.counters['status_errors'] += 1
            if flags != self.flags[name]:
                _LOGGER.warning('servo %r (id %d) on %s reports %s', name, motor_id,
                                self.port, ', '.join(flags))
        self.flags[name] = flags

    def error(self, positions: Optional[Mapping[str, int]] = None
              ) -> Optional[ServoStatusError]:
        """Return the error naming every flagged motor (None when none is flagged)."""
        flagged = {name: flags for name, flags in self.flags.items() if flags}
        if not flagged:
            return None
        described = '; '.join(f'motor {name!r} (id {self.ids[name]}): {", ".join(flags)}'
                              for name, flags in flagged.items())
        return ServoStatusError(f'servo error flags on port {self.port!r}: {described}',
                                flagged, positions)


class SyncGroups:
    """The SYNC_READ of positions, the SYNC_WRITE of goals, the torque-off broadcast."""

    def __init__(self, table: ControlTable, motors: Sequence[Tuple[str, int]], port: str):
        """Prepare for ``motors`` (name, id); :meth:`attach` builds the packets on a port."""
        self.table = table
        self.ids: Dict[str, int] = dict(motors)
        self.port = port
        self.reader: Optional[StatusGroupSyncRead] = None
        self.writer: Optional[scs.GroupSyncWrite] = None

    def attach(self, handler: scs.PortHandler, packet_handler: scs.PacketHandler) -> None:
        """Build the position reader (every motor) and the goal writer on an open port."""
        position = self.table['Present_Position']
        self.reader = StatusGroupSyncRead(handler, packet_handler, position.address,
                                          position.size)
        for motor_id in self.ids.values():
            self.reader.addParam(motor_id)
        goal = self.table['Goal_Position']
        self.writer = scs.GroupSyncWrite(handler, packet_handler, goal.address, goal.size)

    def detach(self) -> None:
        """Drop the packets (the port is closing)."""
        self.reader = None
        self.writer = None

    def positions(self) -> Dict[str, int]:
        """Decode the last SYNC_READ: Present_Position ticks by motor name."""
        register = self.table['Present_Position']
        return {name: register.from_bytes(self.reader.data_dict[motor_id])
                for name, motor_id in self.ids.items()}

    def goal_payload(self, goals: Mapping[str, int]) -> List[Tuple[int, List[int]]]:
        """Check and encode goals by motor name: (id, Goal_Position bytes) per motor.

        Unknown names and values that are not integers within the encoder range raise
        ValueError naming the motor, before anything is sent.
        """
        register = self.table['Goal_Position']
        payload: List[Tuple[int, List[int]]] = []
        for name, value in goals.items():
            motor_id = self.motor_id(name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                    value, (int, np.integer)):
                raise ValueError(
                    f'goal of motor {name!r} must be integer ticks, got {value!r}')
            if not 0 <= int(value) <= self.table.max_position:
                raise ValueError(
                    f'goal of motor {name!r} = {int(value)} ticks is outside '
                    f'0..{self.table.max_position}')
            payload.append((motor_id, list(register.to_bytes(int(value)))))
        return payload

    def motor_id(self, name: str) -> int:
        """Return the id of motor ``name``; ValueError lists the motors."""
        try:
            return self.ids[name]
        except (KeyError, TypeError):
            raise ValueError(
                f'unknown motor {name!r} on port {self.port!r}; motors: '
                f'{", ".join(self.ids)}') from None

    def names(self, names: Optional[Sequence[str]]) -> List[str]:
        """Return ``names`` (one name, several, or None: every motor) checked, as a list."""
        if names is None:
            return list(self.ids)
        if isinstance(names, str):
            names = [names]
        for name in names:
            self.motor_id(name)
        return list(names)

    def broadcast_torque_off(self, handler: scs.PortHandler,
                             packet_handler: scs.PacketHandler, names: Sequence[str]) -> None:
        """Send Torque_Enable 0 to ``names`` in one SYNC_WRITE (no reply; errors ignored).

        It reaches every motor even when replies are lost; the caller confirms each motor.
        """
        torque = self.table['Torque_Enable']
        broadcast = scs.GroupSyncWrite(handler, packet_handler, torque.address, 1)
        for name in names:
            broadcast.addParam(self.ids[name], [0])
        try:
            handler.is_using = False
            broadcast.txPacket()
        except PORT_EXCEPTIONS:
            pass
