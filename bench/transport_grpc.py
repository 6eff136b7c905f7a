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
gRPC with pickled payloads, as LeRobot's async inference ships it (the benchmark's baseline).

LeRobot's ``transport/services.proto`` service ``AsyncInference``, served with grpcio's generic
handlers (no generated code, no protoc): the robot client pickles a ``TimedObservation`` (the
raw observation dict: joint positions and the camera frame as a numpy array) and streams it to
``SendObservations`` in pieces of at most 2 MB (``send_bytes_in_chunks``); the server joins the
pieces (``receive_bytes_in_chunks``), unpickles and queues the observation; ``GetActions``
takes it, runs the policy (here: a constant chunk) and answers with a pickled list of
``TimedAction``. One round trip is both calls, as LeRobot's client makes them. The messages
``Observation {TransferState transfer_state = 1; bytes data = 2;}`` and ``Actions {bytes data
= 1;}`` are encoded with the protobuf wire format by hand. Actions hold numpy arrays where
LeRobot holds torch tensors (pickling tensors costs more, so this favours gRPC).
"""

from concurrent import futures
import dataclasses
import io
import pickle
import queue
import signal
import threading
import time

import grpc
import numpy as np

from transport_common import Client, constant_chunk, FPS, JOINTS, make_frame, make_joints

SERVICE = 'transport.AsyncInference'
CHUNK_SIZE = 2 * 1024 * 1024      # LeRobot's transport/utils.py
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
TRANSFER_BEGIN, TRANSFER_MIDDLE, TRANSFER_END = 1, 2, 3
OBS_QUEUE_TIMEOUT_S = 1.0


@dataclasses.dataclass
class TimedObservation:
    """LeRobot's TimedObservation: a raw robot observation with its time and step."""

    timestamp: float
    timestep: int
    observation: dict
    must_go: bool = False


@dataclasses.dataclass
class TimedAction:
    """LeRobot's TimedAction: one action of a chunk with its time and step."""

    timestamp: float
    timestep: int
    action: np.ndarray


def _varint(value):
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _fields(raw):
    """Yield (field number, value) of a protobuf message with varint and bytes fields."""
    view = memoryview(raw)
    pos = 0
    while pos < len(view):
        key, pos = _read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(view, pos)
        elif wire == 2:
            size, pos = _read_varint(view, pos)
            value = bytes(view[pos:pos + size])
            pos += size
        else:
            raise ValueError(f'unexpected wire type {wire}')
        yield number, value


def _read_varint(view, pos):
    result = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def encode_observation(piece):
    """Serialize ``Observation(transfer_state, data)``."""
    state, data = piece
    return b'\x08' + _varint(state) + b'\x12' + _varint(len(data)) + data


def decode_observation(raw):
    """Parse ``Observation`` into (transfer_state, data)."""
    fields = dict(_fields(raw))
    return fields.get(1, 0), fields.get(2, b'')


def encode_actions(data):
    """Serialize ``Actions(data)``."""
    return b'\x0a' + _varint(len(data)) + data


def decode_actions(raw):
    """Parse ``Actions`` into its data."""
    return dict(_fields(raw)).get(1, b'')


def send_bytes_in_chunks(buffer):
    """Yield (transfer_state, piece) of at most CHUNK_SIZE bytes (LeRobot's generator)."""
    stream = io.BytesIO(buffer)
    size = len(buffer)
    sent = 0
    while sent < size:
        state = TRANSFER_MIDDLE
        if sent + CHUNK_SIZE >= size:
            state = TRANSFER_END
        elif sent == 0:
            state = TRANSFER_BEGIN
        piece = stream.read(min(CHUNK_SIZE, size - sent))
        yield state, piece
        sent += len(piece)


def receive_bytes_in_chunks(iterator):
    """Join the pieces of one streamed payload (LeRobot's receiver); return the bytes."""
    buffer = io.BytesIO()
    for state, data in iterator:
        if state == TRANSFER_BEGIN:
            buffer.seek(0)
            buffer.truncate(0)
            buffer.write(data)
        elif state == TRANSFER_MIDDLE:
            buffer.write(data)
        elif state == TRANSFER_END:
            buffer.write(data)
            return buffer.getvalue()
        else:
            raise ValueError(f'unknown transfer state {state}')
    return None


def channel_options():
    """Return LeRobot's channel options (4 MB limits, retries)."""
    config = ('{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 5, '
              '"initialBackoff": "0.1s", "maxBackoff": "2s", "backoffMultiplier": 2, '
              '"retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}]}')
    return [('grpc.max_receive_message_length', MAX_MESSAGE_SIZE),
            ('grpc.max_send_message_length', MAX_MESSAGE_SIZE),
            ('grpc.enable_retries', 1), ('grpc.service_config', config)]


class PolicyServer:
    """LeRobot's PolicyServer reduced to its transport: queue of one, zero-cost policy."""

    def __init__(self):
        self.observations = queue.Queue(maxsize=1)
        self.chunk = constant_chunk()
        self.environment_dt = 1.0 / FPS

    def send_observations(self, request_iterator, context):
        received = receive_bytes_in_chunks(request_iterator)
        observation = pickle.loads(received)  # noqa: S301 - the baseline's design
        if self.observations.full():
            try:
                self.observations.get_nowait()
            except queue.Empty:
                pass
        self.observations.put(observation)
        return b''

    def get_actions(self, request, context):
        try:
            observation = self.observations.get(timeout=OBS_QUEUE_TIMEOUT_S)
        except queue.Empty:
            return b''
        actions = [TimedAction(observation.timestamp + i * self.environment_dt,
                               observation.timestep + i, action)
                   for i, action in enumerate(self.chunk)]
        return pickle.dumps(actions)


def serve(port):
    """Serve on 127.0.0.1:port until SIGINT or SIGTERM."""
    policy = PolicyServer()
    handler = grpc.method_handlers_generic_handler(SERVICE, {
        'SendObservations': grpc.stream_unary_rpc_method_handler(
            policy.send_observations, request_deserializer=decode_observation,
            response_serializer=lambda _: b''),
        'GetActions': grpc.unary_unary_rpc_method_handler(
            policy.get_actions, request_deserializer=lambda raw: raw,
            response_serializer=encode_actions),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=channel_options()[:2])
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f'127.0.0.1:{port}')
    server.start()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f'gRPC server ready on 127.0.0.1:{port}', flush=True)
    while not stop.wait(0.5):
        pass
    server.stop(grace=0.5).wait()


class GrpcClient(Client):
    """LeRobot's RobotClient reduced to one observation out, one chunk back."""

    def __init__(self, port):
        self.channel = grpc.insecure_channel(f'127.0.0.1:{port}', options=channel_options())
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.send = self.channel.stream_unary(
            f'/{SERVICE}/SendObservations', request_serializer=encode_observation,
            response_deserializer=lambda raw: raw)
        self.get = self.channel.unary_unary(
            f'/{SERVICE}/GetActions', request_serializer=lambda _: b'',
            response_deserializer=decode_actions)
        self.frame = make_frame()
        self.joints = make_joints()
        self.timestep = 0

    def roundtrip(self):
        self.timestep += 1
        raw = {f'{name}.pos': float(value) for name, value in zip(JOINTS, self.joints)}
        raw['front'] = self.frame
        observation = TimedObservation(time.time(), self.timestep, raw, must_go=True)
        self.send(send_bytes_in_chunks(pickle.dumps(observation)), timeout=5.0)
        data = self.get(b'', timeout=5.0)
        if not data:
            return False
        actions = pickle.loads(data)  # noqa: S301 - the baseline's design
        chunk = np.stack([action.action for action in actions])
        return chunk.shape == (50, 6)

    def close(self):
        self.channel.close()
