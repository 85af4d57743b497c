"""Generate the package ``protocol/messages/`` from Apache Kafka's JSON message definitions.

Only facts are kept (names, types, version ranges, tags, defaults); Kafka's prose is dropped. Each API's request and
response are one module of the package, each family of other messages (``EXTRA``'s, and each coordinator's internal
records) another; the package's ``__init__`` says which module defines each description, and imports it when the
description is first used (``protocol/lazy_messages.py``), so a process builds only the descriptions it uses.
Run from the repository root:

    python tools/gen_schemas.py ../shared/kafka-protocol --legacy path/to/kafka-clients-3.9.1.jar

Kafka 4 dropped the request versions KIP-896 removed, which ``--kafka-version`` still serves for older releases.
``--legacy`` (kafka-clients 3.9.1's jar, or a directory of its ``common/message/*.json``) puts them back: each API's
versions below its 4.x minimum come from 3.9.1's definition, merged into the 4.x one (``tools/legacy_schemas.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legacy_schemas import LegacySpecs  # noqa: E402

API_KEYS = (
    0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
    34, 35, 36, 37, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 57, 60, 61, 65, 66, 68, 69, 75, 76, 77, 78, 79, 90, 91, 92,
)
# Messages of no API, by the module that holds them and what it says they are.
EXTRA = {
    "headers": ("The request and response headers", ("messages/RequestHeader.json", "messages/ResponseHeader.json")),
    "consumer_protocol": (
        "The classic consumer protocol's subscription and assignment (JoinGroup and SyncGroup metadata)",
        ("messages/ConsumerProtocolSubscription.json", "messages/ConsumerProtocolAssignment.json"),
    ),
}
# Records of the internal topics (__consumer_offsets, __share_group_state, __transaction_state): the JSON "apiKey" is
# the record type. Each directory (each coordinator) is one module, ``<directory>_records``: a coordinator reads and
# writes all its record types.
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
    return parse_json(path.read_text())


def parse_json(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


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


def constant_name(name: str) -> str:
    """``ProduceRequest`` -> ``PRODUCE_REQUEST``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def module_name(name: str) -> str:
    """``ApiVersions`` -> ``api_versions``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def families(spec_dir: Path, legacy: LegacySpecs | None = None) -> list[tuple[str, str, list[dict]]]:
    """Every module of the package: (module name, what it holds, its messages' JSON), in the order of the tables;
    with ``legacy``, each API's messages carry the old versions too."""
    out = [(module, doc, [load_json(spec_dir / path) for path in paths]) for module, (doc, paths) in EXTRA.items()]
    by_api: dict[int, list[dict]] = {}
    for path in sorted((spec_dir / "messages").glob("*.json")):
        data = load_json(path)
        if data.get("apiKey") in API_KEYS and data["type"] in ("request", "response"):
            by_api.setdefault(data["apiKey"], []).append(legacy.extend(data) if legacy else data)
    for key in sorted(by_api):
        pair = sorted(by_api[key], key=lambda data: data["type"])  # request, then response
        api = pair[0]["name"].removesuffix("Request")
        out.append((module_name(api), f"The {api} API (key {key})", pair))
    internal: dict[str, list[dict]] = {}
    for path in INTERNAL:
        internal.setdefault(Path(path).parent.name, []).append(load_json(spec_dir / path))
    for directory, records in internal.items():
        module = f"{directory.replace('-', '_')}_records"
        out.append((module, f"The records of Kafka's {directory} (its internal topic)", records))
    return out


GENERATED = "generated by tools/gen_schemas.py from Apache Kafka's JSON definitions. Do not edit."


def render_module(doc: str, messages: list[dict]) -> str:
    lines = [f'"""{doc}: {GENERATED}"""', "", "from ..schema import Field as F", "from ..schema import Message as M"]
    lines.append("")
    for data in messages:
        lines += [f"{constant_name(data['name'])} = {render_message(data)}", ""]
    return "\n".join(lines[:-1]) + "\n"


def render_table(name: str, entries: list[tuple[object, str]]) -> list[str]:
    return [f"{name} = _DESCRIPTIONS.table({{", *(f"    {key!r}: {const!r}," for key, const in entries), "})"]


def packed(items: list[str], indent: str = "    ", width: int = 116) -> list[str]:
    """``items`` as few lines as fit in ``width``."""
    lines = [indent]
    for item in items:
        if len(lines[-1]) + len(item) + 1 > width and lines[-1] != indent:
            lines.append(indent)
        lines[-1] += item if lines[-1] == indent else " " + item
    return lines


def throttled(data: dict) -> bool:
    """A response that carries ThrottleTimeMs (a top-level field)."""
    return data["type"] == "response" and any(f["name"] == "ThrottleTimeMs" for f in data.get("fields", []))


def kafka_apis(spec_dir: Path) -> dict[int, tuple[str, tuple[str, ...]]]:
    """Every API of Kafka's definitions that has versions, served here or not: key -> (name, listeners)."""
    catalogue = {}
    for path in sorted((spec_dir / "messages").glob("*.json")):
        data = load_json(path)
        if data["type"] == "request" and parse_versions(data["validVersions"]):
            catalogue[data["apiKey"]] = (data["name"].removesuffix("Request"), tuple(data["listeners"]))
    return dict(sorted(catalogue.items()))


def render_package(modules: list[tuple[str, str, list[dict]]], apis: dict[int, tuple[str, tuple[str, ...]]]) -> str:
    """The package's ``__init__``: where each description is, the tables, THROTTLED_APIS and KAFKA_APIS."""
    messages = [(module, data) for module, _, datas in modules for data in datas]
    requests = [(data["apiKey"], constant_name(data["name"])) for _, data in messages if data["type"] == "request"]
    responses = [(data["apiKey"], constant_name(data["name"])) for _, data in messages if data["type"] == "response"]
    lines = [
        f'"""Kafka\'s message descriptions, {GENERATED}',
        "",
        "One module per API (its request and response) and per family of other messages, imported when one of its",
        "descriptions is first used (protocol/lazy_messages.py): ``from protocol.messages import PRODUCE_REQUEST``,",
        '``REQUESTS[0]``, ``RESPONSES[0]`` and ``BY_NAME["ProduceRequest"]`` all load the module ``produce``, and',
        "no other.",
        '"""',
        "",
        "from ..lazy_messages import Descriptions",
        "from ..schema import Message",
        "",
        "_DESCRIPTIONS = Descriptions(__name__, globals(), {",
    ]
    for module, _, datas in modules:
        lines += packed([f"{constant_name(data['name'])!r}: {module!r}," for data in datas])
    lines.append("})")
    lines += render_table("REQUESTS", requests)
    lines += render_table("RESPONSES", responses)
    lines += render_table("BY_NAME", [(data["name"], constant_name(data["name"])) for _, data in messages])
    lines += [
        "# The APIs whose responses carry ThrottleTimeMs: the broker fills it in for every handler.",
        "THROTTLED_APIS = frozenset({",
        *packed([f"{data['apiKey']}," for _, data in messages if throttled(data)]),
        "})",
        "# Every API of Kafka's definitions that has versions, served here or not: key -> (name, listeners: which of",
        "# Kafka's servers answer it, \"broker\" and/or \"controller\").",
        "KAFKA_APIS = {",
        *(f"    {key}: {entry!r}," for key, entry in apis.items()),
        "}",
        "",
        "",
        "def __getattr__(name: str) -> Message:",
        '    """A description not used yet is loaded from its module (PEP 562)."""',
        "    return _DESCRIPTIONS.attribute(name)",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return _DESCRIPTIONS.names()",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec_dir", type=Path, help="the kafka-protocol directory")
    parser.add_argument("--out", type=Path, default=Path("protocol/messages"), help="the package's directory")
    parser.add_argument(
        "--legacy", type=Path, help="kafka-clients 3.9.1's jar (or a directory of its JSON): the versions before 4.x"
    )
    args = parser.parse_args()
    legacy = LegacySpecs.load(args.legacy, parse_json) if args.legacy else None
    modules = families(args.spec_dir, legacy)
    args.out.mkdir(exist_ok=True)
    for stale in args.out.glob("*.py"):  # a module of an API no longer listed goes
        if GENERATED in stale.read_text().partition("\n")[0]:
            stale.unlink()
    for module, doc, datas in modules:
        (args.out / f"{module}.py").write_text(render_module(doc, datas))
    (args.out / "__init__.py").write_text(render_package(modules, kafka_apis(args.spec_dir)))


if __name__ == "__main__":
    main()
