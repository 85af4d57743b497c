"""Size-prefixed frames, request headers and response headers: the byte-level state machine of a connection.

``FrameDecoder`` is fed whatever bytes arrive and hands back complete frames; it refuses an
oversize or negative length prefix before buffering anything. ``parse_request_header`` reads
only the header, so the caller can answer or refuse an unknown API key or version before
touching the body. ``encode_response`` returns the buffers to write, size prefix first.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from protocol.messages import REQUEST_HEADER, REQUESTS, RESPONSE_HEADER, RESPONSES
from protocol.primitives import ProtocolError, Reader, Writer
from protocol.schema import codec, in_range, is_flexible

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")


class FrameTooLarge(ProtocolError):
    """A length prefix above the configured cap (``socket.request.max.bytes``) or below zero."""


class FrameDecoder:
    """Accumulates stream bytes and yields whole frames (without their 4-byte size prefix)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need = -1  # size of the frame being read, -1 while its prefix is incomplete

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[memoryview]:
        """Add bytes; return the frames completed by them. Raises ``FrameTooLarge`` on a bad prefix."""
        self._buf += data
        frames: list[memoryview] = []
        start = 0
        buf = self._buf
        end = len(buf)
        while True:
            if self._need < 0:
                if end - start < 4:
                    break
                size = _SIZE.unpack_from(buf, start)[0]
                if size < 0 or size > self.max_frame_bytes:
                    raise FrameTooLarge(f"frame size {size} outside 0..{self.max_frame_bytes}")
                self._need = size
                start += 4
            if end - start < self._need:
                break
            frames.append(memoryview(buf[start : start + self._need]))
            start += self._need
            self._need = -1
        if start:
            del buf[:start]
        return frames


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int = 0
    tagged: dict[str, Any] = field(default_factory=dict)


def request_header_version(api_key: int, api_version: int) -> int:
    message = REQUESTS.get(api_key)
    return 2 if message is not None and is_flexible(message, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ApiVersions answers with header v0 at every version, so old clients can read a fallback answer."""
    if api_key == API_VERSIONS_KEY:
        return 0
    message = RESPONSES.get(api_key)
    return 1 if message is not None and is_flexible(message, api_version) else 0


def parse_request_header(frame: memoryview) -> RequestHeader:
    """Read the header; for a known API and version also its tagged fields, so the body can follow."""
    r = Reader(frame)
    api_key, api_version, correlation_id = r.int16(), r.int16(), r.int32()
    client_id = r.nullable_string()
    header = RequestHeader(api_key, api_version, correlation_id, client_id, r.pos)
    message = REQUESTS.get(api_key)
    if message is not None and in_range(api_version, message.valid) and is_flexible(message, api_version):
        for _ in range(r.uvarint()):
            r.uvarint()
            r.raw(r.uvarint())
        header.body_offset = r.pos
    return header


def decode_request_body(header: RequestHeader, frame: memoryview) -> dict[str, Any]:
    """Decode the body of a request whose API and version the caller has accepted."""
    message = REQUESTS[header.api_key]
    r = Reader(frame, header.body_offset)
    body = codec(message, header.api_version).decode(r)
    return body


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """Build a whole request frame (for tests, tools and benchmarks acting as a client)."""
    w = Writer()
    codec(REQUEST_HEADER, request_header_version(api_key, api_version)).encode(
        w, {"request_api_key": api_key, "request_api_version": api_version, "correlation_id": correlation_id, "client_id": client_id}
    )
    codec(REQUESTS[api_key], api_version).encode(w, body)
    return _SIZE.pack(len(w)) + w.getvalue()


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> list[bytes | bytearray | memoryview]:
    """Build a response frame as a list of buffers (size prefix, header, body parts)."""
    w = Writer()
    codec(RESPONSE_HEADER, response_header_version(api_key, api_version)).encode(w, {"correlation_id": correlation_id})
    codec(RESPONSES[api_key], api_version).encode(w, body)
    return [_SIZE.pack(len(w)), *w.getparts()]


def decode_response(api_key: int, api_version: int, frame: bytes | memoryview) -> tuple[int, dict]:
    """Parse a response frame body (without size prefix): (correlation id, body). For tests and tools."""
    r = Reader(frame)
    header = codec(RESPONSE_HEADER, response_header_version(api_key, api_version)).decode(r)
    body = codec(RESPONSES[api_key], api_version).decode(r)
    return header["correlation_id"], body
