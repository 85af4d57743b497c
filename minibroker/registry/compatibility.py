"""Avro compatibility as Confluent's registry decides it: Avro's reader/writer schema resolution
(`SchemaCompatibility.checkReaderWriterCompatibility`) between a reader and a writer schema, with every
incompatibility reported as Confluent words it (`Difference`); the levels apply it as for every type
(`levels`, `formats.SchemaFormat.check`).
"""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.registry.avro import AvroSchema, Schema, to_json

# Writer types each reader type accepts besides its own (the specification's promotions).
_PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}

_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the {reader} schema does not match "
    "with the {writer} schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the {reader} schema does not match with the {writer} schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The {reader} schema is missing enum symbols '{info}' at path '{path}' in the {writer} schema",
    "MISSING_UNION_BRANCH": "The {reader} schema is missing a type inside a union field at path '{path}' in the "
    "{writer} schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the {reader} schema has no default "
    "value and is missing in the {writer} schema",
}


@dataclass(frozen=True)
class Incompatibility:
    """One of Avro's `SchemaCompatibility.Incompatibility`: its type, location and message."""

    kind: str
    path: str
    info: str

    def describe(self, reader: str, writer: str) -> str:
        text = _DESCRIPTIONS[self.kind].format(path=self.path, info=self.info, reader=reader, writer=writer)
        return f"{{errorType:'{self.kind}', description:'{text}', additionalInfo:'{self.info}'}}"


def reads(reader: AvroSchema, writer: AvroSchema, reader_word: str, writer_word: str) -> list[str]:
    """Confluent's `AvroSchema.isBackwardCompatible`: why `reader` cannot read what `writer` wrote."""
    try:
        found = incompatibilities(reader.root, writer.root)
    except _AmbiguousField as e:
        return [f"Unexpected exception during compatibility check: {e}"]
    return [i.describe(reader_word, writer_word) for i in found]


def incompatibilities(reader: Schema, writer: Schema) -> list[Incompatibility]:
    """Everything that stops `reader` from reading data written with `writer`, by the Avro specification."""
    return _Resolver().check(reader, writer, [])


class _Resolver:
    """Avro's `ReaderWriterCompatibilityChecker`: a pair under check counts as compatible while it recurses."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[Incompatibility]] = {}

    def check(self, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = []
        found = self._calculate(reader, writer, path)
        self.memo[key] = found
        return found

    def _at(self, token: str, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        return self.check(reader, writer, path + [token])

    def _calculate(self, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        rt, wt = reader.type, writer.type
        if rt == wt:
            if rt == "array":
                return self._at("items", reader.items, writer.items, path)
            if rt == "map":
                return self._at("values", reader.items, writer.items, path)
            if rt == "union":
                return self._union_branches(reader, writer, path)
            if rt in ("fixed", "enum", "record"):
                found = [] if _names_match(reader, writer) else [
                    Incompatibility("NAME_MISMATCH", _location(path + ["name"]), f"expected: {writer.fullname}")
                ]
                if rt == "fixed":
                    return found + self._fixed(reader, writer, path)
                if rt == "enum":
                    return found + self._enum(reader, writer, path)
                return found + self._record(reader, writer, path)
            return []
        if wt == "union":
            return self._writer_branches(reader, writer, path)
        if wt in _PROMOTIONS.get(rt, ()):
            return []
        if rt == "union":
            if any(not self.check(branch, writer, []) for branch in reader.branches):
                return []
            return [Incompatibility("MISSING_UNION_BRANCH", _location(path), f"reader union lacking writer type: {wt.upper()}")]
        return [_type_mismatch(reader, writer, path)]

    def _union_branches(self, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        """Both unions: each writer branch must resolve in the reader; Avro reports only the branch, not why."""
        return [
            Incompatibility("MISSING_UNION_BRANCH", _location(path + [str(i)]),
                            f"reader union lacking writer type: {branch.type.upper()}")
            for i, branch in enumerate(writer.branches)
            if self.check(reader, branch, [])
        ]

    def _writer_branches(self, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        found: list[Incompatibility] = []
        for i, branch in enumerate(writer.branches):
            found += self._at(str(i), reader, branch, path)
        return found

    @staticmethod
    def _fixed(reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        if reader.size == writer.size:
            return []
        info = f"expected: {writer.size}, found: {reader.size}"
        return [Incompatibility("FIXED_SIZE_MISMATCH", _location(path + ["size"]), info)]

    @staticmethod
    def _enum(reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        missing = sorted(set(writer.symbols) - set(reader.symbols))
        if not missing or reader.enum_default is not None:
            return []
        return [Incompatibility("MISSING_ENUM_SYMBOLS", _location(path + ["symbols"]), "[" + ", ".join(missing) + "]")]

    def _record(self, reader: Schema, writer: Schema, path: list[str]) -> list[Incompatibility]:
        found: list[Incompatibility] = []
        for pos, rf in enumerate(reader.fields):
            at = path + ["fields", str(pos)]
            matches = [w for w in map(writer.field_named, (rf.name, *rf.aliases)) if w is not None]
            if len(matches) > 1:
                raise _AmbiguousField(
                    f"Reader record field {rf.name} type:{rf.type.type.upper()} pos:{pos} matches multiple fields "
                    f"in writer record schema {to_json(writer)}"
                )
            wf = matches[0] if matches else None
            if wf is not None:
                found += self._at("type", rf.type, wf.type, at)
            elif rf.has_default:
                continue
            elif rf.type.type == "enum" and rf.type.enum_default is not None:
                found += self._at("type", rf.type, writer, at)
            else:
                found.append(Incompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", _location(at), rf.name))
        return found


class _AmbiguousField(Exception):
    """A reader field that names, directly or by alias, more than one writer field (Avro throws)."""


def _names_match(reader: Schema, writer: Schema) -> bool:
    """Avro compares unqualified names, or the writer's full name among the reader's aliases."""
    return reader.name == writer.name or writer.fullname in reader.aliases


def _type_mismatch(reader: Schema, writer: Schema, path: list[str]) -> Incompatibility:
    info = f"reader type: {reader.type.upper()} not compatible with writer type: {writer.type.upper()}"
    return Incompatibility("TYPE_MISMATCH", _location(path), info)


def _location(path: list[str]) -> str:
    return "/" + "/".join(path)
