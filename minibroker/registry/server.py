"""The registry's listener and its glue to the broker: HTTP/1.1 with keep-alive (Confluent's clients reuse
connections), state read back from ``_schemas`` at start-up and written through the broker's own log."""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

from minibroker.cluster.internal_topics import KAFKA_INTERNAL_REPLICATION_FACTOR, InternalTopic, PendingFlushes, replay
from minibroker.registry import records as r
from minibroker.registry.api import CONTENT_TYPE, RegistryApi, RegistryError
from minibroker.registry.state import RegistryState
from minibroker.server.http import REASONS, ClosedBeforeRequest, HttpError, HttpRequest, RawBody, read_request
from minibroker.storage.errors import StorageError

if TYPE_CHECKING:
    from minibroker.broker import Broker

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024  # a schema far above any real one; a larger body is refused before it is read
EXTRA_REASONS = {422: "Unprocessable Entity"}


def encode_answer(status: int, value: Any, keep_alive: bool) -> bytes:
    if isinstance(value, RawBody):
        content_type, body = value.content_type, value.data
    else:
        content_type, body = CONTENT_TYPE, json.dumps(value, separators=(",", ":")).encode()
    reason = REASONS.get(status) or EXTRA_REASONS.get(status, "Unknown")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode() + body


def authorized(request: HttpRequest, token: str) -> bool:
    """The request carries the token: ``Authorization: Bearer <token>`` (a client's bearer.auth.token), or basic auth
    with the token as the password, any user (a client's basic.auth.user.info)."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "basic":
        try:
            given = base64.b64decode(given.strip(), validate=True).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


class SchemaRegistry:
    """The registry of one broker: its state, its API and its listener."""

    def __init__(self, broker: Broker, token: str = "") -> None:
        self.broker = broker
        self.token = token
        self.state = RegistryState()
        self.api = RegistryApi(self.state, self.write)
        self.flushes = PendingFlushes(broker)
        self.topic = InternalTopic(
            broker, r.SCHEMAS_TOPIC, 1, min(KAFKA_INTERNAL_REPLICATION_FACTOR, len(broker.node_ids)), self.flushes,
        )
        self._server: asyncio.base_events.Server | None = None
        self._connections: dict[asyncio.StreamWriter, asyncio.Task[None]] = {}  # open connections, ended by ``stop``
        self.address: tuple[str, int] | None = None

    def load(self) -> None:
        """The state as ``_schemas`` holds it (at start-up and after a snapshot is restored)."""
        self.clear()
        partition_log = self.broker.partition(r.SCHEMAS_TOPIC, 0)
        if partition_log is None:
            return
        for header, record in replay(partition_log):
            if header.is_control or record.key is None:
                continue
            try:
                self.state.apply(r.decode(record.key, record.value))
            except (r.RecordError, KeyError, TypeError, ValueError) as exc:
                log.warning("%s offset %d skipped: %s", r.SCHEMAS_TOPIC, record.offset, exc)

    def clear(self) -> None:
        self.state.clear()
        self.api.forget_parsed()

    async def write(self, records: list[r.Record]) -> None:
        """Append the records to ``_schemas`` as one batch, then apply them: the state never runs ahead of the log."""
        try:
            await self.topic.create()
            self.topic.append(0, [r.encode(record) for record in records])
        except (StorageError, OSError, LookupError) as exc:  # nothing applied: the state still matches the log
            log.warning("%s: write failed: %s", r.SCHEMAS_TOPIC, exc)
            raise RegistryError(500, 50001, f"Error while writing to the Kafka store: {exc}") from None
        for record in records:
            self.state.apply(record)
        await self.flushes.flush()

    async def start(self, host: str, port: int) -> None:
        self.load()
        self._server = await asyncio.start_server(self._serve, host, port, limit=64 * 1024)
        self.address = self._server.sockets[0].getsockname()[:2]

    async def stop(self) -> None:
        """Stop listening and end the open keep-alive connections: each one's loop sees the end of its stream and
        returns before the broker's event loop goes."""
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections.values())
        for writer in list(self._connections):
            writer.close()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests one after another until the client closes, asks to close, or sends what cannot be read."""
        task = asyncio.current_task()
        if task is not None:
            self._connections[writer] = task
        try:
            while True:
                try:
                    request = await read_request(reader, MAX_BODY_BYTES)
                except ClosedBeforeRequest:
                    return
                except HttpError as exc:  # the rest of the stream cannot be trusted: answer and close
                    writer.write(encode_answer(exc.status, {"error_code": exc.status, "message": str(exc)}, False))
                    await writer.drain()
                    return
                except asyncio.TimeoutError:
                    return
                try:
                    if self.token and not authorized(request, self.token):
                        status, value = 401, {"error_code": 401, "message": "Unauthorized"}
                    else:
                        status, value = await self.api.handle(request)
                except Exception as exc:  # a bug: answered as Confluent answers one, logged, and the broker goes on
                    log.exception("schema registry request %s %s failed", request.method, request.path)
                    status, value = 500, {"error_code": 500, "message": f"{type(exc).__name__}: {exc}"}
                keep_alive = request.headers.get("connection", "").lower() != "close"
                writer.write(encode_answer(status, value, keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, OSError):
            pass
        finally:
            self._connections.pop(writer, None)
            writer.close()
