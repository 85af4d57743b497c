"""Bad input on raw connections while a real producer keeps producing: every case is answered with the
protocol's error or a clean, prompt disconnect, is logged in one line, and the broker keeps serving."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from typing import Iterator

import pytest
from confluent_kafka import Producer
from minibroker.protocol.frames import decode_response, encode_request, request_header_version
from minibroker.protocol.records import build_batch

from minibroker.config.settings import BrokerConfig
from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    TIMEOUT_MS,
    TIMEOUT_S,
    RawConnection,
    confluent_create_topic,
    log_lines_about,
    raw_request_frame,
    wait_for_log_lines,
)

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
API_VERSIONS = 18
OFFSET_FOR_LEADER_EPOCH = 23
DESCRIBE_CONFIGS = 32
DESCRIBE_CLUSTER = 60
CORRUPT_MESSAGE = 2
UNSUPPORTED_VERSION = 35
# Fuzzed APIs: a garbled body that happens to parse cannot change anything but a scratch topic.
FUZZED_APIS = (PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER)
MUTATIONS = 8  # per API version and seed


class SteadyProducer:
    """A confluent-kafka producer sending a message every few milliseconds from a thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS})
        self.sent = 0
        self.offsets: list[int] = []
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="steady-producer", daemon=True)

    def report(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.offsets.append(msg.offset())

    def run(self) -> None:
        while not self.stopping.is_set():
            self.producer.produce(self.topic, value=str(self.sent).encode(), on_delivery=self.report)
            self.sent += 1
            self.producer.poll(0.005)

    def finish(self) -> None:
        self.stopping.set()
        self.thread.join(TIMEOUT_S)
        try:
            remaining = self.producer.flush(TIMEOUT_S)
        finally:
            self.producer.purge()
            self.producer.close()
        assert remaining == 0 and not self.errors, f"{remaining} undelivered, errors {self.errors[:5]}"
        assert self.sent > 0 and self.offsets == list(range(self.sent)), "the steady producer lost or reordered messages"


@pytest.fixture
def steady(bootstrap: str, topic_name: str) -> Iterator[SteadyProducer]:
    confluent_create_topic(bootstrap, topic_name, partitions=1)
    producer = SteadyProducer(bootstrap, topic_name)
    producer.thread.start()
    try:
        yield producer
    finally:
        producer.finish()


def api_versions_body(version: int) -> dict[str, str]:
    return {"client_software_name": "raw-test", "client_software_version": "1"} if version >= 3 else {}


def api_versions(bootstrap: str, version: int = 3) -> dict[int, tuple[int, int]]:
    """A fresh ApiVersions round trip: the advertised {api_key: (min, max)}."""
    with RawConnection(bootstrap) as conn:
        answer_frame = conn.request(API_VERSIONS, version, api_versions_body(version), 11)
        correlation_id, answer = decode_response(API_VERSIONS, version, answer_frame)
    assert (correlation_id, answer["error_code"]) == (11, 0)
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def assert_logged_once(broker: BrokerProcess, since: int, conn: RawConnection) -> None:
    lines = wait_for_log_lines(broker.log_text, since, conn.peer)
    assert len(lines) == 1, f"expected one log line about {conn.peer}, got {lines}"


def assert_still_serving(bootstrap: str) -> None:
    assert API_VERSIONS in api_versions(bootstrap)


@pytest.fixture
def log_mark(broker: BrokerProcess) -> int:
    return len(broker.log_text())


def test_random_bytes(broker: BrokerProcess, steady: SteadyProducer, log_mark: int) -> None:
    with RawConnection(broker.bootstrap) as conn:
        conn.send(random.Random(5).randbytes(1000))
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.closed_by_peer()
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


def test_truncated_frame_then_close(broker: BrokerProcess, steady: SteadyProducer, log_mark: int) -> None:
    frame = encode_request(API_VERSIONS, 3, 1, "raw-test", api_versions_body(3))
    with RawConnection(broker.bootstrap) as conn:
        conn.send(frame[: len(frame) // 2])
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.closed_by_peer()
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


@pytest.mark.parametrize(
    "size",
    [0x7FFFFFFF, BrokerConfig().socket_request_max_bytes + 1, -1, -(2**31)],
    ids=["int32-max", "just-over-limit", "minus-one", "int32-min"],
)
def test_bad_length_prefix(broker: BrokerProcess, steady: SteadyProducer, log_mark: int, size: int) -> None:
    with RawConnection(broker.bootstrap) as conn:
        conn.send(struct.pack(">i", size) + b"\x00" * 64)
        assert conn.closed_by_peer(), f"length prefix {size}: the broker must close the connection promptly"
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


def produce_body(topic: str, batch: bytes) -> dict:
    partitions = [{"index": 0, "records": batch}]
    return {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [{"name": topic, "partition_data": partitions}]}


def partition_answer(version: int, frame: bytes) -> dict:
    _, body = decode_response(PRODUCE, version, frame)
    [topic] = body["responses"]
    [partition] = topic["partition_responses"]
    return partition


@pytest.mark.parametrize("version", [3, 9], ids=["v3", "v9-flexible"])
def test_corrupt_batch_crc(broker: BrokerProcess, steady: SteadyProducer, log_mark: int, topic_name: str, version: int) -> None:
    target = f"{topic_name}-crc"
    confluent_create_topic(broker.bootstrap, target, partitions=1)
    batch = build_batch([(b"k", b"value one"), (None, b"value two", [("h", b"v")])])
    corrupt = bytearray(batch)
    corrupt[len(corrupt) - 3] ^= 0x55  # inside the records, after the CRC field: only the CRC check can see it
    with RawConnection(broker.bootstrap) as conn:
        answer = partition_answer(version, conn.request(PRODUCE, version, produce_body(target, bytes(corrupt)), 21))
        assert (answer["index"], answer["error_code"], answer["base_offset"]) == (0, CORRUPT_MESSAGE, -1)
        answer = partition_answer(version, conn.request(PRODUCE, version, produce_body(target, batch), 22))
        assert (answer["error_code"], answer["base_offset"]) == (0, 0), "the corrupt batch must not take offsets"
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


@pytest.mark.parametrize("api_key, version", [(999, 0), (METADATA, 99)], ids=["unknown-key", "metadata-v99"])
def test_unknown_api_or_version_disconnects(
    broker: BrokerProcess, steady: SteadyProducer, log_mark: int, api_key: int, version: int
) -> None:
    with RawConnection(broker.bootstrap) as conn:
        conn.send(raw_request_frame(api_key, version, 31))
        assert conn.closed_by_peer()
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


def test_api_versions_too_new_gets_v0_fallback(broker: BrokerProcess, steady: SteadyProducer, log_mark: int) -> None:
    advertised = api_versions(broker.bootstrap)
    body = b"\x09raw-test\x021\x00"  # v3+ body: compact strings and empty tagged fields
    with RawConnection(broker.bootstrap) as conn:
        conn.send(raw_request_frame(API_VERSIONS, 99, 41, body, header_version=2))
        correlation_id, answer = decode_response(API_VERSIONS, 0, conn.recv_frame())
        assert (correlation_id, answer["error_code"]) == (41, UNSUPPORTED_VERSION)
        ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
        assert ranges[API_VERSIONS] == advertised[API_VERSIONS]
        highest = ranges[API_VERSIONS][1]
        retry = conn.request(API_VERSIONS, highest, api_versions_body(highest), 42)
        correlation_id, retried = decode_response(API_VERSIONS, highest, retry)
        assert (correlation_id, retried["error_code"]) == (42, 0), "a retry at the advertised max works on the same connection"
    assert_logged_once(broker, log_mark, conn)
    assert_still_serving(broker.bootstrap)


def exchange_all(broker: BrokerProcess, frames: list[tuple[str, int, bytes]]) -> None:
    """Send each (label, correlation id, frame) on its own connection: each must be answered (same correlation id)
    or closed promptly, with at most one log line; the broker then still serves. The connections stay open
    until the log is checked, so that no later connection reuses a local port and gets its log lines."""
    since = len(broker.log_text())
    connections: list[tuple[str, RawConnection]] = []
    try:
        for label, correlation_id, frame in frames:
            conn = RawConnection(broker.bootstrap)
            connections.append((label, conn))
            conn.send(frame)
            try:
                answer = conn.recv_frame()
            except (EOFError, ConnectionResetError):
                answer = None
            except TimeoutError:
                pytest.fail(f"{label}: no answer and no disconnect for {frame.hex()}")
            if answer is not None:
                assert struct.unpack_from(">i", answer)[0] == correlation_id, f"{label}: wrong correlation id"
            else:
                assert conn.closed_by_peer(), f"{label}: neither answered nor closed"
        time.sleep(0.3)
        log = broker.log_text()[since:]
        for label, conn in connections:
            lines = log_lines_about(log, conn.peer)
            assert len(lines) <= 1, f"{label}: {lines}"
    finally:
        for _, conn in connections:
            conn.close()
    assert_still_serving(broker.bootstrap)


def fuzzed_versions(advertised: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """The lowest and highest advertised version of each fuzzed API."""
    return [(key, version) for key in FUZZED_APIS if key in advertised for version in sorted(set(advertised[key]))]


@pytest.mark.parametrize("seed", range(3))
def test_random_bodies(broker: BrokerProcess, steady: SteadyProducer, seed: int) -> None:
    """Valid headers, random bodies."""
    rng = random.Random(seed)
    frames = []
    for api_key, version in fuzzed_versions(api_versions(broker.bootstrap)):
        correlation_id = rng.randrange(2**31)
        body = rng.randbytes(rng.randrange(200))
        frame = raw_request_frame(api_key, version, correlation_id, body, request_header_version(api_key, version))
        frames.append((f"API {api_key} v{version}", correlation_id, frame))
    exchange_all(broker, frames)


def valid_bodies(topic: str) -> dict[int, dict]:
    """A well-formed request body for each fuzzed API, by field name (the codec keeps the fields of each version)."""
    partitions = [
        {"partition_index": 0, "partition": 0, "timestamp": -1, "leader_epoch": 0, "fetch_offset": 0, "partition_max_bytes": 65536}
    ]
    return {
        PRODUCE: produce_body(topic, build_batch([(b"k", b"fuzz")])),
        FETCH: {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "topics": [{"topic": topic, "partitions": partitions}]},
        LIST_OFFSETS: {"replica_id": -1, "topics": [{"name": topic, "partitions": partitions}]},
        METADATA: {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
        API_VERSIONS: api_versions_body(3),
        OFFSET_FOR_LEADER_EPOCH: {"topics": [{"topic": topic, "partitions": partitions}]},
        DESCRIBE_CONFIGS: {"resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}]},
        DESCRIBE_CLUSTER: {},
    }


def kept_body_bytes(api_key: int, flexible: bool) -> int:
    """Leading body bytes a mutation leaves alone, where a change is legitimate but unanswered for a long time:
    Fetch's ReplicaId, MaxWaitMs and MinBytes (a long poll), Produce's null TransactionalId and Acks (acks=0)."""
    if api_key == FETCH:
        return 12
    if api_key == PRODUCE:
        return (1 if flexible else 2) + 2
    return 0


def mutate(frame: bytes, kept: int, rng: random.Random) -> bytes:
    """Overwrite a few bytes or cut the frame short after its first ``kept`` bytes (the header, at least);
    the length prefix stays right."""
    payload = bytearray(frame[4:])
    if len(payload) > kept and rng.random() < 0.3:
        del payload[rng.randrange(kept, len(payload)) :]
    elif len(payload) > kept:
        for _ in range(rng.randint(1, 4)):
            payload[rng.randrange(kept, len(payload))] = rng.randrange(256)
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("seed", range(3))
def test_mutated_requests(broker: BrokerProcess, steady: SteadyProducer, topic_name: str, seed: int) -> None:
    """Well-formed requests with a few bytes changed or the end cut off, so parsing fails deep inside (or succeeds
    and a handler sees odd values)."""
    target = f"{topic_name}-fuzz"
    confluent_create_topic(broker.bootstrap, target, partitions=1)
    bodies = valid_bodies(target)
    rng = random.Random(seed)
    frames = []
    for api_key, version in fuzzed_versions(api_versions(broker.bootstrap)):
        header_version = request_header_version(api_key, version)
        header = raw_request_frame(api_key, version, 0, header_version=header_version, client_id="raw-test")
        kept = len(header) - 4 + kept_body_bytes(api_key, flexible=header_version >= 2)
        for _ in range(MUTATIONS):
            correlation_id = rng.randrange(2**31)
            frame = encode_request(api_key, version, correlation_id, "raw-test", bodies[api_key])
            frames.append((f"API {api_key} v{version}", correlation_id, mutate(frame, kept, rng)))
    exchange_all(broker, frames)
