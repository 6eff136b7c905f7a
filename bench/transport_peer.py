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
Entry point of the transport benchmark's server and client processes.

``python bench/transport_peer.py <grpc|zenoh|ros_minimal> server [--port P] [--shm]
[--no-image]`` serves;
``python bench/transport_peer.py <grpc|zenoh|ros|ros_minimal> client --server-pid PID [--port P]
[--shm] [--together] [--no-image] [--topic-frames]`` connects, then obeys commands on stdin (see
:mod:`transport_common`).
The server of ``ros`` is the product's ``policy_server`` node, started by ``bench_transport.py``
itself; ``ros_minimal server`` is the bare rclpy reference server of :mod:`transport_ros`.
Every process binds or connects to 127.0.0.1 only.
"""

import argparse
import sys

from transport_common import connect_with_retries, serve_commands


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('transport', choices=('grpc', 'zenoh', 'ros', 'ros_minimal'))
    parser.add_argument('role', choices=('server', 'client'))
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--shm', action='store_true', help='zenoh: shared memory on')
    parser.add_argument('--server-pid', type=int, default=0)
    parser.add_argument('--together', action='store_true',
                        help='ros: publish the request with the observation, not ahead of it')
    parser.add_argument('--topic-frames', action='store_true',
                        help='ros: frames on the Image topic, not through shared memory')
    parser.add_argument('--no-image', action='store_true',
                        help='ros_minimal: joints only, no camera frame (small-message floor)')
    options = parser.parse_args(argv)
    if options.role == 'server':
        if options.transport == 'grpc':
            import transport_grpc
            transport_grpc.serve(options.port)
        elif options.transport == 'zenoh':
            import transport_zenoh
            transport_zenoh.serve(options.port, options.shm)
        elif options.transport == 'ros_minimal':
            import transport_ros
            transport_ros.serve_minimal(image=not options.no_image)
        else:
            sys.exit('the ROS server is the policy_server node, started by bench_transport.py')
        return
    if options.transport == 'grpc':
        import transport_grpc
        client = transport_grpc.GrpcClient(options.port)
    elif options.transport == 'zenoh':
        import transport_zenoh
        client = transport_zenoh.ZenohClient(options.port, options.shm)
    else:
        import transport_ros
        client = transport_ros.RosClient(admit=options.transport == 'ros',
                                         together=options.together,
                                         image=not options.no_image,
                                         share=(options.transport == 'ros'
                                                and not options.topic_frames))
    connect_with_retries(client)
    serve_commands(client, options.server_pid)


if __name__ == '__main__':
    main()
