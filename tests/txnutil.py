"""Helpers for the transaction and idempotence acceptance tests (tests/test_transactions*.py).

- One synchronous interface over the transactional producers of confluent-kafka, kafka-python and aiokafka
  (aiokafka runs on an event loop in a thread of its own), and the fenced error each client raises.
- Assign-only consumers of the three clients with an isolation level, returning (partition, offset, value).
- Reading a partition's segment files with the project's record-batch code, to find the control batches.
- Raw ListOffsets (latest, per isolation level), Produce, InitProducerId and OffsetFetch requests.
- A broker of a test's own with small internal topics, and a TCP proxy that swallows the answer to every Nth
  Produce request, forcing the client to retry the same batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Coroutine, Iterator, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AIOTopicPartition
from aiokafka.errors import ProducerFenced
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonTopicPartition
from kafka.errors import ProducerFencedError
from kafka.structs import OffsetAndMetadata
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import (
    BatchHeader,
    ControlRecordType,
    Record,
    RecordInput,
    build_batch,
    decode_batch,
    iter_batches,
    parse_control_record,
)

from tests.asyncutil import quiet_exception_handler
from tests.brokerproc import BrokerProcess
from tests.clientutil import Deadline, RawConnection, confluent_consumer

T = TypeVar("T")
log = logging.getLogger(__name__)

CLIENTS = ("confluent", "kafka-python", "aiokafka")
OP_TIMEOUT_S = 20.0
OP_TIMEOUT_MS = int(OP_TIMEOUT_S * 1000)
SETTLE_S = 0.4  # after the expected records arrived, how long a consumer keeps polling for unexpected ones
CLEANUP_INTERVAL_MS = 200

# One partition for each internal topic: creating 50 of them costs a fresh broker about half a second.
FAST_INTERNAL_TOPICS = ("transaction.state.log.num.partitions=1", "offsets.topic.num.partitions=1")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@contextlib.contextmanager
def running_broker(data_dir: Path, *settings: str, env: dict[str, str] | None = None) -> Iterator[BrokerProcess]:
    """A broker of the test's own with fast internal topics (and ``settings``), always stopped."""
    broker = BrokerProcess(data_dir, *FAST_INTERNAL_TOPICS, *settings, env=env)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


# ---- an asyncio loop in a thread, for aiokafka behind a synchronous interface ----


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(quiet_exception_handler)
        self.thread = threading.Thread(target=self.loop.run_forever, name="aiokafka-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = OP_TIMEOUT_S + 5) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Cancel what is left (and collect the outcomes, so no error stays unretrieved), stop, close."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(cancel_all(), 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


# ---- transactional producers ----


class TxnProducer:
    """One client's transactional (or only idempotent) producer behind one synchronous interface: send() queues a
    record, flush() waits until every queued record is acknowledged (raising on failure)."""

    client = ""

    def init(self) -> None: ...
    def begin(self) -> None: ...
    def send(self, topic: str, partition: int, value: bytes, key: bytes | None = None) -> None: ...
    def flush(self) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def send_offsets(self, topic: str, partition: int, offset: int, group_id: str, consumer: Any) -> None: ...
    def close(self) -> None: ...

    def send_many(self, topic: str, items: list[tuple[int, bytes]]) -> None:
        """send() for each (partition, value), in order."""
        for partition, value in items:
            self.send(topic, partition, value)


def is_fenced(client: str, exc: BaseException) -> bool:
    """Whether ``exc`` is the client's 'producer fenced' error."""
    if client == "confluent":
        if not isinstance(exc, KafkaException):
            return False
        error = exc.args[0]  # librdkafka turns PRODUCER_FENCED and a transactional INVALID_PRODUCER_EPOCH into _FENCED
        return error.fatal() and error.code() == KafkaError._FENCED
    if client == "kafka-python":
        return isinstance(exc, ProducerFencedError)
    return isinstance(exc, ProducerFenced)


class ConfluentTxnProducer(TxnProducer):
    client = "confluent"

    def __init__(self, bootstrap: str, transactional_id: str | None, **config: Any) -> None:
        settings = {"bootstrap.servers": bootstrap, "linger.ms": 2, **config}
        if transactional_id is not None:
            settings["transactional.id"] = transactional_id
        self.producer = Producer(settings)
        self.errors: list[str] = []

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.errors.append(f"{msg.topic()}-{msg.partition()}: {err.str()}")

    def init(self) -> None:
        self.producer.init_transactions(OP_TIMEOUT_S)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None = None) -> None:
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, partition=partition, on_delivery=self._report)
                break
            except BufferError:
                self.producer.poll(0.05)
        self.producer.poll(0)

    def flush(self) -> None:
        assert self.producer.flush(OP_TIMEOUT_S) == 0, "records still unacknowledged"
        assert not self.errors, self.errors[:5]

    def commit(self) -> None:
        self.producer.commit_transaction(OP_TIMEOUT_S)

    def abort(self) -> None:
        self.producer.abort_transaction(OP_TIMEOUT_S)

    def send_offsets(self, topic: str, partition: int, offset: int, group_id: str, consumer: Any) -> None:
        self.producer.send_offsets_to_transaction(
            [ConfluentTopicPartition(topic, partition, offset)], consumer.consumer_group_metadata(), OP_TIMEOUT_S
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.producer.purge()
        try:
            self.producer.close()
        except KafkaException:
            # close() aborts an open transaction first and raises a fatal error (fenced) from that; the second
            # call finds no transaction left and destroys the handle.
            self.producer.close()


class KafkaPythonTxnProducer(TxnProducer):
    client = "kafka-python"

    def __init__(self, bootstrap: str, transactional_id: str | None, **config: Any) -> None:
        settings = {"linger_ms": 2, "request_timeout_ms": OP_TIMEOUT_MS, "max_block_ms": OP_TIMEOUT_MS, **config}
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, **settings)
        self.futures: list[Any] = []

    def init(self) -> None:
        self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None = None) -> None:
        self.futures.append(self.producer.send(topic, value=value, key=key, partition=partition))

    def flush(self) -> None:
        self.producer.flush(OP_TIMEOUT_S)
        futures, self.futures = self.futures, []
        for future in futures:
            future.get(OP_TIMEOUT_S)

    def commit(self) -> None:
        self.producer.commit_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction()

    def send_offsets(self, topic: str, partition: int, offset: int, group_id: str, consumer: Any) -> None:
        self.producer.send_offsets_to_transaction(
            {KafkaPythonTopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)}, group_id
        )

    def close(self) -> None:
        self.producer.close(timeout=5)


class AIOKafkaTxnProducer(TxnProducer):
    client = "aiokafka"

    def __init__(self, bootstrap: str, transactional_id: str | None, **config: Any) -> None:
        self.loop = LoopThread()
        self.futures: list[asyncio.Future] = []
        self.producer: AIOKafkaProducer | None = None

        async def create() -> AIOKafkaProducer:
            settings = {"linger_ms": 2, "request_timeout_ms": OP_TIMEOUT_MS, **config}
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, **settings)
            try:
                await producer.start()
            except BaseException:
                await producer.stop()
                raise
            return producer

        try:
            self.producer = self.loop.run(create())
        except BaseException:
            self.loop.close()
            raise

    def init(self) -> None:
        pass  # AIOKafkaProducer.start() already did InitProducerId

    def begin(self) -> None:
        self.loop.run(self.producer.begin_transaction())

    def send(self, topic: str, partition: int, value: bytes, key: bytes | None = None) -> None:
        self.futures.append(self.loop.run(self.producer.send(topic, value, key=key, partition=partition)))

    def send_many(self, topic: str, items: list[tuple[int, bytes]]) -> None:
        async def send_all() -> None:
            for partition, value in items:
                self.futures.append(await self.producer.send(topic, value, partition=partition))

        self.loop.run(send_all())

    def flush(self) -> None:
        futures, self.futures = self.futures, []

        async def wait() -> None:
            await asyncio.wait_for(asyncio.gather(*futures), OP_TIMEOUT_S)

        self.loop.run(wait())

    def commit(self) -> None:
        self.loop.run(asyncio.wait_for(self.producer.commit_transaction(), OP_TIMEOUT_S))

    def abort(self) -> None:
        self.loop.run(asyncio.wait_for(self.producer.abort_transaction(), OP_TIMEOUT_S))

    def send_offsets(self, topic: str, partition: int, offset: int, group_id: str, consumer: Any) -> None:
        self.loop.run(asyncio.wait_for(
            self.producer.send_offsets_to_transaction({AIOTopicPartition(topic, partition): offset}, group_id), OP_TIMEOUT_S
        ))

    def close(self) -> None:
        futures, self.futures = self.futures, []

        async def stop() -> None:
            try:
                if self.producer is not None:
                    await asyncio.wait_for(self.producer.stop(), 10)
            finally:
                await asyncio.gather(*futures, return_exceptions=True)  # outcomes retrieved: no late error reports

        try:
            self.loop.run(stop())
        finally:
            self.loop.close()


# Client-specific settings for the same behaviour.
TXN_TIMEOUT_SETTING = {
    "confluent": "transaction.timeout.ms", "kafka-python": "transaction_timeout_ms", "aiokafka": "transaction_timeout_ms",
}
IDEMPOTENCE_SETTING = {"confluent": "enable.idempotence", "kafka-python": "enable_idempotence", "aiokafka": "enable_idempotence"}
PRODUCERS: dict[str, Callable[..., TxnProducer]] = {
    "confluent": ConfluentTxnProducer, "kafka-python": KafkaPythonTxnProducer, "aiokafka": AIOKafkaTxnProducer,
}


def make_producer(client: str, bootstrap: str, transactional_id: str | None, **config: Any) -> TxnProducer:
    return PRODUCERS[client](bootstrap, transactional_id, **config)


@contextlib.contextmanager
def producer(
    client: str, bootstrap: str, transactional_id: str | None, *, init: bool = True, **config: Any
) -> Iterator[TxnProducer]:
    """A started producer (transactions initialised unless ``init`` is false), closed on exit."""
    made = make_producer(client, bootstrap, transactional_id, **config)
    try:
        if init and transactional_id is not None:
            made.init()
        yield made
    finally:
        made.close()


def txn_timeout(client: str, ms: int) -> dict[str, Any]:
    return {TXN_TIMEOUT_SETTING[client]: ms}


# ---- consumers ----


@dataclass(frozen=True, slots=True)
class Got:
    partition: int
    offset: int
    value: bytes | None


class Settling:
    """When a consumer stops reading: once ``expected`` records came and ``settle`` seconds more passed (to catch a
    record too many), or after ``timeout``."""

    def __init__(self, expected: int, settle: float, timeout: float) -> None:
        self.expected = expected
        self.settle = settle
        self.deadline = Deadline(timeout)
        self.settle_end: float | None = None

    def goes_on(self, received: int) -> bool:
        if not self.deadline.left():
            return False
        now = time.monotonic()
        if self.settle_end is None and received >= self.expected:
            self.settle_end = now + self.settle
        return self.settle_end is None or now < self.settle_end


def consume(
    client: str, bootstrap: str, topic: str, partitions: int, expected: int, isolation: str, settle: float = SETTLE_S,
    timeout: float = OP_TIMEOUT_S, **config: Any,
) -> list[Got]:
    """Everything ``client``'s consumer (given ``config``) returns for ``topic`` from the beginning: it reads until
    ``expected`` records came, then ``settle`` seconds more to catch any record too many."""
    reader = {"confluent": _consume_confluent, "kafka-python": _consume_kafka_python, "aiokafka": _consume_aiokafka}[client]
    return reader(bootstrap, topic, partitions, expected, isolation, settle, timeout, config)


def _consume_confluent(
    bootstrap: str, topic: str, partitions: int, expected: int, isolation: str, settle: float, timeout: float, config: dict
) -> list[Got]:
    consumer = confluent_consumer(bootstrap, **{"isolation.level": isolation, **config})
    got: list[Got] = []
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        reading = Settling(expected, settle, timeout)
        while reading.goes_on(len(got)):
            for msg in consumer.consume(num_messages=1000, timeout=0.1):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                got.append(Got(msg.partition(), msg.offset(), msg.value()))
    finally:
        consumer.close()
    return got


def _consume_kafka_python(
    bootstrap: str, topic: str, partitions: int, expected: int, isolation: str, settle: float, timeout: float, config: dict
) -> list[Got]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        isolation_level=isolation, request_timeout_ms=OP_TIMEOUT_MS, **config,
    )
    got: list[Got] = []
    try:
        tps = [KafkaPythonTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        reading = Settling(expected, settle, timeout)
        while reading.goes_on(len(got)):
            for tp, records in consumer.poll(timeout_ms=100).items():
                got += [Got(tp.partition, r.offset, r.value) for r in records]
    finally:
        consumer.close()
    return got


def _consume_aiokafka(
    bootstrap: str, topic: str, partitions: int, expected: int, isolation: str, settle: float, timeout: float, config: dict
) -> list[Got]:
    async def run() -> list[Got]:
        asyncio.get_running_loop().set_exception_handler(quiet_exception_handler)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
            isolation_level=isolation, request_timeout_ms=OP_TIMEOUT_MS, **config,
        )
        got: list[Got] = []
        try:
            await consumer.start()
            tps = [AIOTopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            reading = Settling(expected, settle, timeout)
            while reading.goes_on(len(got)):
                for tp, records in (await consumer.getmany(timeout_ms=100)).items():
                    got += [Got(tp.partition, r.offset, r.value) for r in records]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def values_by_partition(got: list[Got]) -> dict[int, list[bytes | None]]:
    result: dict[int, list[bytes | None]] = {}
    for record in got:
        result.setdefault(record.partition, []).append(record.value)
    return result


# ---- segment files ----


@dataclass(frozen=True, slots=True)
class StoredBatch:
    header: BatchHeader
    records: list[Record]
    file: str

    @property
    def control_type(self) -> int | None:
        """COMMIT/ABORT (ControlRecordType) for a control batch, None for data."""
        if not self.header.is_control:
            return None
        [record] = self.records
        return parse_control_record(record)[0]

    @property
    def coordinator_epoch(self) -> int:
        [record] = self.records
        return parse_control_record(record)[1]


def read_segments(data_dir: Path, topic: str, partition: int) -> list[StoredBatch]:
    """Every batch of ``<data>/<topic>-<partition>/*.log`` in offset order, decoded with protocol.records."""
    batches = []
    for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        for header in iter_batches(data):
            batches.append(StoredBatch(header, decode_batch(data, header), path.name))
    return batches


def data_values(batches: list[StoredBatch]) -> list[bytes | None]:
    return [record.value for batch in batches if not batch.header.is_control for record in batch.records]


def check_marker(batch: StoredBatch, *, commit: bool, producer_id: int, producer_epoch: int) -> None:
    """A control batch as Kafka writes it (MemoryRecords.withEndTransactionMarker)."""
    header = batch.header
    where = f"batch at offset {header.base_offset}"
    assert header.is_control and header.is_transactional, f"{where}: attributes {header.attributes:#x}"
    assert header.records_count == 1 and header.last_offset_delta == 0, f"{where}: {header.records_count} records"
    assert (header.producer_id, header.producer_epoch) == (producer_id, producer_epoch), (
        f"{where}: marker of producer {header.producer_id}/{header.producer_epoch}, expected {producer_id}/{producer_epoch}"
    )
    assert header.base_sequence == -1, f"{where}: baseSequence {header.base_sequence}"
    expected = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    assert batch.control_type == expected, f"{where}: control type {batch.control_type}, expected {expected!r}"
    assert batch.coordinator_epoch >= 0, f"{where}: coordinator epoch {batch.coordinator_epoch}"


def transactions_in(batches: list[StoredBatch], producer_id: int) -> list[tuple[list[bytes | None], StoredBatch | None]]:
    """The log of ``producer_id`` cut at its markers: (values of its data records since the previous marker, the
    marker that ends them; None for a trailing open transaction). Checks every data batch is transactional."""
    result: list[tuple[list[bytes | None], StoredBatch | None]] = []
    pending: list[bytes | None] = []
    for batch in batches:
        if batch.header.producer_id != producer_id:
            continue
        if batch.header.is_control:
            result.append((pending, batch))
            pending = []
        else:
            assert batch.header.is_transactional, f"data batch at {batch.header.base_offset} is not transactional"
            pending += [record.value for record in batch.records]
    if pending:
        result.append((pending, None))
    return result


def producer_of(batches: list[StoredBatch], value: bytes) -> tuple[int, int]:
    """(producer id, epoch) of the data batch holding ``value``."""
    for batch in batches:
        if not batch.header.is_control and any(record.value == value for record in batch.records):
            return batch.header.producer_id, batch.header.producer_epoch
    raise AssertionError(f"no record {value!r} in the log")


# ---- raw requests: ListOffsets, Produce, InitProducerId, OffsetFetch ----

LIST_OFFSETS = 2
LIST_OFFSETS_VERSION = 5
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


def latest_offsets(bootstrap: str, topic: str, partitions: int, isolation_level: int) -> dict[int, int]:
    """ListOffsets(LATEST): the log end offset, or with READ_COMMITTED the last stable offset, per partition."""
    body = {
        "replica_id": -1, "isolation_level": isolation_level,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": p, "current_leader_epoch": -1, "timestamp": LATEST} for p in range(partitions)
        ]}],
    }
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(LIST_OFFSETS, LIST_OFFSETS_VERSION, conn.request(LIST_OFFSETS, LIST_OFFSETS_VERSION, body))
    result = {}
    for item in answer["topics"][0]["partitions"]:
        assert item["error_code"] == 0, f"ListOffsets {topic}-{item['partition_index']}: error {item['error_code']}"
        result[item["partition_index"]] = item["offset"]
    return result


PRODUCE = 0
PRODUCE_VERSION = 8
INIT_PRODUCER_ID = 22
INIT_PRODUCER_ID_VERSION = 2


def raw_produce(
    bootstrap: str, topic: str, partition: int, transactional_id: str | None, producer_id: int, producer_epoch: int,
    base_sequence: int, values: list[bytes],
) -> tuple[int, int]:
    """Produce one batch of ``values`` as the given producer id/epoch/sequence (transactional when
    ``transactional_id`` is given): the partition's (error code, base offset)."""
    batch = build_batch([RecordInput(None, value) for value in values], producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=base_sequence,
                        is_transactional=transactional_id is not None)
    body = {"transactional_id": transactional_id, "acks": -1, "timeout_ms": OP_TIMEOUT_MS,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(PRODUCE, PRODUCE_VERSION, conn.request(PRODUCE, PRODUCE_VERSION, body))
    [item] = answer["responses"][0]["partition_responses"]
    return item["error_code"], item["base_offset"]


def raw_init_producer_id(bootstrap: str) -> tuple[int, int]:
    """An idempotent (non-transactional) producer id and epoch."""
    body = {"transactional_id": None, "transaction_timeout_ms": -1}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(
            INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, conn.request(INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, body)
        )
    assert answer["error_code"] == 0, f"InitProducerId: error {answer['error_code']}"
    return answer["producer_id"], answer["producer_epoch"]


OFFSET_FETCH = 9
OFFSET_FETCH_VERSION = 7  # the first with require_stable (KIP-447)


def raw_offset_fetch(bootstrap: str, group_id: str, topic: str, partition: int, require_stable: bool) -> tuple[int, int]:
    """OffsetFetch of one partition: (error code, committed offset)."""
    body = {"group_id": group_id, "topics": [{"name": topic, "partition_indexes": [partition]}], "require_stable": require_stable}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(OFFSET_FETCH, OFFSET_FETCH_VERSION, conn.request(OFFSET_FETCH, OFFSET_FETCH_VERSION, body))
    assert answer["error_code"] == 0, f"OffsetFetch {group_id}: error {answer['error_code']}"
    [item] = answer["topics"][0]["partitions"]
    return item["error_code"], item["committed_offset"]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = Deadline(timeout)
    while deadline.left():
        if predicate():
            return
        time.sleep(interval)
    assert predicate(), f"{what}: not after {timeout}s"


# ---- a proxy that makes the client retry Produce requests ----


class ProduceDroppingProxy:
    """A TCP proxy on 127.0.0.1 (port 0) to one broker. Every ``every``-th Produce request (api key 0) is
    forwarded, but when the broker's answer to it comes back the proxy closes both connections instead of
    passing it on: the broker appended the batch, the client never heard so, and retries it. Threads with
    blocking sockets; the accept loop ends after ``lifetime`` seconds and ``close()`` ends everything."""

    def __init__(self, every: int, lifetime: float = 60.0) -> None:
        self.every = every
        self.lifetime = lifetime
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self.produce_requests = 0
        self.dropped = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ProduceDroppingProxy:
        self._spawn(self._accept_loop)
        return self

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        end = time.monotonic() + self.lifetime
        try:
            while not self._closing.is_set() and time.monotonic() < end:
                try:
                    client, _ = self.listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                client.settimeout(None)
                try:
                    assert self.target is not None, "proxy target not set"
                    upstream = socket.create_connection(self.target, timeout=5)
                    upstream.settimeout(None)
                except (OSError, AssertionError):
                    client.close()
                    continue
                for sock in (client, upstream):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self._lock:
                    self._sockets |= {client, upstream}
                    self.connections += 1
                doomed: set[int] = set()
                self._spawn(self._client_to_broker, client, upstream, doomed)
                self._spawn(self._broker_to_client, upstream, client, doomed)
        finally:
            self.close_sockets()

    @staticmethod
    def _frames(sock: socket.socket) -> Iterator[bytes]:
        """Whole size-prefixed frames (prefix included) until the socket closes."""
        buf = bytearray()
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4:
                (size,) = struct.unpack_from(">i", buf)
                if len(buf) < 4 + size:
                    break
                yield bytes(buf[: 4 + size])
                del buf[: 4 + size]

    def _client_to_broker(self, client: socket.socket, upstream: socket.socket, doomed: set[int]) -> None:
        try:
            for frame in self._frames(client):
                api_key, _version, correlation_id = struct.unpack_from(">hhi", frame, 4)
                if api_key == 0:
                    with self._lock:
                        self.produce_requests += 1
                        if self.produce_requests % self.every == 0:
                            doomed.add(correlation_id)
                upstream.sendall(frame)
        except OSError:
            pass
        finally:
            self._close_pair(client, upstream)

    def _broker_to_client(self, upstream: socket.socket, client: socket.socket, doomed: set[int]) -> None:
        try:
            for frame in self._frames(upstream):
                (correlation_id,) = struct.unpack_from(">i", frame, 4)
                if correlation_id in doomed:
                    with self._lock:
                        self.dropped += 1
                    return  # the broker has done the work; the client never learns of it
                client.sendall(frame)
        except OSError:
            pass
        finally:
            self._close_pair(client, upstream)

    def _close_pair(self, *socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
            with self._lock:
                self._sockets.discard(sock)

    def close_sockets(self) -> None:
        with self._lock:
            socks = list(self._sockets)
        self._close_pair(*socks)

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        self.close_sockets()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(5)
