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
Which topic each observation feature is read from (no ROS).

A camera feature ``observation.images.<camera>`` reads ``cameras/<camera>/image_raw`` unless
the manifest's ``topic`` or the ``feature_topics`` parameter (``feature=topic``) says
otherwise; a privileged feature (a pose, a vector) needs one of those two. Topic names are
relative to each robot's namespace (:func:`topic_name`) unless absolute.
"""

from typing import Dict, Iterable, Mapping

from remote_inference_py.policy_server.manifest import FeatureSpec, PolicySpec

IMAGE_PREFIX = 'observation.images.'

COMPRESSED_SUFFIX = '/compressed'
"""Where image_transport publishes JPEG frames of a camera topic."""

IMAGE_TRANSPORTS = ('raw', 'compressed')
"""How the server reads camera frames: raw Image (or shared memory) or compressed JPEG."""


def topic_name(namespace: str, name: str) -> str:
    """Join a robot namespace and a relative topic name (absolute names stay as they are)."""
    if name.startswith('/') or not namespace:
        return name
    return f'{namespace.rstrip("/")}/{name}'


def parse_feature_topics(entries: Iterable[str]) -> Dict[str, str]:
    """Parse ``feature=topic`` strings into a dict; ValueError names a malformed entry."""
    topics = {}
    for entry in entries:
        feature, sep, topic = entry.partition('=')
        if not sep or not feature.strip() or not topic.strip():
            raise ValueError(f"feature_topics entry {entry!r} is not 'feature=topic'")
        topics[feature.strip()] = topic.strip()
    return topics


def default_topic(feature: FeatureSpec) -> str:
    """Return the default topic of a feature, or '' when it has none."""
    if feature.is_image and feature.name.startswith(IMAGE_PREFIX):
        return f'cameras/{feature.name[len(IMAGE_PREFIX):]}/image_raw'
    return ''


def resolve_topics(spec: PolicySpec, overrides: Mapping[str, str],
                   image_transport: str = 'raw') -> Dict[str, str]:
    """Map each non-state feature to its topic; ValueError names what is missing.

    With ``image_transport`` ``compressed`` the default and manifest camera topics get
    ``/compressed`` appended; ``feature_topics`` entries are used as written.
    """
    inputs = {f.name: f for f in spec.features if f.kind != 'state'}
    unknown = sorted(set(overrides) - set(inputs))
    if unknown:
        raise ValueError(f'feature_topics names {unknown}, which the policy does not '
                         f'consume (it reads {sorted(inputs) or "no images"})')
    topics = {}
    for name, feature in inputs.items():
        topic = overrides.get(name) or feature.topic or default_topic(feature)
        if (name not in overrides and feature.is_image and topic
                and image_transport == 'compressed' and not topic.endswith(COMPRESSED_SUFFIX)):
            topic += COMPRESSED_SUFFIX
        if not topic:
            raise ValueError(f'no topic for feature {name!r}: add "{name}=<topic>" to '
                             'the parameter feature_topics')
        topics[name] = topic
    return topics
