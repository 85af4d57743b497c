"""The request versions Kafka 4 dropped (KIP-896), from kafka-clients 3.9.1's definitions, for ``gen_schemas.py``.

A 4.x definition starts at its 4.x minimum; ``LegacySpecs.extend`` gives it back the versions below that minimum
as 3.9.1 defined them: each field's version ranges are 3.9.1's below the cut and 4.x's from it, fields only old
versions had (ListOffsets v0's MaxNumOffsets, OffsetCommit v1's CommitTimestamp) go in at their place in 3.9.1's
order. The merged definition is then checked version by version against both sources, so every version's wire
layout is exactly the one its definition gives; a merge that cannot say so (a field whose versions would not be one
range) stops the generator rather than guess.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Callable

MAX_VERSION = 0x7FFF
Span = tuple[int, int] | None

# APIs whose old versions were early access, never served by a release (KIP-932's share-group v0; the release table,
# minibroker/config/releases.py, starts them at v1): not carried back.
EARLY_ACCESS = frozenset({76, 77, 78, 79})


def span(spec: str | None) -> Span:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX_VERSION)
    low, _, high = spec.partition("-")
    return (int(low), int(high or low))


def spec_text(versions: Span) -> str:
    if versions is None:
        return "none"
    low, high = versions
    if high == MAX_VERSION:
        return f"{low}+"
    return str(low) if low == high else f"{low}-{high}"


def clip(versions: Span, low: int, high: int) -> Span:
    if versions is None or versions[1] < low or versions[0] > high:
        return None
    return (max(low, versions[0]), min(high, versions[1]))


def join(old: Span, new: Span, where: str) -> Span:
    """One range of the versions below the cut (``old``) and from it (``new``); they must meet."""
    if old is None or new is None:
        return old or new
    if old[1] + 1 < new[0]:
        raise ValueError(f"{where}: versions {old} and {new} are not one range")
    return (old[0], new[1])


class LegacySpecs:
    """kafka-clients 3.9.1's message definitions, by message name."""

    def __init__(self, specs: dict[str, dict]) -> None:
        self.specs = specs

    @classmethod
    def load(cls, source: Path, parse: Callable[[str], dict]) -> LegacySpecs:
        """From the jar (its ``common/message/*.json``) or a directory holding those files."""
        if source.is_dir():
            folder = source / "common" / "message" if (source / "common" / "message").is_dir() else source
            texts = [path.read_text() for path in sorted(folder.glob("*.json"))]
        else:
            with zipfile.ZipFile(source) as jar:
                names = sorted(n for n in jar.namelist() if n.startswith("common/message/") and n.endswith(".json"))
                texts = [jar.read(name).decode() for name in names]
        specs = [parse(text) for text in texts]
        if not specs:
            raise ValueError(f"{source}: no message definitions")
        return cls({spec["name"]: spec for spec in specs})

    def extend(self, data: dict) -> dict:
        """``data`` (a 4.x request or response) with the versions 3.9.1 had below its minimum, or as it is."""
        old = self.specs.get(data["name"])
        new_valid, old_valid = span(data["validVersions"]), span(old["validVersions"]) if old else None
        if old is None or new_valid is None or old_valid is None or data["apiKey"] in EARLY_ACCESS:
            return data
        cut = new_valid[0]
        if old_valid[0] >= cut:
            return data
        where = data["name"]
        merged = {key: value for key, value in data.items() if key not in ("fields", "commonStructs")}
        merged["validVersions"] = spec_text((old_valid[0], new_valid[1]))
        merged["flexibleVersions"] = spec_text(join(
            clip(span(old.get("flexibleVersions")), 0, cut - 1), clip(span(data.get("flexibleVersions")), cut, MAX_VERSION),
            where,
        ))
        merged["fields"] = merge_fields(inline(old), inline(data), cut, where)
        for version in range(old_valid[0], new_valid[1] + 1):
            source = old if version < cut else data
            if layout(inline(source), version) != layout(merged["fields"], version):
                raise ValueError(f"{where} v{version}: the merged layout is not {'3.9.1' if version < cut else '4.x'}'s")
        return merged


def inline(data: dict) -> list[dict]:
    """The message's fields with every common struct written out in place."""
    structs = {s["name"]: s for s in data.get("commonStructs", [])}

    def resolve(fields: list[dict]) -> list[dict]:
        out = []
        for f in fields:
            f = dict(f)
            children = f.get("fields")
            element = f["type"].removeprefix("[]")
            if children is None and element in structs:
                children = structs[element]["fields"]
            if children is not None:
                f["fields"] = resolve(children)
            out.append(f)
        return out

    return resolve(data.get("fields", []))


def versions_of(f: dict) -> Span:
    return span(f.get("versions", f.get("taggedVersions")))


def merge_fields(old: list[dict], new: list[dict], cut: int, where: str) -> list[dict]:
    """4.x's fields, each with its old versions below ``cut``, and the old-only fields after their old predecessor."""
    by_name = {f["name"]: f for f in old}
    merged = [merge_field(by_name.get(f["name"]), f, cut, f"{where}.{f['name']}") for f in new]
    merged = [f for f in merged if f is not None]
    known = {f["name"] for f in new}
    for index, f in enumerate(old):
        if f["name"] in known or clip(versions_of(f), 0, cut - 1) is None:
            continue
        only = merge_field(f, None, cut, f"{where}.{f['name']}")
        before = next((o["name"] for o in reversed(old[:index]) if o["name"] in known), None)
        position = 0 if before is None else next(i for i, m in enumerate(merged) if m["name"] == before) + 1
        merged.insert(position, only)
        known.add(f["name"])
    return merged


def merge_field(old: dict | None, new: dict | None, cut: int, where: str) -> dict | None:
    """One field: its old part (below ``cut``) and its new part joined; None when it exists in no version."""
    low = clip(versions_of(old), 0, cut - 1) if old else None
    high = clip(versions_of(new), cut, MAX_VERSION) if new else None
    if low is None:
        return new if high else None  # a field of 4.x versions only is 4.x's own
    if new and high and old["type"] != new["type"]:
        both_structs = "fields" in old and "fields" in new and old["type"].startswith("[]") == new["type"].startswith("[]")
        if not both_structs:
            raise ValueError(f"{where}: type {old['type']} became {new['type']}")
    base = dict(new if high else old)  # type, default, ignorable: of the side that has versions from the cut
    if new and high and old.get("default") != new.get("default"):
        raise ValueError(f"{where}: default {old.get('default')} became {new.get('default')}")
    versions = join(low, high, where)
    for key in ("nullableVersions", "taggedVersions"):
        joined = join(
            clip(span(old.get(key)), 0, cut - 1),
            clip(span(new.get(key)), cut, MAX_VERSION) if new and high else None,
            f"{where} {key}",
        )
        if joined is None:
            base.pop(key, None)
        else:
            base[key] = spec_text(joined)
    if "taggedVersions" in base and new and high and old.get("tag") != new.get("tag"):
        raise ValueError(f"{where}: tag {old.get('tag')} became {new.get('tag')}")
    if "versions" in (new if high else old):
        base["versions"] = spec_text(versions)
    if "fields" in base:
        base["fields"] = merge_fields(old.get("fields", []), new.get("fields", []) if new and high else [], cut, where)
    return base


def layout(fields: list[dict], version: int) -> list[tuple]:
    """What a version puts on the wire and how it is decoded: each field present, its type (a struct's name aside),
    nullability, tag, default and flexibility, its children likewise."""
    out = []
    for f in fields:
        if not in_span(version, versions_of(f)):
            continue
        is_array = f["type"].startswith("[]")
        kind = ("[]" if is_array else "") + "struct" if "fields" in f else f["type"]
        tagged = in_span(version, span(f.get("taggedVersions")))
        out.append((
            f["name"], kind, in_span(version, span(f.get("nullableVersions"))), tagged, f.get("tag") if tagged else None,
            str(f.get("default")), f.get("flexibleVersions") == "none", layout(f.get("fields", []), version),
        ))
    return out


def in_span(version: int, versions: Span) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]
