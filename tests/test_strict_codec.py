"""The codec's strict mode (protocol/strict.py): responses that do not match their schema are refused, not
written with defaults. The suite runs with it on (conftest), so these tests check the check itself."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from minibroker.protocol import strict
from minibroker.protocol.frames import encode_response
from minibroker.protocol.messages import DESCRIBE_CLUSTER_REQUEST
from minibroker.protocol.primitives import Writer
from minibroker.protocol.schema import codec

DESCRIBE_CLUSTER = 60


def describe_cluster(**changes: Any) -> dict[str, Any]:
    body = {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1, "cluster_id": "c",
        "controller_id": 1, "brokers": [{"broker_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
        "cluster_authorized_operations": -2147483648,
    }
    body.update(changes)
    return body


@pytest.fixture
def expected_violations() -> Iterator[list[str]]:
    """The violations a test provokes on purpose, taken out of the record the suite-wide check reads."""
    before = len(strict.VIOLATIONS)
    taken: list[str] = []
    yield taken
    taken += strict.VIOLATIONS[before:]
    del strict.VIOLATIONS[before:]


def encode(version: int, body: dict[str, Any]) -> None:
    encode_response(DESCRIBE_CLUSTER, version, 7, body)


def test_strict_mode_is_on_in_the_suite() -> None:
    assert strict.enabled()


def test_a_complete_answer_is_encoded() -> None:
    encode(1, describe_cluster())


@pytest.mark.parametrize(("change", "complaint"), [
    ({"brokers": [{"node_id": 1, "host": "h", "port": 1, "rack": None}]}, "'node_id', which the schema does not know"),
    ({"brokers": [{"host": "h", "port": 1, "rack": None}]}, "brokers[0] lacks broker_id"),
    ({"cluster_idd": "x"}, "'cluster_idd'"),
])
def test_unknown_and_missing_fields_are_refused(
    change: dict[str, Any], complaint: str, expected_violations: list[str],
) -> None:
    with pytest.raises(strict.StrictCodecError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
        encode(1, describe_cluster(**change))
    assert complaint in strict.VIOLATIONS[-1]  # recorded for the suite-wide check (the fixture takes it out)


def test_a_field_the_version_lacks_must_hold_its_default(expected_violations: list[str]) -> None:
    """EndpointType is v1+ and not ignorable: a v0 answer cannot say it, as Kafka's writers refuse."""
    encode(0, describe_cluster(endpoint_type=1))  # the default: nothing to say
    with pytest.raises(strict.StrictCodecError, match="version 0 has no EndpointType"):
        encode(0, describe_cluster(endpoint_type=2))


def test_a_field_with_a_declared_default_may_be_left_out() -> None:
    body = describe_cluster()
    del body["cluster_authorized_operations"]  # its JSON default is -2147483648
    encode(1, body)


def test_requests_are_not_checked() -> None:
    """Requests come from clients (and tests that send partial ones on purpose); only answers are checked."""
    codec(DESCRIBE_CLUSTER_REQUEST, 1).encode(Writer(), {"unknown": 1})


def test_suspended_lets_partial_answers_through(expected_violations: list[str]) -> None:
    with strict.suspended():
        encode(1, {"cluster_id": "c"})
    with pytest.raises(strict.StrictCodecError):
        encode(1, {"cluster_id": "c"})
