"""Generate ``protocol/messages.py`` from Apache Kafka's JSON message definitions.

Only facts are kept (names, types, version ranges, tags, defaults); Kafka's prose is dropped.
Run from the repository root:

    python tools/gen_schemas.py ../shared/kafka-protocol
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

API_KEYS = (
    0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
    29, 30, 31, 32, 33, 34, 35, 36, 37, 42, 43, 44, 45, 46, 47, 50, 51, 57, 60, 61, 65, 66, 68, 69, 75, 76, 77, 78, 79, 90, 91, 92,
)
EXTRA = (
    "messages/RequestHeader.json",
    "messages/ResponseHeader.json",
    "messages/ConsumerProtocolSubscription.json",
    "messages/ConsumerProtocolAssignment.json",
)
# Records of the internal topics (__consumer_offsets, __share_group_state, __transaction_state): the JSON "apiKey" is the record type.
INTERNAL = (
    "internal/group-coordinator/LegacyOffsetCommitKey.json",
    "internal/group-coordinator/LegacyOffsetCommitValue.json",
    "internal/group-coordinator/OffsetCommitKey.json",
    "internal/group-coordinator/OffsetCommitValue.json",
    "internal/group-coordinator/GroupMetadataKey.json",
    "internal/group-coordinator/GroupMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupPartitionMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupPartitionMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupMemberMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupMemberMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMetadataKey.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMetadataValue.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMemberKey.json",
    "internal/group-coordinator/ConsumerGroupTargetAssignmentMemberValue.json",
    "internal/group-coordinator/ConsumerGroupCurrentMemberAssignmentKey.json",
    "internal/group-coordinator/ConsumerGroupCurrentMemberAssignmentValue.json",
    "internal/group-coordinator/ConsumerGroupRegularExpressionKey.json",
    "internal/group-coordinator/ConsumerGroupRegularExpressionValue.json",
    "internal/group-coordinator/ShareGroupMetadataKey.json",
    "internal/group-coordinator/ShareGroupMetadataValue.json",
    "internal/group-coordinator/ShareGroupMemberMetadataKey.json",
    "internal/group-coordinator/ShareGroupMemberMetadataValue.json",
    "internal/group-coordinator/ShareGroupStatePartitionMetadataKey.json",
    "internal/group-coordinator/ShareGroupStatePartitionMetadataValue.json",
    "internal/group-coordinator/ShareGroupTargetAssignmentMetadataKey.json",
    "internal/group-coordinator/ShareGroupTargetAssignmentMetadataValue.json",
    "internal/group-coordinator/ShareGroupTargetAssignmentMemberKey.json",
    "internal/group-coordinator/ShareGroupTargetAssignmentMemberValue.json",
    "internal/group-coordinator/ShareGroupCurrentMemberAssignmentKey.json",
    "internal/group-coordinator/ShareGroupCurrentMemberAssignmentValue.json",
    "internal/share-coordinator/ShareSnapshotKey.json",
    "internal/share-coordinator/ShareSnapshotValue.json",
    "internal/share-coordinator/ShareUpdateKey.json",
    "internal/share-coordinator/ShareUpdateValue.json",
    "internal/transaction-coordinator/TransactionLogKey.json",
    "internal/transaction-coordinator/TransactionLogValue.json",
)
MAX_VERSION = 0x7FFF


def load_json(path: Path) -> dict:
    """Kafka's JSON files carry // comments; strip them before parsing."""
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    return json.loads(text)


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    if "-" in spec:
        low, high = spec.split("-")
        return (int(low), int(high))
    return (int(spec), int(spec))


def parse_default(type_name: str, raw: object) -> object:
    if raw is None:
        return None
    text = str(raw).strip()
    if text == "null":
        return "null"
    if type_name in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    if type_name == "float64":
        return float(text)
    if type_name == "bool":
        return text.lower() == "true"
    return text


def field_versions(spec: dict) -> tuple[int, int] | None:
    """A field's versions; a tagged-only field (no "versions") exists in its tagged versions, as in Kafka's FieldSpec."""
    return parse_versions(spec.get("versions", spec.get("taggedVersions")))


def render_field(spec: dict, structs: dict[str, dict], indent: str) -> str:
    type_name = spec["type"]
    args = [repr(spec["name"]), repr(type_name), repr(field_versions(spec))]
    nullable = parse_versions(spec.get("nullableVersions"))
    if nullable:
        args.append(f"nullable={nullable!r}")
    tagged = parse_versions(spec.get("taggedVersions"))
    if tagged:
        args.append(f"tagged={tagged!r}")
        args.append(f"tag={spec['tag']!r}")
    default = parse_default(type_name, spec.get("default"))
    if default is not None:
        args.append(f"default={default!r}")
    if spec.get("flexibleVersions") == "none":
        args.append("flexible=False")
    if spec.get("ignorable"):
        args.append("ignorable=True")
    children = spec.get("fields")
    element = type_name[2:] if type_name.startswith("[]") else type_name
    if children is None and element in structs:
        children = structs[element]["fields"]
    if children:
        inner = ",\n".join(render_field(c, structs, indent + "    ") for c in children)
        args.append(f"fields=(\n{inner},\n{indent})")
    return f"{indent}F({', '.join(args)})"


def render_message(data: dict) -> str:
    structs = {s["name"]: s for s in data.get("commonStructs", [])}
    fields = ",\n".join(render_field(f, structs, "    ") for f in data.get("fields", []))
    head = (
        f"M({data['name']!r}, {data.get('apiKey')!r}, {data['type']!r}, "
        f"{parse_versions(data['validVersions'])!r}, {parse_versions(data.get('flexibleVersions'))!r}"
    )
    return f"{head}, (\n{fields},\n))" if fields else f"{head})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec_dir", type=Path, help="the kafka-protocol directory")
    parser.add_argument("--out", type=Path, default=Path("protocol/messages.py"))
    args = parser.parse_args()
    paths = [args.spec_dir / extra for extra in EXTRA]
    by_key = {}
    catalogue = {}
    for path in sorted((args.spec_dir / "messages").glob("*.json")):
        data = load_json(path)
        if data["type"] == "request" and parse_versions(data["validVersions"]):
            catalogue[data["apiKey"]] = (data["name"].removesuffix("Request"), tuple(data["listeners"]))
        if data.get("apiKey") in API_KEYS and data["type"] in ("request", "response"):
            by_key[(data["apiKey"], data["type"])] = path
    paths += [by_key[key] for key in sorted(by_key)]
    paths += [args.spec_dir / internal for internal in INTERNAL]
    out = [
        '"""Kafka message schemas, generated by tools/gen_schemas.py from Apache Kafka\'s JSON definitions. Do not edit."""',
        "",
        "from .schema import Field as F",
        "from .schema import Message as M",
        "",
        "# Every API of Kafka's definitions that has versions, served here or not: key -> (name, listeners: which of",
        "# Kafka's servers answer it, \"broker\" and/or \"controller\").",
        "KAFKA_APIS = {",
        *(f"    {key}: {catalogue[key]!r}," for key in sorted(catalogue)),
        "}",
        "",
    ]
    names = []
    for path in paths:
        data = load_json(path)
        const = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", data["name"]).upper()
        names.append((const, data))
        out.append(f"{const} = {render_message(data)}")
        out.append("")
    out.append("REQUESTS = {m.api_key: m for m in (%s)}" % ", ".join(c for c, d in names if d["type"] == "request"))
    out.append("RESPONSES = {m.api_key: m for m in (%s)}" % ", ".join(c for c, d in names if d["type"] == "response"))
    out.append("BY_NAME = {m.name: m for m in (%s)}" % ", ".join(c for c, _ in names))
    args.out.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
