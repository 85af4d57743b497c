"""The control listener's HTTP: one small JSON request per connection, parsed by hand on asyncio streams.

Tests drive the broker over it from any language (curl, a Node or Go program). It is deliberately plain
HTTP/1.1 with ``Connection: close``: a request line, headers, a ``Content-Length`` body, one answer. Anything else
(a malformed request line, oversized headers or body, chunked bodies, bad JSON, a missing or wrong bearer token) gets
a 4xx answer naming the problem, never an exception in the broker.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, unquote, urlsplit

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 16 * 1024
MAX_BODY_BYTES = 1024 * 1024
READ_TIMEOUT_S = 10.0
REASONS = {
    200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
    413: "Content Too Large", 500: "Internal Server Error",
}
API_PREFIX = "/v1/"  # what a token guards: the API; the inspector's page and assets hold no data


class HttpError(Exception):
    """An answer other than success: its status and the message it carries as ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ClosedBeforeRequest(HttpError):
    """The client closed the connection without starting a request (a keep-alive connection's normal end)."""


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = b""
    segments: list[str] = field(default_factory=list)  # the path split on "/", each percent-decoded

    def json(self) -> dict[str, Any]:
        """The body as a JSON object ({} when empty); 400 for anything else."""
        if not self.body.strip():
            return {}
        try:
            value = json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, f"the body is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise HttpError(400, "the body must be a JSON object")
        return value


@dataclass(frozen=True)
class RawBody:
    """An answer that is not JSON: a page, a script, a download. ``headers`` are added to the answer's own."""

    content_type: str
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)


Answer = tuple[int, Any]  # (status, JSON value or RawBody; None: no body)
Handler = Callable[[HttpRequest], Awaitable[Answer]]


async def read_request(reader: asyncio.StreamReader, max_body: int = MAX_BODY_BYTES) -> HttpRequest:
    """One request from the stream; HttpError for whatever is not a request this server serves."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
    except asyncio.LimitOverrunError:
        raise HttpError(413, f"request headers above {MAX_HEADER_BYTES} bytes") from None
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise ClosedBeforeRequest(400, "the connection closed before a request") from None
        raise HttpError(400, "the request ended before its headers did") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"not an HTTP/1.x request line: {lines[0][:100]!r}")
    method, target, _ = parts
    headers = {}
    for line in lines[1:]:
        if line:
            name, colon, value = line.partition(":")
            if not colon:
                raise HttpError(400, f"not a header: {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(411, "chunked bodies are not served: send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise HttpError(400, f"Content-Length is not a number: {headers['content-length']!r}") from None
    if not 0 <= length <= max_body:
        raise HttpError(413, f"a body of {length} bytes (at most {max_body})")
    try:
        body = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT_S) if length else b""
    except asyncio.IncompleteReadError:
        raise HttpError(400, f"the body ended before its {length} bytes") from None
    url = urlsplit(target)
    segments = [unquote(segment) for segment in url.path.strip("/").split("/") if segment]
    return HttpRequest(method.upper(), url.path, parse_qs(url.query), headers, body, segments)


def check_token(request: HttpRequest, token: str) -> None:
    """A configured token must come as ``Authorization: Bearer <token>``."""
    if not token or not request.path.startswith(API_PREFIX):
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise HttpError(401, "a bearer token is required: Authorization: Bearer <control.token>")


def encode_answer(status: int, value: Any) -> bytes:
    if isinstance(value, RawBody):
        content_type, body, extra = value.content_type, value.data, value.headers
    else:
        content_type, extra = "application/json", {}
        body = b"" if value is None else json.dumps(value, sort_keys=True).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\nContent-Type: {content_type}\r\n"
        + "".join(f"{name}: {text}\r\n" for name, text in extra.items())
        + f"Content-Length: {len(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str, handle: Handler,
) -> None:
    """Read one request, answer it, close."""
    peer = writer.get_extra_info("peername")
    try:
        try:
            request = await read_request(reader)
            check_token(request, token)
            status, value = await handle(request)
        except HttpError as exc:
            status, value = exc.status, {"error": str(exc)}
        except asyncio.TimeoutError:
            status, value = 400, {"error": f"no complete request within {READ_TIMEOUT_S:.0f} s"}
        except Exception as exc:  # a bug in a handler: answered, logged, and the broker goes on
            log.exception("control request from %s failed", peer)
            status, value = 500, {"error": f"{type(exc).__name__}: {exc}"}
        if status >= 400:
            log.info("control request from %s answered %d: %s", peer, status, value.get("error"))
        writer.write(encode_answer(status, value))
        await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def start_http_server(host: str, port: int, token: str, handle: Handler) -> asyncio.base_events.Server:
    return await asyncio.start_server(
        lambda r, w: serve_connection(r, w, token, handle), host, port, limit=MAX_HEADER_BYTES,
    )
