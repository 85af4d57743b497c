"""The TCP server: a thin asyncio loop that moves bytes between sockets and the dispatcher.

Each connection parses frames as bytes arrive and answers them one at a time, in order (as
Kafka does: a connection's next request is handled when the previous answer is written), so
pipelined requests are answered in request order. Reading pauses while too many frames wait
or the socket's send buffer is full, so a client that never reads cannot grow our memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING

from minibroker.dispatch import Disconnect, dispatch
from protocol.frames import FrameDecoder, FrameTooLarge

if TYPE_CHECKING:
    from minibroker.broker import Broker

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 64


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.decoder = FrameDecoder(broker.config.socket_request_max_bytes)
        self.queue: deque[memoryview] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.worker: asyncio.Task | None = None
        self.reading_paused = False
        self.closed_by_us = False
        self.accepting = True  # False once shutdown began: the request being served is the last one
        self.writable = asyncio.Event()
        self.writable.set()
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.decoder.buffered and not self.closed_by_us:
            log.warning("%s disconnected in the middle of a request (%d bytes dropped)", self.peer, self.decoder.buffered)
        self.broker.connections.discard(self)
        self.queue.clear()
        if not self.closed.done():
            self.closed.set_result(None)
        self.writable.set()
        if self.worker is not None and not self.worker.done():
            self.worker.cancel()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        if not self.accepting:
            return
        try:
            frames = self.decoder.feed(data)
        except FrameTooLarge as exc:
            log.warning("closing %s: %s", self.peer, exc)
            self.close()
            return
        if not frames:
            return
        self.queue.extend(frames)
        if len(self.queue) >= MAX_QUEUED_FRAMES and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        if self.worker is None or self.worker.done():
            self.worker = asyncio.get_running_loop().create_task(self.serve_queue())

    async def serve_queue(self) -> None:
        while self.queue:
            frame = self.queue.popleft()
            try:
                parts = await dispatch(self.broker, frame, self.peer)
            except Disconnect:
                self.close()
                return
            if self.transport.is_closing():
                return
            if parts is not None:
                self.transport.writelines(parts)
                if not self.writable.is_set():
                    await self.writable.wait()
            if self.reading_paused and self.accepting and len(self.queue) < MAX_QUEUED_FRAMES // 2:
                self.reading_paused = False
                self.transport.resume_reading()

    def stop_accepting(self) -> asyncio.Task | None:
        """Shutdown, step one: read and start no more requests; returns the worker still answering one, if any."""
        self.accepting = False
        self.queue.clear()
        if self.transport is not None and not self.transport.is_closing():
            self.reading_paused = True
            self.transport.pause_reading()
        return self.worker if self.worker is not None and not self.worker.done() else None

    def close(self) -> None:
        self.closed_by_us = True
        self.queue.clear()
        if self.transport is not None:
            self.transport.close()


async def start_server(broker: Broker, host: str, port: int) -> asyncio.base_events.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: KafkaConnection(broker), host, port, reuse_address=True)
