"""The config resource types (Kafka's ConfigResource.Type) each Apache Kafka release's config APIs served, and how the
release refused a resource of a type it did not serve, so DescribeConfigs, AlterConfigs and IncrementalAlterConfigs
under ``kafka.version`` answer as that release did (without it: as the newest, 4.3).

Facts read off Kafka's source at the release tags. ConfigResource.Type had TOPIC and BROKER from 0.11 (KIP-133), and
gained BROKER_LOGGER in 2.4 (KIP-412), CLIENT_METRICS in 3.7 (KIP-714) and GROUP in 4.0 (KIP-848, apache/kafka
bbdf79e1b4f); a type id the release did not have reads as UNKNOWN (Type.forId). Every API served every type of its
release's Type but AlterConfigs, which never served BROKER_LOGGER.

- DescribeConfigs (KafkaApis.handleDescribeConfigsRequest, ConfigHelper from 3.7): the handler throws
  InvalidRequestException("Unexpected resource type UNKNOWN for resource <name>") at the first resource of an
  unknown type, so every resource of the request answers INVALID_REQUEST (DescribeConfigsRequest.getErrorResponse):
  up to 2.6 with that message and each type as read (UNKNOWN is 0), from 2.7 (the generated response data) with
  INVALID_REQUEST's default message and the types as sent. Every release since does the same.
- AlterConfigs: up to 3.1 the handler throws likewise, "Unexpected resource type UNKNOWN" (from 2.4, for
  BROKER_LOGGER, "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER"), each type as
  read up to 2.5 (AlterConfigsRequest built from ConfigResources), as sent from 2.6. From 3.2
  (ConfigAdminManager.preprocess, KAFKA-13552) only that resource answers, "Unknown resource type <id>".
- IncrementalAlterConfigs (from 2.3): up to 3.1 the whole request, "Unexpected resource type UNKNOWN", the types as
  sent; from 3.2 that resource alone, "Unknown resource type <id>".
"""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.config.releases import emulated_release, release_number

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
UNKNOWN = 0  # ConfigResource.Type.UNKNOWN: what a release read an id it did not have as
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44

# ConfigResource.Type's members: id -> (name, the release that added it)
TYPES: dict[int, tuple[str, str]] = {
    TOPIC: ("TOPIC", "0.11"),
    BROKER: ("BROKER", "0.11"),
    BROKER_LOGGER: ("BROKER_LOGGER", "2.4"),
    CLIENT_METRICS: ("CLIENT_METRICS", "3.7"),
    GROUP: ("GROUP", "4.0"),
}
NEVER_SERVED: dict[int, frozenset[int]] = {ALTER_CONFIGS: frozenset({BROKER_LOGGER})}  # KIP-412: only incrementally

INVALID_REQUEST_MESSAGE = (  # Errors.INVALID_REQUEST's default message
    "This most likely occurs because of a request being malformed by the client library or the message was sent to "
    "an incompatible broker. See the broker logs for more details."
)


@dataclass(frozen=True)
class Refusal:
    """How a release's API refused a resource type it did not serve. The messages are formatted with ``id`` (the type
    id sent), ``type`` (its ConfigResource.Type name in the release) and ``name`` (the resource's)."""

    message: str  # for a type the release did not have
    whole_request: bool  # thrown by the handler: every resource of the request answers the first refusal
    types_as_read: bool = False  # the answer gives each resource's type as the release read it (UNKNOWN: 0)
    unserved: str | None = None  # for a type the release had but the API did not serve, if not ``message``


# Each API's refusals, by the release that brought each
REFUSALS: dict[int, tuple[tuple[str, Refusal], ...]] = {
    DESCRIBE_CONFIGS: (
        ("2.1", Refusal("Unexpected resource type {type} for resource {name}", whole_request=True, types_as_read=True)),
        ("2.7", Refusal(INVALID_REQUEST_MESSAGE, whole_request=True)),
    ),
    ALTER_CONFIGS: (
        ("2.1", Refusal("Unexpected resource type {type}", whole_request=True, types_as_read=True)),
        ("2.4", Refusal("Unexpected resource type {type}", whole_request=True, types_as_read=True,
                        unserved="AlterConfigs is deprecated and does not support the resource type {type}")),
        ("2.6", Refusal("Unexpected resource type {type}", whole_request=True,
                        unserved="AlterConfigs is deprecated and does not support the resource type {type}")),
        ("3.2", Refusal("Unknown resource type {id}", whole_request=False)),
    ),
    INCREMENTAL_ALTER_CONFIGS: (
        ("2.3", Refusal("Unexpected resource type {type}", whole_request=True)),
        ("3.2", Refusal("Unknown resource type {id}", whole_request=False)),
    ),
}


def _has_type(release: str, type_id: int) -> bool:
    """Whether the release's ConfigResource.Type had the id."""
    return type_id in TYPES and release_number(TYPES[type_id][1]) <= release_number(release)


def serves(release: str, api_key: int, type_id: int) -> bool:
    """Whether the release's config API ``api_key`` served resources of the type."""
    return _has_type(release, type_id) and type_id not in NEVER_SERVED.get(api_key, frozenset())


def refusal(release: str, api_key: int) -> Refusal:
    """The API's refusal in the release (the latest brought by then)."""
    return [rule for since, rule in REFUSALS[api_key] if release_number(since) <= release_number(release)][-1]


def refusal_message(release: str, api_key: int, type_id: int, name: str) -> str:
    """What the release answered for a resource of a type its API did not serve."""
    rule = refusal(release, api_key)
    known = _has_type(release, type_id)
    template = rule.unserved if known and rule.unserved is not None else rule.message
    return template.format(id=type_id, type=TYPES[type_id][0] if known else "UNKNOWN", name=name)


def request_refusal(
    kafka_version: str, api_key: int, resources: list[tuple[int, str]],
) -> list[tuple[int, str, str]] | None:
    """Where the emulated release's API failed a whole request for a type it did not serve: each resource's (type as
    answered, name, message), the message the first such resource's; None when it did not."""
    release = emulated_release(kafka_version)
    rule = refusal(release, api_key)
    if not rule.whole_request:
        return None
    refused = [(type_id, name) for type_id, name in resources if not serves(release, api_key, type_id)]
    if not refused:
        return None
    message = refusal_message(release, api_key, *refused[0])
    return [
        (UNKNOWN if rule.types_as_read and not _has_type(release, type_id) else type_id, name, message)
        for type_id, name in resources
    ]


def resource_refusal(kafka_version: str, api_key: int, type_id: int, name: str) -> str | None:
    """Where the emulated release's API refused one resource alone for its type: the message; else None."""
    release = emulated_release(kafka_version)
    if refusal(release, api_key).whole_request or serves(release, api_key, type_id):
        return None
    return refusal_message(release, api_key, type_id, name)
