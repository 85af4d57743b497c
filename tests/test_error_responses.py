"""The schema-built error answer (faults): for every API and version it encodes, carries the error in every error
code, and mirrors the request's topics, partitions and keys."""

from __future__ import annotations

from typing import Any

import pytest
from minibroker.protocol.error_responses import error_response
from minibroker.protocol.frames import decode_response, encode_response
from minibroker.protocol.messages import REQUESTS
from minibroker.protocol.schema import Field, in_range, snake_case

SAMPLES = {"string": "s", "bool": False, "bytes": b"", "records": None, "uuid": bytes(16), "float64": 0.0}


def sample(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """A request with one element in every array, as the schema describes it."""
    body: dict[str, Any] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        if f.element_type is not None:
            body[snake_case(f.name)] = [sample(f.fields, version) if f.is_struct else SAMPLES.get(f.element_type, 1)]
        elif f.is_struct:
            body[snake_case(f.name)] = sample(f.fields, version)
        else:
            body[snake_case(f.name)] = SAMPLES.get(f.type, 1)
    return body


def error_codes(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [v for k, v in value.items() if k.endswith("error_code")] + [c for v in value.values() for c in error_codes(v)]
    if isinstance(value, list):
        return [c for item in value for c in error_codes(item)]
    return []


CASES = [(key, version) for key, message in sorted(REQUESTS.items()) for version in range(message.valid[0], message.valid[1] + 1)]


@pytest.mark.parametrize(("api_key", "version"), CASES)
def test_every_api_gets_an_encodable_error_answer(api_key: int, version: int) -> None:
    request = sample(REQUESTS[api_key].fields, version)
    answer = error_response(api_key, version, request, 7, "injected")
    frame = b"".join(bytes(part) for part in encode_response(api_key, version, 1, answer))[4:]
    decode_response(api_key, version, frame)
    codes = error_codes(answer)
    assert codes and set(codes) == {7}, answer


def test_the_answer_mirrors_topics_partitions_and_keys() -> None:
    commit = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 3}, {"partition_index": 5}]}]}
    assert error_response(8, 8, commit, 16, "x") == {  # every field set: the rest to its default
        "throttle_time_ms": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 3, "error_code": 16}, {"partition_index": 5, "error_code": 16}]}],
    }
    keys = {"key_type": 0, "coordinator_keys": ["a", "b"]}
    assert [(c["key"], c["error_code"]) for c in error_response(10, 4, keys, 15, "x")["coordinators"]] == [("a", 15), ("b", 15)]
    produce = {"topic_data": [{"name": "t", "partition_data": [{"index": 2}]}]}
    [topic] = error_response(0, 9, produce, 6, "x")["responses"]
    assert topic["name"] == "t" and [(p["index"], p["error_code"]) for p in topic["partition_responses"]] == [(2, 6)]


def test_every_request_array_feeds_the_only_response_array() -> None:
    """AlterUserScramCredentials: deletions and upsertions both become results, named by their users (as Kafka's
    getErrorResponse names them)."""
    alter = {"deletions": [{"name": "ann", "mechanism": 1}],
             "upsertions": [{"name": "bo", "mechanism": 2, "iterations": 4096, "salt": b"s", "salted_password": b"p"}]}
    assert error_response(51, 0, alter, 31, "x")["results"] == [
        {"user": "ann", "error_code": 31, "error_message": "x"}, {"user": "bo", "error_code": 31, "error_message": "x"},
    ]
