"""The config resource types each emulated Kafka release served in DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs, over the wire for every release of the table x every type: served, or refused as that
release refused it (Kafka's source at the release tags; minibroker.config.resources). Each type is asked next to a
topic, whose answer tells a refusal of the whole request (the handler threw, up to 3.1 for the alter APIs and in
every release for DescribeConfigs) from one of that resource alone."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.config.releases import known_releases, release_number, served_by_release
from minibroker.config.resources import refusal_message, serves
from minibroker.testing import Broker
from tests.clientutil import RawConnection

DESCRIBE, ALTER, INCREMENTAL = 32, 33, 44
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
NAMES = {BROKER: "1", BROKER_LOGGER: "1", CLIENT_METRICS: "metrics", GROUP: "g"}
GENERIC = ("This most likely occurs because of a request being malformed by the client library or the message was "
           "sent to an incompatible broker. See the broker logs for more details.")
# What each type's request changes when served (validate only: nothing is kept)
CHANGES = {TOPIC: [("retention.ms", "60000")], GROUP: [("consumer.session.timeout.ms", "45000")]}

# The releases that added each type to ConfigResource.Type (0.11: before every emulated release)
ADDED = {TOPIC: "0.11", BROKER: "0.11", BROKER_LOGGER: "2.4", CLIENT_METRICS: "3.7", GROUP: "4.0"}


def before(release: str, other: str) -> bool:
    return release_number(release) < release_number(other)


def expected_refusal(release: str, api: int, kind: int, name: str) -> tuple[str, bool, int] | None:
    """(message, whole request, type answered) of the release's refusal; None when the release served the type."""
    known = not before(release, ADDED[kind])
    if known and not (api == ALTER and kind == BROKER_LOGGER):
        return None
    type_name = "BROKER_LOGGER" if known else "UNKNOWN"
    if api == DESCRIBE:
        old = before(release, "2.7")
        return (f"Unexpected resource type UNKNOWN for resource {name}" if old else GENERIC, True,
                0 if old else kind)
    if not before(release, "3.2"):
        return f"Unknown resource type {kind}", False, kind
    if api == ALTER and known:
        return "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER", True, kind
    read_as_unknown = api == ALTER and before(release, "2.6")
    return f"Unexpected resource type {type_name}", True, 0 if read_as_unknown else kind


def call(conn: RawConnection, api: int, version: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    answer = decode_response(api, version, conn.request(api, version, body))[1]
    return answer["results" if api == DESCRIBE else "responses"]


def ask(conn: RawConnection, api: int, resources: list[tuple[int, str]]) -> list[tuple[int, str, int, str | None]]:
    """Each resource's (type, name, error code, message) as the API answered a request naming them all."""
    if api == DESCRIBE:
        body = {"resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": []}
                              for kind, name in resources], "include_synonyms": False}
    else:
        op = {"config_operation": 0} if api == INCREMENTAL else {}
        body = {"validate_only": True, "resources": [{"resource_type": kind, "resource_name": name, "configs": [
            {"name": key, "value": value, **op} for key, value in CHANGES.get(kind, [])]}
            for kind, name in resources]}
    return [(r["resource_type"], r["resource_name"], r["error_code"], r["error_message"])
            for r in call(conn, api, 1 if api == DESCRIBE else 0, body)]


@pytest.fixture(params=known_releases())
def emulated(request: pytest.FixtureRequest, topic_name: str) -> Iterator[tuple[str, str, RawConnection]]:
    with Broker(kafka_version=request.param) as broker:
        broker.create_topic(topic_name, 1)
        with RawConnection(broker.bootstrap_servers) as conn:
            yield request.param, topic_name, conn


def test_each_release_serves_or_refuses_each_type_as_it_did(emulated: tuple[str, str, RawConnection]) -> None:
    release, topic, conn = emulated
    apis = [api for api in (DESCRIBE, ALTER, INCREMENTAL) if api in served_by_release()[release]]
    for api in apis:
        assert ask(conn, api, [(TOPIC, topic)]) == [(TOPIC, topic, ErrorCode.NONE, None)], (release, api)
        for kind, name in NAMES.items():
            answers = ask(conn, api, [(kind, name), (TOPIC, topic)])
            refused = expected_refusal(release, api, kind, name)
            if refused is None:
                [(_, _, code, _), topic_answer] = answers
                minibroker_serves = kind != CLIENT_METRICS  # served by the release, not by minibroker
                assert (code == ErrorCode.NONE) == minibroker_serves, (release, api, kind, answers)
                assert topic_answer == (TOPIC, topic, ErrorCode.NONE, None), (release, api, kind, answers)
                continue
            message, whole, answered_type = refused
            topic_answer = (TOPIC, topic, *((ErrorCode.INVALID_REQUEST, message) if whole else (ErrorCode.NONE, None)))
            refused_answer = (answered_type, name, ErrorCode.INVALID_REQUEST, message)
            assert answers == [refused_answer, topic_answer], (release, api, kind)


def test_a_group_config_under_3_7_is_refused_as_kafka_3_7_did(topic_name: str) -> None:
    """The issue's case: Kafka 3.7 had no GROUP resources; DescribeConfigs fails the whole request with the default
    message, the alter APIs refuse that resource alone; unknown type ids the same in every release."""
    with Broker(kafka_version="3.7") as broker, RawConnection(broker.bootstrap_servers) as conn:
        assert ask(conn, DESCRIBE, [(GROUP, "g")]) == [(GROUP, "g", ErrorCode.INVALID_REQUEST, GENERIC)]
        for api in (ALTER, INCREMENTAL):
            refused = (GROUP, "g", ErrorCode.INVALID_REQUEST, "Unknown resource type 32")
            assert ask(conn, api, [(GROUP, "g")]) == [refused]
    with Broker() as broker, RawConnection(broker.bootstrap_servers) as conn:
        assert ask(conn, DESCRIBE, [(64, "x")]) == [(64, "x", ErrorCode.INVALID_REQUEST, GENERIC)]
        assert ask(conn, INCREMENTAL, [(64, "x")]) == [(64, "x", ErrorCode.INVALID_REQUEST, "Unknown resource type 64")]
        assert ask(conn, DESCRIBE, [(GROUP, "g")])[0][2] == ErrorCode.NONE


@pytest.mark.parametrize(("release", "api", "kind", "served", "message"), [
    ("2.3", DESCRIBE, BROKER_LOGGER, False, "Unexpected resource type UNKNOWN for resource n"),
    ("2.4", DESCRIBE, BROKER_LOGGER, True, None),
    ("2.4", ALTER, BROKER_LOGGER, False,
     "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER"),
    ("3.1", INCREMENTAL, GROUP, False, "Unexpected resource type UNKNOWN"),
    ("3.6", DESCRIBE, CLIENT_METRICS, False, GENERIC),
    ("3.7", ALTER, CLIENT_METRICS, True, None),
    ("3.9", ALTER, GROUP, False, "Unknown resource type 32"),
    ("4.0", INCREMENTAL, GROUP, True, None),
    ("4.3", ALTER, BROKER_LOGGER, False, "Unknown resource type 8"),
])
def test_the_table(release: str, api: int, kind: int, served: bool, message: str | None) -> None:
    assert serves(release, api, kind) == served
    if message is not None:
        assert refusal_message(release, api, kind, "n") == message
