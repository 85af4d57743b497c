"""The record layout of Kafka's coordinator topics, sans-IO, for any table of record types.

``__consumer_offsets`` and ``__share_group_state`` records are written the same way (Kafka's CoordinatorRecordSerde):
a key is ``int16 record type`` then the key struct at version 0; a value is ``int16 version`` then the value struct
at that version, and a missing (``None``) value is a tombstone. Each topic lists its record types as ``RecordType``
entries (the key and value classes, their generated schemas and the conversions between the frozen dataclasses its
coordinator uses and the dicts the generic codec reads and writes); ``RecordTable`` is the one codec over such a list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from .primitives import ProtocolError, Reader, Writer
from .schema import Message, codec, in_range

Body = dict[str, Any]  # a struct as the generic codec reads and writes it (snake_case keys)


class UnknownRecordTypeError(ProtocolError):
    """A key of a record type the table does not list (a newer Kafka's, or one this coordinator does not serve)."""

    def __init__(self, topic: str, record_type: int) -> None:
        super().__init__(f"unknown {topic} record type {record_type}")
        self.record_type = record_type


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """A key or value class, its generated schema, and the conversions to and from the dicts the codec works on."""

    cls: type
    message: Message
    to_body: Callable[[Any], Body]
    from_body: Callable[[Body], Any]


NO_CAPS: Mapping[str, int] = {}


def capped(message: Message, version: int, caps: Mapping[str, int]) -> int:
    """``version``, or the newest version of ``message`` the emulated Kafka release wrote if that is lower (``caps``:
    value schema name -> version, from minibroker.config.record_versions; empty without emulation)."""
    return min(version, caps.get(message.name, version))


def version_zero(value: Any) -> int:
    """Most coordinator values have one version, 0."""
    return 0


@dataclass(frozen=True, slots=True)
class RecordType:
    """One record type: the number a key starts with, and how its key and value are coded."""

    record_type: int
    key: RecordSchema
    value: RecordSchema
    value_version: Callable[[Any], int] = version_zero  # the version a value is written at


def flat(cls: type, message: Message, *names: str) -> RecordSchema:
    """The schema of a dataclass whose fields map one to one, in order, onto the scalar schema fields ``names``."""
    attrs = [f.name for f in fields(cls)]
    return RecordSchema(
        cls,
        message,
        lambda obj: {name: getattr(obj, attr) for attr, name in zip(attrs, names)},
        lambda body: cls(*(body[name] for name in names)),
    )


def encode_prefixed(prefix: int, message: Message, version: int, body: Body) -> bytes:
    """``int16 prefix`` (a key's record type, a value's version) then ``message`` at ``version``."""
    writer = Writer()
    writer.int16(prefix)
    codec(message, version).encode(writer, body)
    return writer.getvalue()


class RecordTable:
    """The codec of one topic's record types. Types in ``read_only`` are decoded but never written: their key class
    is written as another type (Kafka's legacy offset commit, type 0, is read as and rewritten as type 1)."""

    def __init__(self, topic: str, types: Iterable[RecordType], read_only: frozenset[int] = frozenset()) -> None:
        self.topic = topic
        self.types: dict[int, RecordType] = {t.record_type: t for t in types}
        written = [t for t in self.types.values() if t.record_type not in read_only]
        self._by_key_class: dict[type, RecordType] = {t.key.cls: t for t in written}
        self._by_value_class: dict[type, RecordType] = {t.value.cls: t for t in written}

    def kind_of_key(self, key: Any) -> RecordType:
        return self._by_key_class[type(key)]

    def encode_key(self, key: Any) -> bytes:
        kind = self._by_key_class[type(key)]
        return encode_prefixed(kind.record_type, kind.key.message, 0, kind.key.to_body(key))

    def decode_key(self, data: bytes | bytearray | memoryview) -> Any:
        """Raises UnknownRecordTypeError for a type the table does not list, ProtocolError for malformed bytes."""
        reader = Reader(data)
        record_type = reader.int16()
        kind = self.types.get(record_type)
        if kind is None:
            raise UnknownRecordTypeError(self.topic, record_type)
        return kind.key.from_body(codec(kind.key.message, 0).decode(reader))

    def encode_value(self, value: Any, kind: RecordType | None = None, caps: Mapping[str, int] = NO_CAPS) -> bytes:
        """A value at the version its type writes it (``kind``: the type, when its class is not the one to go by),
        capped by ``caps`` (see ``capped``)."""
        kind = kind or self._by_value_class[type(value)]
        version = capped(kind.value.message, kind.value_version(value), caps)
        return encode_prefixed(version, kind.value.message, version, kind.value.to_body(value))

    def decode_value(self, kind: RecordType, data: bytes | bytearray | memoryview | None) -> Any:
        """The value of a record of type ``kind`` (any version its schema has); None for a tombstone."""
        if data is None:
            return None
        reader = Reader(data)
        version = reader.int16()
        message = kind.value.message
        if not in_range(version, message.valid):
            raise ProtocolError(f"{message.name} has no version {version}")
        return kind.value.from_body(codec(message, version).decode(reader))
