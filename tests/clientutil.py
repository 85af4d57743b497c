"""Helpers shared by the client compatibility, restart and bad-input tests.

A test message set (keys, null keys, null and empty values, headers), the per-partition
comparison of what was produced with what was consumed, confluent-kafka produce/consume/admin
helpers (used by several modules and the benchmark), a raw protocol connection for hand-built
frames, and broker-log polling.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.control_client import ControlClient
from minibroker.protocol.compression import CODEC_NAMES
from minibroker.protocol.frames import decode_response, encode_request
from minibroker.protocol.records import BatchHeader, iter_batches

TIMEOUT_S = 30.0
TIMEOUT_MS = int(TIMEOUT_S * 1000)
CODECS = ("gzip", "snappy", "lz4", "zstd")
MIB = 1 << 20
BIG_MESSAGE_BYTES = 2 * MIB  # topic max.message.bytes and client limits for the 1 MiB message tests
PARTITIONS = 3

Header = tuple[str, bytes]


@dataclass(frozen=True, slots=True)
class Message:
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the producer says a message went; ``offset`` is None when the client could not know (acks=0)."""

    partition: int
    offset: int | None


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    message: Message


def make_messages(count: int = 1000, seed: int = 0) -> list[Message]:
    """A deterministic mix: null keys, repeated keys, null and empty values, none/one/several headers
    (repeated header names, empty header values). Key and value are never both null (kafka-python and
    aiokafka refuse that)."""
    rng = random.Random(seed)
    messages = []
    for i in range(count):
        key = None if i % 5 == 0 else f"key-{i % 41}".encode()
        if key is not None and i % 7 == 3:
            value = None
        elif i % 13 == 4:
            value = b""
        else:
            value = (f"value {i} " * rng.randint(1, 12)).encode() + rng.randbytes(rng.randint(0, 40))
        if i % 3 == 0:
            headers: tuple[Header, ...] = ()
        else:
            headers = tuple((f"h{j}", f"{i}:{j}".encode()) for j in range(i % 4))
            headers += (("dup", b"1"), ("dup", b"")) if i % 11 == 1 else ()
        messages.append(Message(key, value, headers))
    return messages


def normalize_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> tuple[Header, ...]:
    return tuple((name, value) for name, value in headers or ())


def check_round_trip(messages: Sequence[Message], placements: Sequence[Placement], consumed: Sequence[Consumed]) -> None:
    """Each partition's consumed sequence equals what was sent to it, in send order, at the offsets the producer was told."""
    assert len(placements) == len(messages), "every message needs its delivery report"
    expected: dict[int, list[Message]] = defaultdict(list)
    expected_offsets: dict[int, list[int | None]] = defaultdict(list)
    for message, placement in zip(messages, placements):
        expected[placement.partition].append(message)
        expected_offsets[placement.partition].append(placement.offset)
    got: dict[int, list[Message]] = defaultdict(list)
    got_offsets: dict[int, list[int]] = defaultdict(list)
    for record in consumed:
        got[record.partition].append(record.message)
        got_offsets[record.partition].append(record.offset)
    assert sorted(got) == sorted(expected), f"partitions consumed {sorted(got)}, produced to {sorted(expected)}"
    for partition, sent in expected.items():
        received = got[partition]
        mismatch = next((i for i, (a, b) in enumerate(zip(sent, received)) if a != b), None)
        assert mismatch is None, f"partition {partition} index {mismatch}: sent {sent[mismatch]}, consumed {received[mismatch]}"
        assert len(received) == len(sent), f"partition {partition}: sent {len(sent)}, consumed {len(received)}"
        assert got_offsets[partition] == list(range(len(sent))), f"partition {partition}: offsets not 0..{len(sent) - 1}"
        if None not in expected_offsets[partition]:
            assert expected_offsets[partition] == got_offsets[partition], f"partition {partition}: delivery offsets differ"


def counts_by_partition(placements: Iterable[Placement]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for placement in placements:
        counts[placement.partition] += 1
    return dict(counts)


class Deadline:
    """A bounded wait: ``while deadline.left():`` loops until the time is up."""

    def __init__(self, seconds: float = TIMEOUT_S) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)


# ---- confluent-kafka ----


def confluent_admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": TIMEOUT_MS})


def confluent_create_topic(
    bootstrap: str, topic: str, partitions: int = PARTITIONS, config: dict[str, str] | None = None
) -> None:
    admin = confluent_admin(bootstrap)
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, config=config or {})], request_timeout=TIMEOUT_S)
    futures[topic].result(timeout=TIMEOUT_S)


def confluent_produce(bootstrap: str, topic: str, messages: Sequence[Message], **config: Any) -> list[Placement]:
    """Produce in order; returns each message's placement from its delivery report (offset None for acks=0)."""
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS, **config})
    placements: list[Placement | None] = [None] * len(messages)
    errors: list[str] = []

    def on_delivery(index: int):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(f"message {index}: {err}")
            else:
                offset = msg.offset()  # None or negative when the broker does not answer (acks=0)
                placements[index] = Placement(msg.partition(), offset if offset is not None and offset >= 0 else None)

        return report

    try:
        for index, message in enumerate(messages):
            producer.produce(
                topic, key=message.key, value=message.value, headers=list(message.headers) or None, on_delivery=on_delivery(index)
            )
            producer.poll(0)
        remaining = producer.flush(TIMEOUT_S)
    finally:
        producer.purge()
        producer.close()
    assert remaining == 0, f"{remaining} messages still undelivered after {TIMEOUT_S}s"
    assert not errors, errors[:5]
    return [placement for placement in placements if placement is not None]


def confluent_consumer(bootstrap: str, **config: Any) -> Consumer:
    """An assign-only consumer: librdkafka's Python binding refuses a consumer without group.id, so it gets
    a unique one that is never joined (no subscribe) and never committed to."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"assign-only-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "socket.timeout.ms": TIMEOUT_MS,
            **config,
        }
    )


def confluent_consume(
    bootstrap: str, topic: str, counts: dict[int, int], partitions: int = PARTITIONS, **config: Any
) -> list[Consumed]:
    """Read every partition from the beginning until ``counts[p]`` records came from each partition p."""
    consumer = confluent_consumer(bootstrap, **config)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        return drain(consumer, counts)
    finally:
        consumer.close()


def drain(consumer: Consumer, counts: dict[int, int]) -> list[Consumed]:
    wanted = sum(counts.values())
    consumed: list[Consumed] = []
    deadline = Deadline()
    while len(consumed) < wanted and deadline.left():
        for msg in consumer.consume(num_messages=min(wanted - len(consumed), 1000), timeout=min(0.5, deadline.left())):
            if msg.error() is not None:
                raise KafkaException(msg.error())
            message = Message(msg.key(), msg.value(), normalize_headers(msg.headers()))
            consumed.append(Consumed(msg.partition(), msg.offset(), message))
    assert len(consumed) >= wanted, f"consumed {len(consumed)} of {wanted} records in {TIMEOUT_S}s"
    return consumed


# ---- raw protocol connections ----


def raw_request_frame(
    api_key: int, api_version: int, correlation_id: int, body: bytes = b"", header_version: int = 1, client_id: str = "raw"
) -> bytes:
    """A frame for any key and version, even unknown ones, with a v1 request header or a v2 one (empty tagged fields)."""
    name = client_id.encode()
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(name)) + name
    payload = header + (b"\x00" if header_version >= 2 else b"") + body
    return struct.pack(">i", len(payload)) + payload


class RawConnection:
    """A plain TCP connection for hand-made frames; every read has a timeout."""

    def __init__(self, bootstrap: str, timeout: float = 5.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local_host, local_port = self.sock.getsockname()[:2]
        self.peer = f"{local_host}:{local_port}"  # how the broker names this connection in its log

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, api_key: int, api_version: int, body: dict, correlation_id: int = 1) -> bytes:
        """Send a request encoded by the project's codecs and return the answer frame (without size prefix)."""
        self.send(encode_request(api_key, api_version, correlation_id, "raw-test", body))
        return self.recv_frame()

    def _recv_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError(f"connection closed after {len(data)} of {size} bytes")
            data += chunk
        return bytes(data)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exactly(4))
        return self._recv_exactly(size)

    def closed_by_peer(self, within: float = 2.0) -> bool:
        """True if the broker closes the connection within ``within`` seconds (answers before that are read and dropped)."""
        deadline = Deadline(within)
        while deadline.left():
            self.sock.settimeout(deadline.left())
            try:
                if not self.sock.recv(65536):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
            except TimeoutError:
                return False
        return False


FETCH = 1
FETCH_VERSION = 4
MAX_FETCH_BYTES = 64 * MIB


def requests_read(control: ControlClient, api: str) -> int:
    """How many ``api`` requests the broker has read (counted when read: a long-poll Fetch is waiting once counted)."""
    return control.request("GET", "/v1/cluster")["requests"]["by_api"].get(api, 0)


def stored_batches(bootstrap: str, topic: str, partition: int) -> list[BatchHeader]:
    """The batch headers of a partition as the broker serves them, read with raw Fetch v4 requests."""
    headers: list[BatchHeader] = []
    offset = 0
    with RawConnection(bootstrap) as conn:
        while True:
            request = {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": MAX_FETCH_BYTES, "isolation_level": 0,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset, "partition_max_bytes": MAX_FETCH_BYTES}
                ]}],
            }
            _, answer = decode_response(FETCH, FETCH_VERSION, conn.request(FETCH, FETCH_VERSION, request))
            [data] = answer["responses"][0]["partitions"]
            assert data["error_code"] == 0, f"raw fetch of {topic}-{partition}: error {data['error_code']}"
            batches = list(iter_batches(data["records"] or b""))
            headers += batches
            if not batches or batches[-1].last_offset + 1 >= data["high_watermark"]:
                return headers
            offset = batches[-1].last_offset + 1


def check_wire_format(bootstrap: str, topic: str, partitions: int, codec: str | None, idempotent: bool) -> None:
    """The stored batches carry the codec and producer ids the client was configured with: a client may
    silently fall back to no compression (librdkafka does when it thinks the broker lacks the codec), which a
    round trip alone would not show. A batch that does not shrink may go uncompressed (kafka-python does that)."""
    headers = [h for p in range(partitions) for h in stored_batches(bootstrap, topic, p)]
    assert headers, "no batches stored"
    expected = codec or "none"
    stored = {CODEC_NAMES[h.compression] for h in headers}
    assert expected in stored and stored <= {expected, "none"}, f"batches stored as {sorted(stored)}, the producer used {expected}"
    producer_ids = sorted({h.producer_id for h in headers})
    assert all((pid >= 0) == idempotent for pid in producer_ids), f"producer ids {producer_ids}, idempotent={idempotent}"


# ---- broker log ----


def log_lines_about(log_text: str, peer: str) -> list[str]:
    pattern = re.compile(re.escape(peer) + r"(?!\d)")
    return [line for line in log_text.splitlines() if pattern.search(line)]


def wait_for_log_lines(read_log: Any, since: int, peer: str, within: float = 3.0, settle: float = 0.2) -> list[str]:
    """Lines naming ``peer`` logged after character ``since``; waits until one shows up, then a little longer
    so that a second line, if any, is seen too."""
    deadline = Deadline(within)
    while deadline.left():
        if log_lines_about(read_log()[since:], peer):
            time.sleep(settle)
            break
        time.sleep(0.02)
    return log_lines_about(read_log()[since:], peer)


# ---- ListOffsets by timestamp ----

TIMED_RECORDS = 10
TIMESTAMP_STEP = 10
SEPARATE_BATCHES = 5  # the first records go one batch each, the rest share one batch


def record_timestamps(t0: int) -> list[int]:
    return [t0 + TIMESTAMP_STEP * i for i in range(TIMED_RECORDS)]


def timestamp_queries(t0: int) -> list[tuple[int, int | None]]:
    """(timestamp asked, Kafka's answer: the offset of the first record stamped at or after it, None past the end),
    with queries before, on, between and after the records, both in single-record batches and inside a shared batch."""
    stamps = record_timestamps(t0)
    asked = [t0 - 5, t0, t0 + 15, t0 + 20, t0 + 65, stamps[-1], stamps[-1] + 1]
    return [(ts, next((offset for offset, stamp in enumerate(stamps) if stamp >= ts), None)) for ts in asked]
