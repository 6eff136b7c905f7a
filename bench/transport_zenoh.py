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
Zenoh with msgpack (the design LeRobot is moving to), shared memory on or off.

Query/reply as in LeRobot's ``transport/zenoh.py``: the client sends the msgpack-encoded
observation (joint positions, the frame as raw bytes with its shape) as the payload of a query
on ``ri_bench/infer``; the server's queryable decodes it, runs the policy (a constant chunk)
and replies with the msgpack-encoded chunk from inside a direct (non-indirect) callback: the
fastest way zenoh-python offers. Peers talk over TCP on 127.0.0.1 only (explicit endpoints,
no scouting).

Shared memory (zenoh-python 1.10, ``zenoh.shm``, marked unstable): with ``shm`` the session
enables ``transport/shared_memory`` and the client writes each encoded observation into a
buffer of a 16 MiB ``ShmProvider`` (``BlockOn(GarbageCollect())`` recycles buffers the server
has released); the server sees ``payload.as_shm()`` set and copies the bytes out. Without
``shm``, ``transport/shared_memory/enabled`` is false and everything crosses the socket. (With
shared memory enabled, zenoh 1.10 also copies large plain-bytes payloads into shared memory by
itself: ``transport_optimization``; measured the same as the explicit provider.)
"""

import json
import signal
import threading

import msgpack
import numpy as np
from transport_common import Client, constant_chunk, IMAGE_SHAPE, make_frame, make_joints
import zenoh

KEY = 'ri_bench/infer'
SHM_POOL_BYTES = 16 * 1024 * 1024


def make_config(shm, listen=None, connect=None):
    """Return a peer config on loopback endpoints with shared memory on or off."""
    config = zenoh.Config()
    settings = {
        'mode': 'peer',
        'scouting/multicast/enabled': False,
        'scouting/gossip/enabled': False,
        'transport/shared_memory/enabled': bool(shm),
        'listen/endpoints': [listen] if listen else [],
        'connect/endpoints': [connect] if connect else [],
    }
    for key, value in settings.items():
        config.insert_json5(key, json.dumps(value))
    return config


def serve(port, shm):
    """Serve queries on tcp/127.0.0.1:port until SIGINT or SIGTERM."""
    session = zenoh.open(make_config(shm, listen=f'tcp/127.0.0.1:{port}'))
    chunk = constant_chunk()
    answer_meta = {'shape': list(chunk.shape), 'dtype': 'float32'}
    shm_seen = [0, 0]

    def on_query(query):
        payload = query.payload
        shm_seen[payload.as_shm() is not None] += 1
        observation = msgpack.unpackb(payload.to_bytes())
        image = observation['images']['front']
        frame = np.frombuffer(image['data'], dtype=np.uint8).reshape(image['shape'])
        state = np.asarray(observation['state'], dtype=np.float32)
        if frame.shape != IMAGE_SHAPE or state.shape != (6,):
            query.reply_err(b'bad observation')
        else:
            reply = dict(answer_meta, timestep=observation['timestep'], data=chunk.tobytes())
            query.reply(query.key_expr, msgpack.packb(reply))
        query.drop()

    queryable = session.declare_queryable(
        KEY, zenoh.handlers.Callback(on_query, indirect=False), complete=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f'zenoh server ready on tcp/127.0.0.1:{port} (shared memory '
          f'{"on" if shm else "off"})', flush=True)
    while not stop.wait(0.5):
        pass
    print(f'queries with a shared-memory payload: {shm_seen[1]}, without: {shm_seen[0]}',
          flush=True)
    queryable.undeclare()
    session.close()


class ZenohClient(Client):
    """Send the observation as a query payload and wait for the chunk."""

    def __init__(self, port, shm):
        self.session = zenoh.open(make_config(shm, connect=f'tcp/127.0.0.1:{port}'))
        self.querier = self.session.declare_querier(KEY, timeout=2.0)
        self.provider = None
        if shm:
            self.provider = zenoh.shm.ShmProvider.default_backend(SHM_POOL_BYTES)
            self.policy = zenoh.shm.BlockOn(zenoh.shm.GarbageCollect())
        self.frame = make_frame()
        self.joints = make_joints()
        self.timestep = 0

    def roundtrip(self):
        self.timestep += 1
        packed = msgpack.packb({
            'timestep': self.timestep,
            'state': [float(v) for v in self.joints],
            'images': {'front': {'shape': list(self.frame.shape), 'dtype': 'uint8',
                                 'data': self.frame.reshape(-1).data}}})
        if self.provider is not None:
            buffer = self.provider.alloc(len(packed), self.policy)
            buffer[0:len(packed)] = packed
            payload = zenoh.ZBytes(buffer)
        else:
            payload = packed
        chunk = None
        for reply in self.querier.get(payload=payload):
            if reply.ok is None:
                return False
            answer = msgpack.unpackb(reply.ok.payload.to_bytes())
            chunk = np.frombuffer(answer['data'], dtype=np.float32).reshape(answer['shape'])
        return chunk is not None and chunk.shape == (50, 6)

    def close(self):
        self.querier.undeclare()
        self.session.close()
