"""The TCP server: a thin asyncio loop that moves bytes between sockets and the dispatcher.

Each connection parses frames as bytes arrive and answers them one at a time, in order (as
Kafka does: a connection's next request is handled when the previous answer is written), so
pipelined requests are answered in request order. Reading pauses while too many frames wait
or the transport's write buffer is above its high-water mark, so a client that never reads its
answers cannot grow our memory. Each connection belongs to one listener (its security protocol and
advertised address) and, on SASL listeners, carries its authentication state. A connection with no
traffic either way for ``connections.max.idle.ms`` is closed by the broker's idle sweep. A client over one of its
quotas (minibroker.quotas) is muted: nothing more is read from it or served until its throttle time has passed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING

from minibroker.cluster.clock import sleep_ms
from minibroker.protocol.frames import FrameReader, FrameTooLarge
from minibroker.protocol.primitives import FileRegion
from minibroker.server.dispatch import Disconnect, dispatch
from minibroker.server.eager import start_eagerly

if TYPE_CHECKING:
    import ssl

    from minibroker.broker import Broker
    from minibroker.config.listeners import Listener

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 64
# asyncio waits up to 30 s for a peer's TLS close_notify; Kafka does not wait at all. A peer that never
# answers (clients that drop a failed connection without closing it) would hold the socket that long.
SSL_SHUTDOWN_TIMEOUT_S = 1.0


class KafkaConnection(asyncio.BufferedProtocol):
    use_sendfile: bool | None = None  # decided on the first answer holding a FileRegion

    def __init__(self, broker: Broker, listener: Listener) -> None:
        self.broker = broker
        self.listener = listener
        self.sasl = broker.sasl.new_session() if listener.protocol.uses_sasl and broker.sasl is not None else None
        self.principal: str | None = None  # who the client is, for the authorizer: found on first use
        self.decoder = FrameReader(broker.config.socket_request_max_bytes)  # reads land in frame buffers
        self.queue: deque[memoryview] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.worker: asyncio.Task | None = None
        self.reading_paused = False
        self.closed_by_us = False
        self.close_after_answer = False  # set by a handler whose answer is the last (failed authentication)
        self.muted_ms = 0  # a quota's throttle time: no request is read or served for that long (dispatch sets it)
        self.muting = False  # waiting out the throttle time
        self.answer_first = True  # while muted, the answer goes out first (KIP-219) or after the throttle time
        self.accepting = True  # False once shutdown began: the request being served is the last one
        self.writable = asyncio.Event()
        self.writable.set()
        self.loop = asyncio.get_running_loop()  # kept: asking for the running loop costs a getpid() system call
        self.closed = self.loop.create_future()
        self.last_active = self.loop.time()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.broker.connections.add(self)
        quotas = self.broker.quota_state
        if quotas is not None and quotas.active and peer and self.connection_throttled(peer[0]):
            return
        if self.listener.protocol.uses_tls and self.sasl is None:
            self.name_certificate()

    def connection_throttled(self, address: str) -> bool:
        """Kafka's connection_creation_rate: a connection over its address's quota is closed, unserved, once its
        throttle time has passed on the broker's clock."""
        from minibroker.quotas.charge import connection_throttle  # only with quotas configured

        throttle_ms = connection_throttle(self.broker, self.listener.node_id, address)
        if not throttle_ms:
            return False
        log.info("delaying closing of connection from %s for %d ms (connection_creation_rate)", address, throttle_ms)
        self.accepting = False
        self.muting = True
        self.update_reading()
        self.worker = self.loop.create_task(self.close_after(throttle_ms))
        return True

    async def close_after(self, ms: int) -> None:
        await sleep_ms(self.broker.clock, ms)
        self.close()

    def name_certificate(self) -> None:
        """On SSL the principal is known once the handshake is done; a certificate ``ssl.principal.mapping.rules``
        cannot map closes the connection, as in Kafka (there at the first request: the principal cannot be built)."""
        from minibroker.acls.principal import connection_principal
        from minibroker.acls.ssl_mapping import MappingError

        try:
            self.principal = connection_principal(self)
        except MappingError as exc:
            self.broker.repeated_logs.error(
                log, "closing %s: ssl.principal.mapping.rules cannot name its certificate: %s", self.peer, exc
            )
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.decoder.buffered and not self.closed_by_us:
            log.warning("%s disconnected in the middle of a request (%d bytes dropped)", self.peer, self.decoder.buffered)
        self.broker.connections.discard(self)
        if self.broker.loaded_share_partitions is not None:
            self.broker.loaded_share_partitions.connection_closed(self)
        self.queue.clear()
        if not self.closed.done():
            self.closed.set_result(None)
        self.writable.set()
        if self.worker is not None and not self.worker.done():
            self.worker.cancel()

    def pause_writing(self) -> None:
        self.writable.clear()
        self.update_reading()

    def resume_writing(self) -> None:
        self.writable.set()
        self.last_active = self.loop.time()
        self.update_reading()

    def update_reading(self) -> None:
        """Read only while the queue has room, answers are flowing out, no quota mutes the client and shutdown has
        not begun."""
        if self.transport is None or self.transport.is_closing():
            return
        if len(self.queue) >= MAX_QUEUED_FRAMES or not self.writable.is_set() or not self.accepting or self.muting:
            if not self.reading_paused:
                self.reading_paused = True
                self.transport.pause_reading()
        elif self.reading_paused and len(self.queue) < MAX_QUEUED_FRAMES // 2:
            self.reading_paused = False
            self.transport.resume_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = self.loop.time()
        if not self.accepting or self.closed_by_us:
            return  # the bytes are dropped: the decoder did not count them
        try:
            frames = self.decoder.buffer_updated(nbytes)
        except FrameTooLarge as exc:
            self.broker.repeated_logs.warning(log, "closing %s: %s", self.peer, exc)
            self.close()
            return
        if not frames:
            return
        self.queue.extend(frames)
        if len(self.queue) >= MAX_QUEUED_FRAMES:
            self.update_reading()
        if self.worker is None or self.worker.done():
            try:  # answered right here unless a request has to wait (minibroker.server.eager)
                self.worker = start_eagerly(self.loop, self.serve_queue())
            except Exception:
                log.exception("closing %s: serving its requests failed", self.peer)
                self.close()

    async def serve_queue(self) -> None:
        while self.queue:
            frame = self.queue.popleft()
            try:
                parts = await dispatch(self.broker, frame, self.peer, self)
            except Disconnect:
                self.close()
                return
            if self.transport.is_closing():
                return
            if self.broker.fetches_woken:
                self.broker.fetches_woken = False
                await asyncio.sleep(0)  # the Fetches this request's appends woke answer first: the record is on
                # its way to the consumer before the producer's acknowledgement (end-to-end latency 10 % lower)
            if self.muted_ms and not self.answer_first:
                await self.wait_muted()
                if self.transport.is_closing():
                    close_regions(parts)
                    return
            if parts is not None:
                if len(parts) == 1:  # a small answer: encoded in one buffer
                    self.transport.write(parts[0])
                elif any(type(part) is FileRegion for part in parts):
                    await self.write_with_regions(parts)
                else:
                    self.transport.writelines(parts)
                self.last_active = self.loop.time()
            if self.close_after_answer:
                self.close_soon()
                return
            if self.muted_ms:
                await self.wait_muted()
            if not self.writable.is_set():
                await self.writable.wait()
            if self.reading_paused:
                self.update_reading()

    def mute(self, throttle_ms: int, answered_first: bool) -> None:
        """Throttle the client for ``throttle_ms`` of the broker's clock, as Kafka mutes a throttled channel."""
        self.muted_ms = throttle_ms
        self.answer_first = answered_first

    async def wait_muted(self) -> None:
        """Read and serve nothing more from this client until its throttle time has passed."""
        muted_ms, self.muted_ms = self.muted_ms, 0
        if self.transport is None or self.transport.is_closing():
            return
        self.muting = True
        self.update_reading()
        try:
            await sleep_ms(self.broker.clock, muted_ms)
        finally:
            self.muting = False
        self.update_reading()

    async def write_with_regions(self, parts: list) -> None:
        """Write an answer holding FileRegions (large Fetch data): buffers with writelines, each region with
        loop.sendfile once the transport has flushed what precedes it (os.sendfile: no copy through Python), or
        read with pread where the transport cannot sendfile (TLS, other event loops)."""
        loop = asyncio.get_running_loop()
        if self.use_sendfile is None:
            mode = getattr(self.transport, "_sendfile_compatible", None)
            self.use_sendfile = mode is not None and mode.name == "TRY_NATIVE" and hasattr(loop, "sendfile")
        pending: list = []
        try:
            for part in parts:
                if type(part) is not FileRegion:
                    pending.append(part)
                    continue
                if self.use_sendfile:
                    if pending:
                        self.transport.writelines(pending)
                        pending = []
                    if self.transport.is_closing():
                        return
                    try:
                        await loop.sendfile(self.transport, part, part.offset, part.count, fallback=False)
                        continue
                    except asyncio.SendfileNotAvailableError:  # nothing was sent: pread from now on
                        self.use_sendfile = False
                pending.append(part.read())
            if pending and not self.transport.is_closing():
                self.transport.writelines(pending)
        except (ConnectionError, OSError) as exc:
            log.info("closing %s: sending fetched data failed: %s", self.peer, exc)
            self.close()
        finally:
            close_regions(parts)

    def stop_accepting(self) -> asyncio.Task | None:
        """Shutdown, step one: read and start no more requests; returns the worker still answering one, if any (one
        waiting out a quota's throttle time is stopped: the throttle may not end before shutdown does)."""
        self.accepting = False
        self.queue.clear()
        self.update_reading()
        if self.muting and self.worker is not None:
            self.worker.cancel()
            return None
        return self.worker if self.worker is not None and not self.worker.done() else None

    def close_soon(self) -> None:
        """Close after ``connection.failed.authentication.delay.ms``, as Kafka does after a failed authentication:
        clients read the answer before they see the connection end, and password guessing is slowed down."""
        self.accepting = False
        self.queue.clear()
        self.update_reading()
        asyncio.get_running_loop().call_later(self.broker.config.connection_failed_authentication_delay_ms / 1000, self.close)

    def close(self) -> None:
        self.closed_by_us = True
        self.queue.clear()
        if self.transport is not None:
            if self.reading_paused:
                # asyncio's TLS transport (3.11) never finishes closing if the peer's EOF came while reading
                # was paused: it waits for reading to resume, and close() alone does not resume it.
                self.reading_paused = False
                self.transport.resume_reading()
            self.transport.close()


def close_regions(parts: list | None) -> None:
    """Close the file regions of an answer that was sent or will not be."""
    for part in parts or ():
        if type(part) is FileRegion:
            part.close()


async def start_server(broker: Broker, listener: Listener, tls: ssl.SSLContext | None = None) -> asyncio.base_events.Server:
    """Bind one listener; with ``tls`` its connections reach the protocol once the TLS handshake is done."""
    loop = asyncio.get_running_loop()
    spec = listener.spec
    handshake_timeout = min(broker.config.connections_max_idle_ms / 1000, 60.0) if tls is not None else None
    return await loop.create_server(
        lambda: KafkaConnection(broker, listener), spec.host, listener.port, reuse_address=True,
        ssl=tls, ssl_handshake_timeout=handshake_timeout, ssl_shutdown_timeout=SSL_SHUTDOWN_TIMEOUT_S if tls else None,
        backlog=1024,
    )


def close_keeping_ports(server: asyncio.base_events.Server) -> list[socket.socket]:
    """Stop listening, but keep the ports: each listening address gets a socket bound without ``listen()``, so
    clients are refused as by a stopped broker while no other program's bind or outgoing connection takes the port
    before the node starts on it again (Linux leaves a bound port to its socket). Close them once the node listens
    again; an address taken in the instant between is left for that start to report."""
    addresses = [(sock.family, sock.getsockname()) for sock in server.sockets]
    server.close()
    held = []
    for family, address in addresses:
        keeper = socket.socket(family, socket.SOCK_STREAM)
        keeper.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the listener had; its connections linger
        if family == socket.AF_INET6:
            keeper.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # as asyncio binds an IPv6 listener
        try:
            keeper.bind(address)
        except OSError:
            keeper.close()
            continue
        held.append(keeper)
    return held

