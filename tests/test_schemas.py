"""Every generated message schema matches Apache Kafka's JSON definition, field by field: 4.3.1's for its versions,
and kafka-clients 3.9.1's for the versions Kafka 4 dropped (KIP-896), which ``--kafka-version`` still serves."""

from __future__ import annotations

import json
import re
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

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
    return parse(path.read_text())


def parse(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def legacy_jar() -> Path:
    """kafka-clients 3.9.1's jar (tests/javautil.py fetches it once), whose JSON defines the versions before 4.x."""
    from tests.javautil import JavaUnavailable, jars

    try:
        return jars()[0]
    except JavaUnavailable as unavailable:
        pytest.skip(f"kafka-clients 3.9.1 is not available: {unavailable}")


@cache
def legacy_specs() -> dict[str, dict]:
    with zipfile.ZipFile(legacy_jar()) as jar:
        names = [n for n in jar.namelist() if n.startswith("common/message/") and n.endswith(".json")]
        return {spec["name"]: spec for spec in (parse(jar.read(name).decode()) for name in names)}


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


def inside(version: int, span: tuple[int, int] | None) -> bool:
    return span is not None and span[0] <= version <= span[1]


def ours_at(fields: tuple[Field, ...], version: int) -> list[tuple[Any, ...]]:
    """What one version of a generated message puts on the wire, field by field (a struct's type name aside)."""
    return [
        (f.name, "struct" if f.is_struct and not f.element_type else "[]struct" if f.is_struct else f.type,
         inside(version, f.nullable), inside(version, f.tagged), f.tag if inside(version, f.tagged) else None,
         f.flexible is False, f.default, ours_at(f.fields, version))
        for f in fields if inside(version, f.versions)
    ]


def theirs_at(fields: list[dict], structs: dict[str, dict], version: int) -> list[tuple[Any, ...]]:
    """The same, read off Kafka's JSON."""
    out = []
    for spec in fields:
        if not inside(version, versions(spec.get("versions", spec.get("taggedVersions")))):
            continue
        element = spec["type"].removeprefix("[]")
        children = spec.get("fields") or structs.get(element, {}).get("fields")
        kind = ("[]struct" if spec["type"].startswith("[]") else "struct") if children is not None else spec["type"]
        tagged = inside(version, versions(spec.get("taggedVersions")))
        out.append((
            spec["name"], kind, inside(version, versions(spec.get("nullableVersions"))), tagged,
            spec.get("tag") if tagged else None, spec.get("flexibleVersions") == "none", default_of(spec),
            theirs_at(children or [], structs, version),
        ))
    return out


def default_of(spec: dict) -> Any:
    raw = spec.get("default")
    if raw is None:
        return None
    text = str(raw).strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text, 0)
    except ValueError:
        return float(text) if spec["type"] == "float64" else text


def check_versions(message: Message, spec: dict, low: int, high: int) -> None:
    structs = {s["name"]: s for s in spec.get("commonStructs", [])}
    for version in range(low, high + 1):
        assert inside(version, message.flexible) == inside(version, versions(spec.get("flexibleVersions"))), version
        assert ours_at(message.fields, version) == theirs_at(spec.get("fields", []), structs, version), version


@needs_kafka_spec
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_schema_matches_kafka_json(name: str) -> None:
    message: Message = BY_NAME[name]
    spec = load(name)
    assert message.api_key == spec.get("apiKey")
    assert message.kind == spec["type"]
    valid = versions(spec["validVersions"])
    if message.valid == valid:
        assert message.flexible == versions(spec.get("flexibleVersions"))
        structs = {s["name"]: s for s in spec.get("commonStructs", [])}
        check_fields(message.fields, spec.get("fields", []), structs, name)
    else:  # old versions were put back: 4.3.1's versions are 4.3.1's, version by version
        assert message.valid[1] == valid[1] and message.valid[0] < valid[0]
        check_versions(message, spec, valid[0], valid[1])


@needs_kafka_spec
@pytest.mark.parametrize("name", sorted(m.name for m in BY_NAME.values() if m.kind in ("request", "response")))
def test_old_versions_match_kafka_3_9_json(name: str) -> None:
    """Versions below 4.3.1's minimum are 3.9.1's, every one 3.9.1 defined (but for KIP-932's early-access v0)."""
    message: Message = BY_NAME[name]
    old = legacy_specs().get(name)
    new_low = versions(load(name)["validVersions"])[0]
    old_valid = versions(old["validVersions"]) if old else None
    if old_valid is None or old_valid[0] >= new_low or message.api_key in (76, 77, 78, 79):
        assert message.valid is None or message.valid[0] == new_low
        return
    assert message.valid[0] == old_valid[0]
    check_versions(message, old, old_valid[0], new_low - 1)


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
