"""``minibroker probe``: one ApiVersions round trip over a plain socket, for health checks and start-up waits.

It uses only ``protocol.frames`` (no broker code), so a container health check or a test harness pays for
little more than the codec import. Every failure (refused, unreachable, timed out, closed early, garbled
answer) becomes a ``ProbeError`` with a message that names the address.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

API_VERSIONS_KEY = 18
PROBE_API_VERSION = 3  # the first flexible version; every client since Kafka 2.4 opens with it
DEFAULT_TIMEOUT_S = 5.0
_SIZE = struct.Struct(">i")
_MAX_ANSWER_BYTES = 1 << 20


class ProbeError(Exception):
    """The address did not answer ApiVersions correctly in time."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    address: str
    elapsed_s: float
    api_count: int
    error_code: int
    api_keys: frozenset[int] = frozenset()  # the APIs the broker serves


def parse_address(text: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` or ``PLAINTEXT://host:port`` -> (host, port)."""
    address = text.split("://", 1)[-1].strip()
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ProbeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def probe(address: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> ProbeResult:
    """Connect, send ApiVersions v3 and read the whole answer, all within ``timeout_s``."""
    from minibroker import __version__
    from minibroker.protocol.frames import decode_response, encode_request
    from minibroker.protocol.primitives import ProtocolError

    host, port = parse_address(address)
    started = time.monotonic()
    deadline = started + timeout_s
    body = {"client_software_name": "minibroker-probe", "client_software_version": __version__}
    request = encode_request(API_VERSIONS_KEY, PROBE_API_VERSION, 1, "minibroker-probe", body)
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(request)
            (size,) = _SIZE.unpack(_recv_exactly(sock, 4, deadline))
            if not 0 < size <= _MAX_ANSWER_BYTES:
                raise ProbeError(f"{address} answered with a frame of {size} bytes: not a Kafka broker?")
            frame = _recv_exactly(sock, size, deadline)
    except TimeoutError:
        raise ProbeError(f"{address} did not answer within {timeout_s:g}s") from None
    except EOFError as exc:
        raise ProbeError(f"{address} closed the connection: {exc}") from None
    except OSError as exc:
        raise ProbeError(f"cannot reach {address}: {exc.strerror or exc}") from None
    try:
        correlation_id, answer = decode_response(API_VERSIONS_KEY, PROBE_API_VERSION, frame)
    except ProtocolError as exc:
        raise ProbeError(f"{address} sent an answer that is not ApiVersions v{PROBE_API_VERSION}: {exc}") from None
    if correlation_id != 1:
        raise ProbeError(f"{address} answered correlation id {correlation_id}, expected 1")
    if answer["error_code"] != 0:
        raise ProbeError(f"{address} answered ApiVersions with error code {answer['error_code']}")
    served = frozenset(api["api_key"] for api in answer["api_keys"])
    return ProbeResult(address, time.monotonic() - started, len(answer["api_keys"]), answer["error_code"], served)


def _recv_exactly(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError(f"after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)
