"""Abusive clients for the load test and ``benchmarks/load.py``: many idle connections, slow senders that
trickle each request a byte at a time, and deaf clients that pipeline Fetch requests and never read.

One thread drives every socket (non-blocking, no selector: a sweep every few milliseconds is enough), so
the abuse costs the test process little while the broker sees it all at once.
"""

from __future__ import annotations

import resource
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from minibroker.protocol.frames import encode_request

API_VERSIONS = 18
METADATA = 3
FETCH = 1
FETCH_VERSION = 4
DEAF_SOCKET_BUFFER = 64 * 1024  # keeps the kernel's share small: the broker's own buffers are what we watch
# Fetch sizes of deaf clients, alternately: answers the broker writes from memory (below its 64 KiB sendfile
# threshold) and answers it sends from the segment file.
DEAF_FETCH_BYTES = (48 * 1024, 256 * 1024)
SWEEP_S = 0.005
DEAF_BYTES_PER_SWEEP = 256 * 1024


def raise_open_file_limit(wanted: int) -> None:
    """Raise this process's soft RLIMIT_NOFILE towards the hard limit; fails if even that is below ``wanted``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(max(wanted, soft), hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raise RuntimeError(f"need {wanted} open files, the hard limit allows {soft}")


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def connect(address: tuple[str, int], buffer_bytes: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if buffer_bytes:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_bytes)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes)
    sock.settimeout(10)
    sock.connect(address)
    sock.setblocking(False)
    return sock


def fill_fetched_topic(bootstrap: str, topic: str) -> None:
    """What deaf clients fetch: 20,000 records in batches of 100 (about 10 KiB), so a Fetch answer is as big
    as the client asked for, not one oversized batch."""
    timed_produce(bootstrap, topic, 20_000, **{"linger.ms": 0, "batch.num.messages": 100})


def fetch_request(topic: str, max_bytes: int, correlation_id: int) -> bytes:
    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": max_bytes}]}],
    }
    return encode_request(FETCH, FETCH_VERSION, correlation_id, "deaf", body)


@dataclass
class SlowSender:
    """Sends a Metadata request one byte per sweep, reads the answer, starts again."""

    sock: socket.socket
    frame: bytes
    sent: int = 0
    received: bytearray = field(default_factory=bytearray)
    answers: int = 0

    def step(self) -> None:
        if self.sent < len(self.frame):
            try:
                self.sent += self.sock.send(self.frame[self.sent : self.sent + 1])
            except BlockingIOError:
                pass
            return
        try:
            self.received += self.sock.recv(65536)
        except BlockingIOError:
            return
        if len(self.received) >= 4 and len(self.received) >= 4 + struct.unpack_from(">i", self.received)[0]:
            self.answers += 1
            self.received.clear()
            self.sent = 0


@dataclass
class DeafClient:
    """Pipelines Fetch requests as fast as the broker reads them and never reads an answer."""

    sock: socket.socket
    frame: bytes
    pending: memoryview = field(default_factory=lambda: memoryview(b""))
    bytes_sent: int = 0

    def step(self) -> None:
        budget = DEAF_BYTES_PER_SWEEP  # so one sweep cannot starve the slow senders
        try:
            while budget > 0:
                if not self.pending:
                    self.pending = memoryview(self.frame)
                sent = self.sock.send(self.pending)
                self.bytes_sent += sent
                budget -= sent
                self.pending = self.pending[sent:]
        except BlockingIOError:
            pass


class Abuse:
    """``idle`` connections that made one request, ``slow`` slow senders and ``deaf`` deaf clients."""

    def __init__(self, bootstrap: str, topic: str, *, idle: int, slow: int, deaf: int) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.address = (host, int(port))
        self.topic = topic
        self.counts = (idle, slow, deaf)
        self.idle: list[socket.socket] = []
        self.slow: list[SlowSender] = []
        self.deaf: list[DeafClient] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="abuse", daemon=True)

    def __enter__(self) -> Abuse:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        idle, slow, deaf = self.counts
        probe = encode_request(API_VERSIONS, 0, 1, "idle", {})
        for _ in range(idle):
            sock = connect(self.address)
            self.idle.append(sock)
            sock.setblocking(True)
            sock.sendall(probe)
            sock.recv(65536)
            sock.setblocking(False)
        metadata = encode_request(METADATA, 1, 1, "slow", {"topics": []})
        self.slow = [SlowSender(connect(self.address), metadata) for _ in range(slow)]
        self.deaf = [
            DeafClient(connect(self.address, DEAF_SOCKET_BUFFER), fetch_request(self.topic, DEAF_FETCH_BYTES[i % 2], i))
            for i in range(deaf)
        ]

    def run(self) -> None:
        while not self.stopping.wait(SWEEP_S):
            for client in (*self.slow, *self.deaf):
                try:
                    client.step()
                except OSError:
                    pass  # counted as not answered / not sending; the test's assertions say what went wrong

    def still_open(self) -> int:
        """Idle connections the broker has not closed (a closed one reads as EOF)."""
        count = 0
        for sock in self.idle:
            try:
                count += sock.recv(1) != b""
            except BlockingIOError:
                count += 1
            except OSError:
                pass
        return count

    @property
    def slow_answers(self) -> int:
        return sum(client.answers for client in self.slow)

    @property
    def deaf_bytes_sent(self) -> int:
        return sum(client.bytes_sent for client in self.deaf)

    def close(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(5)
        for sock in (*self.idle, *(c.sock for c in self.slow), *(c.sock for c in self.deaf)):
            sock.close()


def timed_produce(bootstrap: str, topic: str, count: int, size: int = 100, timeout_s: float = 60.0, **config: object) -> float:
    """Produce ``count`` records of ``size`` bytes with acks=all from confluent-kafka (``config``: more producer
    settings); seconds taken. Raises if any record is not acknowledged in time."""
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": int(timeout_s * 1000), **config}
    )
    payload = b"x" * size
    start = time.monotonic()
    try:
        for _ in range(count):
            while True:
                try:
                    producer.produce(topic, payload, on_delivery=lambda err, _msg: err is not None and errors.append(str(err)))
                    break
                except BufferError:
                    producer.poll(0.01)
        remaining = producer.flush(timeout_s)
    finally:
        producer.purge()
        producer.close()
    if remaining or errors:
        raise AssertionError(f"{remaining} records unacknowledged, errors {errors[:3]}")
    return time.monotonic() - start
