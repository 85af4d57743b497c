"""Size-prefixed frames, request headers and response headers: the byte-level state machine of a connection.

``FrameReader`` takes whatever bytes arrive (read straight into its buffers by an
``asyncio.BufferedProtocol``, or handed over with ``feed``) and hands back complete frames; it refuses
an oversize or negative length prefix before buffering the frame. ``parse_request_header`` reads
only the header, so the caller can answer or refuse an unknown API key or version before
touching the body. ``encode_response`` returns the buffers to write, size prefix first.
"""

from __future__ import annotations

import struct
import threading
from functools import cache
from typing import Any

from .messages import REQUEST_HEADER, REQUESTS, RESPONSE_HEADER, RESPONSES
from .primitives import ProtocolError, Reader, Writer
from .schema import StructCodec, codec, in_range, is_flexible

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")
_SIZE_AND_CORRELATION_ID = struct.Struct(">ii")
_REQUEST_HEADER_FIXED = struct.Struct(">hhih")  # api key, api version, correlation id, client id length


class FrameTooLarge(ProtocolError):
    """A length prefix above the configured cap (``socket.request.max.bytes``) or below zero."""


class FrameReader:
    """Frames out of a byte stream, for ``asyncio.BufferedProtocol``: the transport reads straight into our buffers.

    Small frames (up to ``SCRATCH`` bytes with their prefix) are read into one reusable scratch buffer and copied
    out once each; a larger frame gets a buffer of its exact size as soon as its prefix is known, and the next
    reads fill it directly, so a megabyte of Produce data is never copied on its way in. Frames are writable memoryviews (offsets are assigned in place). Like Kafka, a large frame's buffer is
    allocated once its size is read, bounded by ``max_frame_bytes``. The scratch buffer is let go whenever it
    holds no partial frame, so an idle connection holds no buffer at all; it becomes the thread's spare, which the
    next read of any connection takes instead of allocating one.
    """

    SCRATCH = 8 * 1024

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._scratch: bytearray | None = None
        self._start = 0  # first byte not parsed yet
        self._end = 0  # end of the bytes received into the scratch buffer
        self._frame: bytearray | None = None  # the large frame being filled
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes of incomplete frames held (prefixes included)."""
        return self._end - self._start + (4 + self._filled if self._frame is not None else 0)

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next read goes: the rest of the large frame, else free room in the scratch buffer."""
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        if self._scratch is None:
            self._scratch = _take_scratch(self.SCRATCH)
        if self._start == self._end:
            self._start = self._end = 0
        elif len(self._scratch) - self._end < self.SCRATCH // 4:
            # Move the incomplete frame to the front; it fits, being no larger than the buffer.
            pending = self._end - self._start
            self._scratch[:pending] = self._scratch[self._start : self._end]
            self._start, self._end = 0, pending
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[memoryview]:
        """``nbytes`` arrived in the last buffer; the frames they complete. Raises ``FrameTooLarge``."""
        if self._frame is not None:
            self._filled += nbytes
            if self._filled < len(self._frame):
                return []
            frame, self._frame, self._filled = self._frame, None, 0
            return [memoryview(frame)]
        self._end += nbytes
        frames: list[memoryview] = []
        buf = self._scratch
        start, end = self._start, self._end
        while end - start >= 4:
            size = _SIZE.unpack_from(buf, start)[0]
            if size < 0 or size > self.max_frame_bytes:
                raise FrameTooLarge(f"frame size {size} outside 0..{self.max_frame_bytes}")
            if 4 + size > len(buf):
                # Too big for the scratch buffer: its own buffer, which the next reads fill.
                have = end - start - 4  # < size, since everything received fits in the scratch buffer
                frame = bytearray(size)
                frame[:have] = buf[start + 4 : end]
                self._frame, self._filled = frame, have
                start = end = 0
                break
            if end - start - 4 < size:
                break
            frames.append(memoryview(buf[start + 4 : start + 4 + size]))  # a bytearray slice: a copy
            start += 4 + size
        if start == end:  # nothing pending: an idle connection keeps no buffer, the next read reuses this one
            _give_back_scratch(buf)
            self._scratch, start, end = None, 0, 0
        self._start, self._end = start, end
        return frames

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Hand over bytes received some other way; the frames they complete. Raises ``FrameTooLarge``."""
        frames: list[memoryview] = []
        view = memoryview(data)
        while view:
            buffer = self.get_buffer(len(view))
            size = min(len(buffer), len(view))
            buffer[:size] = view[:size]
            view = view[size:]
            frames += self.buffer_updated(size)
        return frames


_SPARE = threading.local()  # per thread: each event loop reads its connections one callback at a time


def _take_scratch(size: int) -> bytearray:
    """The thread's spare scratch buffer, now the caller's alone, or a new one: a connection whose last read left
    nothing pending hands its buffer back, so small requests do not allocate (and zero) a buffer each."""
    spare = getattr(_SPARE, "buffer", None)
    if spare is None or len(spare) != size:
        return bytearray(size)
    _SPARE.buffer = None
    return spare


def _give_back_scratch(buffer: bytearray) -> None:
    _SPARE.buffer = buffer


class RequestHeader:
    """A request's header, and where its body starts in the frame. (Plain classes here and on the broker's start-up
    path: making a dataclass costs as much as importing a module.)"""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "body_offset")

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None, body_offset: int = 0) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.body_offset = body_offset


@cache
def request_header_version(api_key: int, api_version: int) -> int:
    message = REQUESTS.get(api_key)
    return 2 if message is not None and is_flexible(message, api_version) else 1


@cache
def _header_has_tagged_fields(api_key: int, api_version: int) -> bool:
    """A request of a known API at a version we can read carries header v2: its tagged fields precede the body."""
    message = REQUESTS.get(api_key)
    return message is not None and in_range(api_version, message.valid) and is_flexible(message, api_version)


@cache
def response_header_version(api_key: int, api_version: int) -> int:
    """ApiVersions answers with header v0 at every version, so old clients can read a fallback answer."""
    if api_key == API_VERSIONS_KEY:
        return 0
    message = RESPONSES.get(api_key)
    return 1 if message is not None and is_flexible(message, api_version) else 0


def parse_request_header(frame: memoryview) -> RequestHeader:
    """Read the header; for a known API and version also its tagged fields, so the body can follow."""
    if len(frame) < _REQUEST_HEADER_FIXED.size:
        raise ProtocolError(f"a request header of {len(frame)} bytes")
    api_key, api_version, correlation_id, length = _REQUEST_HEADER_FIXED.unpack_from(frame)
    position = _REQUEST_HEADER_FIXED.size
    client_id = None
    if length >= 0:
        if position + length > len(frame):
            raise ProtocolError(f"a client id of {length} bytes overruns the request header")
        try:
            client_id = str(frame[position:position + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"invalid UTF-8 string: {exc}") from None
        position += length
    header = RequestHeader(api_key, api_version, correlation_id, client_id, position)
    if _header_has_tagged_fields(api_key, api_version):
        if position < len(frame) and frame[position] == 0:  # no tagged fields, as clients send it
            header.body_offset = position + 1
        else:
            r = Reader(frame, position)
            for _ in range(r.uvarint()):
                r.uvarint()
                r.raw(r.uvarint())
            header.body_offset = r.pos
    return header


@cache
def request_codec(api_key: int, api_version: int) -> StructCodec:
    """The codec of a request body: its API's description is loaded and the codec compiled on first use, and every
    later request is one cache lookup."""
    return codec(REQUESTS[api_key], api_version)


@cache
def response_codec(api_key: int, api_version: int) -> StructCodec:
    """The codec of a response body, as ``request_codec``."""
    return codec(RESPONSES[api_key], api_version)


def decode_request_body(header: RequestHeader, frame: memoryview) -> dict[str, Any]:
    """Decode the body of a request whose API and version the caller has accepted."""
    return request_codec(header.api_key, header.api_version).decode(Reader(frame, header.body_offset))


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """Build a whole request frame (for tests, tools and benchmarks acting as a client)."""
    w = Writer()
    codec(REQUEST_HEADER, request_header_version(api_key, api_version)).encode(
        w, {"request_api_key": api_key, "request_api_version": api_version, "correlation_id": correlation_id, "client_id": client_id}
    )
    request_codec(api_key, api_version).encode(w, body)
    return _SIZE.pack(len(w)) + w.getvalue()


class EncodedAnswer:
    """A response body encoded once, sent as it is to every request that gets the same answer (ApiVersions);
    ``body`` is what it encodes, for whoever needs to read or change an answer. (A plain class: a NamedTuple compiles
    its constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("body", "data")

    def __init__(self, body: dict[str, Any], data: bytes) -> None:
        self.body = body
        self.data = data

    @classmethod
    def of(cls, api_key: int, api_version: int, body: dict[str, Any]) -> EncodedAnswer:
        w = Writer()
        response_codec(api_key, api_version).encode(w, body)
        return cls(body, w.getvalue())


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: dict | EncodedAnswer,
) -> list[bytes | bytearray | memoryview]:
    """Build a response frame as a list of buffers to write in order. Size prefix, header and body are encoded
    straight into one buffer (the prefix filled in last), so a small answer is one buffer; large record data
    follows as parts of its own."""
    flexible_header = response_header_version(api_key, api_version) == 1
    if isinstance(body, EncodedAnswer):
        header = _SIZE.pack(len(body.data) + (5 if flexible_header else 4)) + _CORRELATION_ID.pack(correlation_id)
        return [header + b"\x00" + body.data if flexible_header else header + body.data]
    w = Writer()
    w.buf += _SIZE_AND_CORRELATION_ID.pack(0, correlation_id)
    if flexible_header:
        w.buf.append(0)  # no tagged fields
    response_codec(api_key, api_version).encode(w, body)
    parts = w.getparts()
    _SIZE.pack_into(parts[0], 0, len(w) - _SIZE.size)
    return parts


def decode_response(api_key: int, api_version: int, frame: bytes | memoryview) -> tuple[int, dict]:
    """Parse a response frame body (without size prefix): (correlation id, body). For tests and tools."""
    r = Reader(frame)
    header = codec(RESPONSE_HEADER, response_header_version(api_key, api_version)).decode(r)
    body = response_codec(api_key, api_version).decode(r)
    return header["correlation_id"], body
