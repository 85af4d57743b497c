"""Zig-zag varint (int32) and varlong (int64) used inside V2 records (Kafka's ByteUtils).

These are the *signed* zig-zag forms; the unsigned varints of flexible request headers live in primitives.py.
Decoders return ``(value, next_position)`` and raise ``ValueError`` on truncated or over-long input.
"""

from __future__ import annotations

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_VARINT_MAX_BYTES = 5
_VARLONG_MAX_BYTES = 10

Buffer = bytes | bytearray | memoryview


def encode_varint(value: int) -> bytes:
    """Encode an int32 as a zig-zag varint (1 to 5 bytes)."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Encode an int64 as a zig-zag varlong (1 to 10 bytes)."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def decode_varint(buf: Buffer, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode a zig-zag varint at ``pos``; like Java, bits above 32 of a 5-byte varint are dropped."""
    raw, pos = _decode_unsigned(buf, pos, len(buf) if end is None else end, _VARINT_MAX_BYTES)
    return _unzigzag(raw & 0xFFFFFFFF), pos


def decode_varlong(buf: Buffer, pos: int, end: int | None = None) -> tuple[int, int]:
    """Decode a zig-zag varlong at ``pos``; bits above 64 of a 10-byte varlong are dropped."""
    raw, pos = _decode_unsigned(buf, pos, len(buf) if end is None else end, _VARLONG_MAX_BYTES)
    return _unzigzag(raw & 0xFFFFFFFFFFFFFFFF), pos


_ONE_BYTE = tuple(bytes((n,)) for n in range(0x80))  # most varints in a batch are small: no loop, no allocation


def _encode_unsigned(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _decode_unsigned(buf: Buffer, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Read base-128 groups, least significant first, refusing to run past ``end`` or ``max_bytes``."""
    result = 0
    for i in range(max_bytes):
        if pos >= end:
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return result, pos
    raise ValueError(f"varint longer than {max_bytes} bytes")


def _unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)
