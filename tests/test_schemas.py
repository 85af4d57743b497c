"""Every generated message schema matches Apache Kafka's JSON definition, field by field."""

from __future__ import annotations

import json
import re

import pytest
from minibroker.protocol.messages import BY_NAME, KAFKA_APIS
from minibroker.protocol.schema import MAX_VERSION, Field, Message

from tests.conftest import SPEC_DIR, needs_kafka_spec

MESSAGES_DIR = SPEC_DIR / "messages"
INTERNAL_DIRS = tuple(SPEC_DIR / "internal" / part for part in ("group-coordinator", "share-coordinator", "transaction-coordinator"))
INTERNAL_RECORDS = {
    "LegacyOffsetCommitKey", "LegacyOffsetCommitValue", "OffsetCommitKey", "OffsetCommitValue",
    "GroupMetadataKey", "GroupMetadataValue", "TransactionLogKey", "TransactionLogValue",
    *(f"ConsumerGroup{name}{part}" for name in (
        "Metadata", "PartitionMetadata", "MemberMetadata", "TargetAssignmentMetadata", "TargetAssignmentMember",
        "CurrentMemberAssignment", "RegularExpression",
    ) for part in ("Key", "Value")),
    *(f"ShareGroup{name}{part}" for name in (
        "Metadata", "MemberMetadata", "StatePartitionMetadata", "TargetAssignmentMetadata", "TargetAssignmentMember",
        "CurrentMemberAssignment",
    ) for part in ("Key", "Value")),
    *(f"Share{name}{part}" for name in ("Snapshot", "Update") for part in ("Key", "Value")),
}


def load(name: str) -> dict:
    path = next(p for p in (d / f"{name}.json" for d in (MESSAGES_DIR, *INTERNAL_DIRS)) if p.exists())
    return json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M))


def versions(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def check_fields(ours: tuple[Field, ...], theirs: list[dict], structs: dict[str, dict], path: str) -> None:
    assert [f.name for f in ours] == [t["name"] for t in theirs], path
    for mine, spec in zip(ours, theirs):
        where = f"{path}.{spec['name']}"
        assert mine.type == spec["type"], where
        assert mine.versions == versions(spec.get("versions", spec.get("taggedVersions"))), where
        assert mine.nullable == versions(spec.get("nullableVersions")), where
        assert mine.tagged == versions(spec.get("taggedVersions")), where
        assert mine.tag == spec.get("tag"), where
        assert (mine.flexible is False) == (spec.get("flexibleVersions") == "none"), where
        if "default" in spec:
            assert str(mine.default).lower() == str(spec["default"]).lower() or int(str(spec["default"]), 0) == mine.default, where
        children = spec.get("fields")
        element = spec["type"].removeprefix("[]")
        if children is None and element in structs:
            children = structs[element]["fields"]
        check_fields(mine.fields, children or [], structs, where)


@needs_kafka_spec
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_schema_matches_kafka_json(name: str) -> None:
    message: Message = BY_NAME[name]
    spec = load(name)
    assert message.api_key == spec.get("apiKey")
    assert message.kind == spec["type"]
    assert message.valid == versions(spec["validVersions"])
    assert message.flexible == versions(spec.get("flexibleVersions"))
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}
    check_fields(message.fields, spec.get("fields", []), structs, name)


def test_every_request_has_its_response() -> None:
    requests = {m.api_key for m in BY_NAME.values() if m.kind == "request"}
    responses = {m.api_key for m in BY_NAME.values() if m.kind == "response"}
    assert requests == responses


def test_internal_records_are_generated() -> None:
    """The __consumer_offsets and __transaction_state record schemas are generated with their record types."""
    internal = {m.name: m for m in BY_NAME.values() if m.kind in ("coordinator-key", "coordinator-value")}
    assert set(internal) == INTERNAL_RECORDS


@needs_kafka_spec
def test_internal_record_types_match_kafka_json() -> None:
    internal = {m.name: m for m in BY_NAME.values() if m.kind in ("coordinator-key", "coordinator-value")}
    for name, message in internal.items():
        assert message.api_key == load(name)["apiKey"], name


@needs_kafka_spec
def test_kafka_apis_are_every_request_kafka_defines() -> None:
    """KAFKA_APIS (from which the README lists the APIs not served) holds every request definition with versions,
    with its name and listeners."""
    defined = {}
    for path in MESSAGES_DIR.glob("*Request.json"):
        spec = load(path.stem)
        if versions(spec["validVersions"]) is not None:
            defined[spec["apiKey"]] = (spec["name"].removesuffix("Request"), tuple(spec["listeners"]))
    assert KAFKA_APIS == defined
