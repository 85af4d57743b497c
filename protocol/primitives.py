"""Kafka protocol primitive types: fixed-width integers, varints, strings, bytes, UUIDs and arrays.

``Reader`` walks a buffer and raises ``ProtocolError`` on any malformed or truncated input, so
a hostile frame can only ever produce that one exception. ``Writer`` collects output as a list
of parts: small fields go into a shared ``bytearray`` while large payloads (record batches) are
kept as their own parts, so fetch responses can be written without copying segment bytes.
"""

from __future__ import annotations

import os
import struct
from typing import Callable

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = b"\x00" * 16
INLINE_LIMIT = 512  # payloads larger than this become their own output part


class ProtocolError(Exception):
    """The bytes do not form a valid message: the only error decoding can raise."""


class Reader:
    """Sequential decoder over a bytes-like buffer."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = memoryview(buf)
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def _take(self, n: int) -> int:
        start = self.pos
        if n < 0 or start + n > self.end:
            raise ProtocolError(f"truncated: need {n} bytes at {start}, have {self.end - start}")
        self.pos = start + n
        return start

    def _fixed(self, codec: struct.Struct) -> int:
        return codec.unpack_from(self.buf, self._take(codec.size))[0]

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def float64(self) -> float:
        return self._fixed(_F64)

    def boolean(self) -> bool:
        return self._fixed(_I8) != 0

    def uvarint(self) -> int:
        result = 0
        shift = 0
        buf = self.buf
        while True:
            if self.pos >= self.end:
                raise ProtocolError("truncated varint")
            byte = buf[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ProtocolError("varint too long")

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def uuid(self) -> bytes:
        start = self._take(16)
        return bytes(self.buf[start : start + 16])

    def raw(self, n: int) -> memoryview:
        start = self._take(n)
        return self.buf[start : start + n]

    def _utf8(self, n: int) -> str:
        try:
            return str(self.raw(n), "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"invalid UTF-8 string: {exc}") from None

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise ProtocolError("null in a non-nullable string")
        return self._utf8(n)

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self._utf8(n)

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise ProtocolError("null in a non-nullable compact string")
        return self._utf8(n)

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._utf8(n)

    def bytes_(self) -> bytes:
        n = self.int32()
        if n < 0:
            raise ProtocolError("null in non-nullable bytes")
        return bytes(self.raw(n))

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else bytes(self.raw(n))

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise ProtocolError("null in non-nullable compact bytes")
        return bytes(self.raw(n))

    def compact_nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1
        return None if n < 0 else bytes(self.raw(n))

    def records(self, compact: bool) -> memoryview | None:
        """Record batches are kept as a view into the request buffer: never copied, never decoded."""
        n = (self.uvarint() - 1) if compact else self.int32()
        return None if n < 0 else self.raw(n)

    def array(self, item: Callable[[Reader], object], compact: bool, nullable: bool) -> list | None:
        """The elements, or None for a null array; the count is bounded by the bytes left, so a forged count fails
        before anything is allocated for it."""
        n = (self.uvarint() - 1) if compact else self.int32()
        if n > self.end - self.pos:
            raise ProtocolError(f"array length {n} exceeds the {self.end - self.pos} bytes left")
        if n < 0:
            if nullable:
                return None
            raise ProtocolError("null in a non-nullable array")
        return [item(self) for _ in range(n)]


class FileRegion:
    """``count`` bytes of a file at ``offset``, as one output part: the connection sends it with ``os.sendfile``
    (the bytes never pass through Python) or, where it cannot (TLS), reads it with ``pread`` when writing.

    It owns a duplicate of the descriptor, so the region stays readable even if the segment is closed or deleted
    before the answer is written; the duplicate is closed once the region is written or dropped.
    """

    __slots__ = ("fd", "offset", "count")

    def __init__(self, fd: int, offset: int, count: int) -> None:
        self.fd = os.dup(fd)
        self.offset = offset
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, offset={self.offset}, count={self.count})"

    def read(self) -> bytes:
        """The bytes (pread; fewer only if the file shrank)."""
        parts = []
        got = 0
        while got < self.count:
            chunk = os.pread(self.fd, self.count - got, self.offset + got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def fileno(self) -> int:  # for loop.sendfile
        return self.fd

    def seek(self, *_args: int) -> int:  # loop.sendfile's fallback may call it; offsets are always explicit here
        return 0

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class Writer:
    """Encoder that appends to a bytearray, with large payloads kept as separate zero-copy parts."""

    __slots__ = ("buf", "parts", "size")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.parts: list[bytes | bytearray | memoryview] = []
        self.size = 0  # bytes held in ``parts`` (the bytearray is counted on demand)

    def __len__(self) -> int:
        return self.size + len(self.buf)

    def getparts(self) -> list[bytes | bytearray | memoryview]:
        """All output as a list of buffers, in order (for ``transport.writelines``)."""
        if self.buf:
            return [*self.parts, self.buf]
        return list(self.parts)

    def getvalue(self) -> bytes:
        if not self.parts:  # everything small: still in the one buffer
            return bytes(self.buf)
        return b"".join(part.read() if type(part) is FileRegion else part for part in self.getparts())

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uvarint(self, v: int) -> None:
        buf = self.buf
        while v >= 0x80:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def varint(self, v: int) -> None:
        self.uvarint((v << 1) ^ (v >> 63))

    def uuid(self, v: bytes | None) -> None:
        v = ZERO_UUID if v is None else v
        if not isinstance(v, (bytes, bytearray, memoryview)):
            v = v.bytes  # a uuid.UUID
        if len(v) != 16:
            raise ValueError("a UUID is 16 bytes")
        self.buf += v

    def raw(self, data: bytes | bytearray | memoryview | FileRegion) -> None:
        if len(data) > INLINE_LIMIT or type(data) is FileRegion:
            if self.buf:
                self.parts.append(self.buf)
                self.size += len(self.buf)
                self.buf = bytearray()
            self.parts.append(data)
            self.size += len(data)
        else:
            self.buf += data

    def string(self, v: str | None, compact: bool) -> None:
        if v is None:
            self.uvarint(0) if compact else self.int16(-1)
            return
        data = v.encode("utf-8")
        self.uvarint(len(data) + 1) if compact else self.int16(len(data))
        self.buf += data

    def bytes_(self, v: bytes | bytearray | memoryview | None, compact: bool) -> None:
        if v is None:
            self.uvarint(0) if compact else self.int32(-1)
            return
        self.uvarint(len(v) + 1) if compact else self.int32(len(v))
        self.raw(v)

    def array_length(self, n: int | None, compact: bool) -> None:
        if n is None:
            self.uvarint(0) if compact else self.int32(-1)
        else:
            self.uvarint(n + 1) if compact else self.int32(n)
