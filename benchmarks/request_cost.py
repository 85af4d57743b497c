"""The cost of one request, per API: the round trip a raw socket client sees and the broker's CPU time for it, and a
profile of where a request's time goes.

A broker process (``python -m minibroker``, as users run it) is sent ``--requests`` requests of each API, one at a
time on one connection, by a raw client built on the project's codecs (no client library in the way): ApiVersions,
Metadata, Produce of one small batch, Fetch that finds data, FindCoordinator, OffsetCommit, Heartbeat of a joined
member, AddPartitionsToTxn of a partition already in the transaction, and a whole transaction step
(AddPartitionsToTxn then EndTxn, with EndTxn's round trip on its own). The broker's CPU per request is the process's
run time over the run divided by the requests (the scheduler's nanosecond figure of each thread, where the kernel
keeps it; else 10 ms ticks of /proc/PID/stat, which thousands of requests keep within a few percent). Round trips
are medians and 99th percentiles. Each step is then sent again ``IN_FLIGHT`` (50) requests at a time: the broker's CPU
per request when requests arrive back to back is the work of the request itself, without the wake-up from epoll and
the cold caches that one request at a time brings. A whole transaction as a producer sends it (AddPartitionsToTxn,
Produce of 10 records, EndTxn) is timed both ways too. Last, the floor of one exchange on this machine: an asyncio
echo server on this interpreter and a C epoll echo server (``echo_floor.c``, built with the C compiler if there is
one), timed the same way. ``--placement`` puts client and server on one CPU or on two (default: where the scheduler
likes): on a small VM a wake-up across CPUs costs more than most requests' work.

``--instructions`` counts instead the machine instructions the broker process executes per request, under valgrind's
callgrind: counters zeroed before and dumped after each third of a step's requests, the least third kept, so the
broker's periodic work (checkpoints, the flush check) does not count. A step with a preparation before every request
is counted with it: EndTxn with the AddPartitionsToTxn that opens its transaction, a transaction's whole coordinator
work; and a transaction of 10 records from a confluent-kafka transactional producer, as ``compare.py`` commits
them. Unlike times, the count is the same on a busy machine as on a quiet one, to a fraction of a percent, so one run
before a change and one after tell what it saved. The broker runs about 50 times slower under valgrind: a few hundred
requests of each kind are enough.

``--profile`` then runs the same requests against an in-process broker with cProfile (measuring the thread's CPU time,
so waiting in epoll counts for nothing) on the broker's event loop thread and sorts the time of every function into a
stage: frame read, header parse, body decode, handler, encode,
write, and the event loop itself (scheduling, selectors). cProfile slows every call alike, so the shares are what
matters, not the absolute figures. Run from the repository root:
``python benchmarks/request_cost.py [--requests N] [--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import inspect
import os
import pstats
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from minibroker.protocol.frames import decode_response, encode_request  # noqa: E402
from minibroker.protocol.primitives import Writer  # noqa: E402
from minibroker.protocol.records import RecordInput, build_batch  # noqa: E402

from benchmarks.common import (  # noqa: E402  (needs the repository root on the path)
    client_config,
    cpu_seconds,
    free_port,
    percentile,
    wait_for_api_versions,
)

TOPIC, GROUP, TRANSACTIONAL_ID = "bench", "bench-group", "bench-txn"
SHARE_TOPIC, SHARE_GROUP = "bench-share", "bench-share-group"
SHARE_BATCH = 10  # records per log batch of the share topic, and per ShareFetch (its MaxRecords)
RAW_TRANSACTIONAL_ID = "bench-txn-raw"  # the raw client's whole transactions (table)
TRANSACTION_TIMEOUT_S = 120.0  # under valgrind a commit takes tens of milliseconds
BROKER_SETTINGS = ("group.initial.rebalance.delay.ms=0", "num.partitions=1")
ZERO_UUID = bytes(16)
IN_FLIGHT = 50  # requests sent back to back when the work of a request is measured without its wake-up


class Client:
    """One connection; ``call`` sends a request and returns the decoded answer body."""

    def __init__(self, address: str) -> None:
        self.address = address
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation_id += 1
        return decode_response(api_key, version, self.exchange(
            encode_request(api_key, version, self.correlation_id, "bench", body)))[1]

    def exchange(self, frame: bytes) -> bytes:
        """Send a whole request frame and read the answer frame (without its size): all a raw client does."""
        self.sock.sendall(frame)
        return self.answer()

    def answer(self) -> bytes:
        """The next answer frame, without its size."""
        (size,) = struct.unpack(">i", self._exactly(4))
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


@dataclass
class Step:
    """One kind of request: what to send, and what to send before each one that is not timed (``before``)."""

    name: str
    api_key: int
    version: int
    body: Callable[[], dict[str, Any]]
    before: Callable[[], None] | None = None
    before_each: bool = True  # the preparation is needed before every request, not only the first
    with_before: str = ""  # the step's name when counted together with its preparation (--instructions)
    per_request: bool = False  # the body changes with every request (a share session's epoch): encoded before each

    def exchange(self) -> Exchange:
        """The frame of each request: encoded once, or (``per_request``) anew before each, untimed either way."""
        if self.per_request:
            return lambda: (encode_request(self.api_key, self.version, 1, "bench", self.body()),)
        frame = encode_request(self.api_key, self.version, 1, "bench", self.body())
        return lambda: (frame,)


def produce_body() -> dict[str, Any]:
    batch = build_batch([RecordInput(None, bytes(100))])
    return {"transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}


def prepare(client: Client, requests: int) -> list[Step]:
    """Make the topics, a group member, a transactional producer and a share session; the steps that use them (the
    share steps' records for ``requests`` requests of each)."""
    created = client.call(19, 4, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                                              "assignments": [], "configs": []}], "timeout_ms": 30_000,
                                  "validate_only": False})
    assert created["topics"][0]["error_code"] in (0, 36), created
    for _ in range(10):
        client.call(0, 9, produce_body())
    member_id, generation = join_group(client)
    txn = client.call(22, 4, {"transactional_id": TRANSACTIONAL_ID, "transaction_timeout_ms": 60_000,
                              "producer_id": -1, "producer_epoch": -1})
    assert txn["error_code"] == 0, txn
    producer = {"transactional_id": TRANSACTIONAL_ID, "producer_id": txn["producer_id"],
                "producer_epoch": txn["producer_epoch"]}
    add_partitions = {"v3_and_below_transactional_id": TRANSACTIONAL_ID, "v3_and_below_producer_id": txn["producer_id"],
                      "v3_and_below_producer_epoch": txn["producer_epoch"],
                      "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]}

    def add() -> None:
        answer = client.call(24, 3, add_partitions)
        assert answer["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0

    return [
        Step("ApiVersions v3", 18, 3, lambda: {"client_software_name": "bench", "client_software_version": "1"}),
        Step("Metadata v12 (one topic)", 3, 12, lambda: {
            "topics": [{"topic_id": ZERO_UUID, "name": TOPIC}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}),
        Step("Produce v9 (one 100-byte record, acks=1)", 0, 9, produce_body),
        Step("Fetch v12 (finds data)", 1, 12, lambda: {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                        "fetch_offset": 0, "last_fetched_epoch": -1,
                                                        "log_start_offset": -1, "partition_max_bytes": 4096}]}]}),
        Step("FindCoordinator v4", 10, 4, lambda: {"key_type": 0, "coordinator_keys": [GROUP]}),
        Step("OffsetCommit v8", 8, 8, lambda: {
            "group_id": GROUP, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [{
                "partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                "committed_metadata": ""}]}]}),
        Step("Heartbeat v4", 12, 4, lambda: {"group_id": GROUP, "generation_id": generation, "member_id": member_id,
                                             "group_instance_id": None}),
        Step("AddPartitionsToTxn v3 (already added)", 24, 3, lambda: add_partitions, before=add, before_each=False),
        Step("EndTxn v3 (commit, after AddPartitionsToTxn)", 26, 3,
             lambda: {**producer, "committed": True}, before=add,
             with_before="AddPartitionsToTxn v3 + EndTxn v3 (commit)"),
        *share_steps(client, requests),
    ]


class ShareMember:
    """A share consumer's requests (KIP-932) as the raw client sends them: one share session, its epoch one higher
    at each request. The share topic holds log batches of SHARE_BATCH records from offset 0, so each ShareFetch
    acquires the next one; the timed answers are not read, so what each acquires is predicted, and acknowledged
    (accepted) by the next request, as librdkafka's implicit acknowledgement does."""

    def __init__(self, topic_id: bytes) -> None:
        self.topic_id = topic_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.acquired = 0  # offsets below it were acquired
        self.acknowledged = 0  # offsets below it were acknowledged

    def fetch(self, max_records: int = SHARE_BATCH) -> dict[str, Any]:
        """A ShareFetch v1 acquiring the next batch and accepting what the previous request acquired."""
        body = {"group_id": SHARE_GROUP, "member_id": self.member_id, "share_session_epoch": self._next_epoch(),
                "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records,
                "batch_size": SHARE_BATCH, "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": [{"topic_id": self.topic_id, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": self._accept()}]}],
                "forgotten_topics_data": []}
        self.acquired += max_records
        return body

    def acknowledge(self) -> dict[str, Any]:
        """A ShareAcknowledge v1 accepting what the previous request acquired."""
        return {"group_id": SHARE_GROUP, "member_id": self.member_id, "share_session_epoch": self._next_epoch(),
                "is_renew_ack": False, "topics": [{"topic_id": self.topic_id, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": self._accept()}]}]}

    def acquire(self, client: Client) -> None:
        """A ShareFetch, answered and checked: it acquired the batch predicted (so every prediction before held)."""
        first = self.acquired
        answer = client.call(78, 1, self.fetch())
        assert not any(error_codes(answer)), answer
        ranges = [(r["first_offset"], r["last_offset"]) for t in answer["responses"] for p in t["partitions"]
                  for r in p["acquired_records"]]
        assert ranges == [(first, first + SHARE_BATCH - 1)], (ranges, first)

    def _accept(self) -> list[dict[str, Any]]:
        if self.acknowledged == self.acquired:
            return []
        batches = [{"first_offset": self.acknowledged, "last_offset": self.acquired - 1, "acknowledge_types": [1]}]
        self.acknowledged = self.acquired
        return batches

    def _next_epoch(self) -> int:
        self.epoch += 1
        return self.epoch - 1


def share_steps(client: Client, requests: int) -> list[Step]:
    """A share session on its own topic (made empty, opened, then filled, so the share partition starts at 0) with
    records for every ShareFetch of the run: each step's requests one at a time and back to back, and as many
    ShareFetches before the ShareAcknowledges."""
    created = client.call(19, 7, {"topics": [{"name": SHARE_TOPIC, "num_partitions": 1, "replication_factor": 1,
                                              "assignments": [], "configs": []}], "timeout_ms": 30_000,
                                  "validate_only": False})
    assert created["topics"][0]["error_code"] == 0, created
    member = ShareMember(created["topics"][0]["topic_id"])
    opened = client.call(78, 1, member.fetch())  # the share partition starts at the end: 0
    assert not any(error_codes(opened)) and not opened["responses"][0]["partitions"][0]["acquired_records"], opened
    member.acquired = 0
    produce = encode_request(0, 9, 1, "bench", {"transactional_id": None, "acks": 1, "timeout_ms": 30_000, "topic_data": [
        {"name": SHARE_TOPIC, "partition_data": [{"index": 0, "records": build_batch(
            [RecordInput(None, bytes(100))] * SHARE_BATCH)}]}]})
    for _ in range(3 * requests + 10):  # more log batches than the ShareFetches of a run (one each)
        assert not any(error_codes(decode_response(0, 9, client.exchange(produce))[1]))
    return [
        Step(f"ShareFetch v1 ({SHARE_BATCH} records, accepting {SHARE_BATCH})", 78, 1, member.fetch, per_request=True),
        Step(f"ShareAcknowledge v1 (accepting {SHARE_BATCH})", 79, 1, member.acknowledge, per_request=True,
             before=lambda: member.acquire(client), with_before=f"ShareFetch v1 + ShareAcknowledge v1 ({SHARE_BATCH})"),
    ]


def join_group(client: Client) -> tuple[str, int]:
    protocols = [{"name": "range", "metadata": b""}]
    body = {"group_id": GROUP, "session_timeout_ms": 45_000, "rebalance_timeout_ms": 60_000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer", "protocols": protocols, "reason": None}
    for _ in range(100):  # the first FindCoordinator makes __consumer_offsets; its partition may still load
        found = client.call(10, 4, {"key_type": 0, "coordinator_keys": [GROUP]})["coordinators"][0]
        joined = client.call(11, 7, body) if found["error_code"] == 0 else {"error_code": found["error_code"]}
        if joined["error_code"] not in (14, 15, 16):  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
            break
        time.sleep(0.05)
    if joined["error_code"] == 79:  # MEMBER_ID_REQUIRED: join again with the id given
        joined = client.call(11, 7, {**body, "member_id": joined["member_id"]})
    assert joined["error_code"] == 0, joined
    member_id, generation = joined["member_id"], joined["generation_id"]
    synced = client.call(14, 5, {"group_id": GROUP, "generation_id": generation, "member_id": member_id,
                                 "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                                 "assignments": [{"member_id": member_id, "assignment": b""}]})
    assert synced["error_code"] == 0, synced
    return member_id, generation


def measure(client: Client, step: Step, requests: int, broker_pid: int | None) -> tuple[float, float, float]:
    """(round trip p50 us, p99 us, broker CPU us per request; NaN without a pid)."""
    exchange = step.exchange()  # frames made before the clock starts: only the broker works
    if step.before is not None:
        step.before()
    error_free(step, client.exchange(exchange()[0]))
    return round_trips(client, exchange, requests, broker_pid, step.before if step.before_each else None)


Exchange = Callable[[], Sequence[bytes]]  # the request frames of one exchange, sent one after the other


def round_trips(
    client: Client, exchange: Exchange, count: int, server_pid: int | None, before: Callable[[], None] | None = None,
) -> tuple[float, float, float]:
    """``count`` exchanges, each request sent when the previous one is answered: (round trip p50 us and p99 us of an
    exchange, the server's CPU us per exchange, without what ``before``, run untimed before each, costs it; NaN
    without a pid). Frames are made before each exchange's clock starts."""
    times: list[float] = []
    cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
    untimed_cpu = 0.0
    for _ in range(count):
        if before is not None:
            mark = cpu_seconds(server_pid) if server_pid else 0.0
            before()
            untimed_cpu += (cpu_seconds(server_pid) - mark) if server_pid else 0.0
        frames = exchange()
        started = time.perf_counter()
        for frame in frames:
            client.exchange(frame)
        times.append((time.perf_counter() - started) * 1e6)
    cpu = ((cpu_seconds(server_pid) - cpu_before - untimed_cpu) / count * 1e6) if server_pid else float("nan")
    times.sort()
    return percentile(times, 0.5), percentile(times, 0.99), cpu


def pipelined_cpu(client: Client, exchange: Exchange, count: int, server_pid: int) -> float:
    """The server's CPU us per exchange when ``IN_FLIGHT`` exchanges' requests arrive back to back: the work itself,
    without the wake-up from epoll, and the cold caches, that one request at a time brings."""
    rounds = max(count // IN_FLIGHT, 1)
    cpu_seconds_used = 0.0
    for _ in range(rounds):
        frames = [frame for _ in range(IN_FLIGHT) for frame in exchange()]
        cpu_before = cpu_seconds(server_pid)
        client.sock.sendall(b"".join(frames))
        for _ in frames:
            client.answer()
        cpu_seconds_used += cpu_seconds(server_pid) - cpu_before
    return cpu_seconds_used / (rounds * IN_FLIGHT) * 1e6


def error_free(step: Step, answer: bytes) -> None:
    """The step's answer carries no error code: the figures are of requests served, not refused."""
    _, body = decode_response(step.api_key, step.version, answer)
    codes = list(error_codes(body))
    assert not any(codes), f"{step.name}: error codes {codes}"


def error_codes(value: Any) -> Any:
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("error_code") and isinstance(item, int):
                yield item
            else:
                yield from error_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from error_codes(item)


def instructions(requests: int) -> None:
    """The instruction count per request of each step, by a broker process run under callgrind."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("--instructions needs valgrind and callgrind_control (Debian: apt-get install valgrind)")
        return
    dumps = Path(tempfile.mkdtemp(prefix="request-cost-callgrind-"))
    callgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}/callgrind.%p"]
    try:
        with broker_process(requests, callgrind) as (broker, client, steps):
            print(f"\ninstructions the broker process executes per request (callgrind, {requests:,} requests of each)")
            for step in steps:
                exchange = step.exchange()
                if step.before is not None:
                    step.before()
                error_free(step, client.exchange(exchange()[0]))  # codecs built, caches warm: every request alike
                each = step.before if step.before is not None and step.before_each else None

                def send_some(exchange: Exchange = exchange, each: Callable[[], None] | None = each) -> None:
                    for _ in range(requests // COUNTED_PARTS):
                        if each is not None:
                            each()
                        client.exchange(exchange()[0])

                counts = [counted_instructions(broker.pid, dumps, send_some) for _ in range(COUNTED_PARTS)]
                name = step.name if each is None else step.with_before
                print(f"{name:<46} {min(counts) / (requests // COUNTED_PARTS) / 1000:>9.1f} k")
            per_transaction = transaction_instructions(broker.pid, dumps, client.address, max(requests // 10, 3))
            print(f"{'a transaction of 10 records (confluent-kafka)':<46} {per_transaction / 1000:>9.1f} k")
    finally:
        shutil.rmtree(dumps, ignore_errors=True)


def transaction_instructions(pid: int, dumps: Path, bootstrap: str, transactions: int) -> float:
    """Instructions per committed transaction of 10 records from a confluent-kafka transactional producer, as
    compare.py runs them: three requests (AddPartitionsToTxn, Produce, EndTxn) and the coordinator's writes."""
    from confluent_kafka import Producer

    producer = Producer(client_config(bootstrap, **{"transactional.id": "request-cost"}))
    payload = bytes(100)

    def commit_some() -> None:
        for _ in range(transactions // COUNTED_PARTS):
            producer.begin_transaction()
            for _ in range(10):
                producer.produce(TOPIC, payload, partition=0)
            producer.commit_transaction(TRANSACTION_TIMEOUT_S)

    try:
        producer.init_transactions(TRANSACTION_TIMEOUT_S)
        commit_some()  # the coordinator found, the partition known: every counted transaction alike
        counts = [counted_instructions(pid, dumps, commit_some) for _ in range(COUNTED_PARTS)]
    finally:
        producer.close()
    return min(counts) / (transactions // COUNTED_PARTS)


COUNTED_PARTS = 3  # a step is counted in parts and the least is kept: the broker's periodic work (checkpoints every
# 30 s, the flush check every second) lands in one part or another, depending on how long valgrind takes


def counted_instructions(pid: int, dumps: Path, work: Callable[[], Any]) -> int:
    """Instructions ``pid`` (run by callgrind) executes while ``work`` runs: counters zeroed, then dumped."""
    subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)
    work()
    before = set(dumps.iterdir())
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True)
    for _ in range(200):  # the dump is written by the broker's own thread, just after the command returns
        written = [path for path in set(dumps.iterdir()) - before if path.stat().st_size]
        if written:
            for line in written[0].read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        time.sleep(0.05)
    raise RuntimeError("callgrind wrote no dump")


def table(requests: int, server_cpus: set[int] | None) -> None:
    header = f"{'request':<46} {'round trip p50':>15} {'p99':>9} {'broker CPU':>12} {f'{IN_FLIGHT} in flight':>13}"
    with broker_process(requests, server_cpus=server_cpus) as (broker, client, steps):
        print(f"{requests:,} requests of each to a broker process, one at a time on one connection (round trip, CPU)")
        print(f"and {IN_FLIGHT} at a time (the CPU of the same requests arriving back to back)")
        print(header)
        for step in steps:
            p50, p99, cpu = measure(client, step, requests, broker.pid)
            back_to_back = f"{pipelined_cpu(client, step.exchange(), requests, broker.pid):>10.0f} us" if not (
                step.before is not None and step.before_each) else f"{'-':>13}"
            print(f"{step.name:<46} {p50:>12.0f} us {p99:>6.0f} us {cpu:>9.0f} us {back_to_back}")
        p50, p99, cpu, back_to_back = transaction_cost(client, max(requests // 3, IN_FLIGHT), broker.pid)
        print(f"{'a transaction (AddPartitions, Produce x10, EndTxn)':<46} {p50:>12.0f} us {p99:>6.0f} us "
              f"{cpu:>9.0f} us {back_to_back:>10.0f} us")
    print("\nthe floor of one exchange on this machine: echo servers, timed the same way (an ApiVersions-sized frame)")
    for name, command in echo_servers():
        p50, p99, cpu, back_to_back = echo_floor(command, requests, server_cpus)
        print(f"{name:<46} {p50:>12.0f} us {p99:>6.0f} us {cpu:>9.1f} us {back_to_back:>10.1f} us")


def transaction_cost(client: Client, transactions: int, broker_pid: int) -> tuple[float, float, float, float]:
    """A committed transaction as a transactional producer sends it (AddPartitionsToTxn, Produce of 10 records,
    EndTxn), from its own transactional id: (round trip p50 and p99 of the three requests one at a time, the broker's
    CPU per transaction then, and with ``IN_FLIGHT`` transactions' requests back to back)."""
    started = client.call(22, 4, {"transactional_id": RAW_TRANSACTIONAL_ID, "transaction_timeout_ms": 60_000,
                                  "producer_id": -1, "producer_epoch": -1})
    assert started["error_code"] == 0, started
    producer_id, epoch = started["producer_id"], started["producer_epoch"]
    add = encode_request(24, 3, 1, "bench", {
        "v3_and_below_transactional_id": RAW_TRANSACTIONAL_ID, "v3_and_below_producer_id": producer_id,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]})
    end = encode_request(26, 3, 1, "bench", {"transactional_id": RAW_TRANSACTIONAL_ID, "producer_id": producer_id,
                                             "producer_epoch": epoch, "committed": True})
    sequences = iter(range(0, 1 << 31, 10))

    def transaction() -> list[bytes]:
        batch = build_batch([RecordInput(None, bytes(100))] * 10, producer_id=producer_id, producer_epoch=epoch,
                            base_sequence=next(sequences), is_transactional=True)
        produce = encode_request(0, 9, 1, "bench", {
            "transactional_id": RAW_TRANSACTIONAL_ID, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
        return [add, produce, end]

    for frame, (api_key, version) in zip(transaction(), ((24, 3), (0, 9), (26, 3))):  # the first one's answers
        _, answer = decode_response(api_key, version, client.exchange(frame))
        assert not any(error_codes(answer)), answer
    return (*round_trips(client, transaction, transactions, broker_pid),
            pipelined_cpu(client, transaction, transactions, broker_pid))


def echo_servers() -> Iterator[tuple[str, list[str]]]:
    """The asyncio echo server of this interpreter and, where a C compiler is found, ``echo_floor.c``."""
    yield "asyncio echo server (BufferedProtocol)", [sys.executable, str(Path(__file__)), "--serve-echo"]
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("(no C compiler: the C echo server is not measured)")
        return
    build = Path(tempfile.mkdtemp(prefix="request-cost-echo-"))
    try:
        binary = build / "echo_floor"
        subprocess.run([compiler, "-O2", "-o", str(binary), str(Path(__file__).with_name("echo_floor.c"))], check=True)
        yield "C epoll echo server (echo_floor.c)", [str(binary)]
    finally:
        shutil.rmtree(build, ignore_errors=True)


def start_server(command: Sequence[str], server_cpus: set[int] | None, **options: Any) -> subprocess.Popen:
    """A server process, on ``server_cpus`` if given (set in the child before exec, so each of its threads inherits)."""
    pin = (lambda: os.sched_setaffinity(0, server_cpus)) if server_cpus is not None else None
    return subprocess.Popen(list(command), preexec_fn=pin, **options)


def placement_cpus(placement: str) -> tuple[set[int] | None, set[int] | None]:
    """(this client's CPUs, the server's) for ``--placement``: free leaves both to the scheduler, same puts both on
    the first CPU this process may use, split puts them on the first two."""
    if placement == "free":
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if placement == "same" or len(cpus) < 2:
        return {cpus[0]}, {cpus[0]}
    return {cpus[0]}, {cpus[1]}


def connect_when_listening(port: int, server: subprocess.Popen) -> Client:
    """The client's connection, once the server listens (the C server serves the first connection it accepts)."""
    for _ in range(500):
        if server.poll() is not None:
            raise RuntimeError(f"the echo server exited with {server.returncode}")
        try:
            return Client(f"127.0.0.1:{port}")
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("the echo server did not listen")


def echo_floor(command: list[str], requests: int, server_cpus: set[int] | None) -> tuple[float, float, float, float]:
    """An echo server timed as the broker is, with an ApiVersions request (its echo is a frame of the same size):
    (round trip p50 us, p99 us, server CPU us per exchange one at a time, and with ``IN_FLIGHT`` at a time)."""
    frame = encode_request(18, 3, 1, "bench", {"client_software_name": "bench", "client_software_version": "1"})
    port = free_port()
    server = start_server([*command, str(port)], server_cpus)
    try:
        client = connect_when_listening(port, server)
        try:
            client.exchange(frame)
            one_at_a_time = round_trips(client, lambda: (frame,), requests, server.pid)
            return (*one_at_a_time, pipelined_cpu(client, lambda: (frame,), requests, server.pid))
        finally:
            client.close()
    finally:
        server.terminate()
        server.wait(10)


@contextmanager
def broker_process(
    requests: int, wrapper: Sequence[str] = (), server_cpus: set[int] | None = None,
) -> Iterator[tuple[subprocess.Popen, Client, list[Step]]]:
    """A broker process (run by ``wrapper``, such as valgrind, if given; on ``server_cpus`` if given) on a free port
    with a fresh data directory, a client connected to it and the steps prepared for ``requests`` requests of each;
    all stopped and removed afterwards."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="request-cost-")
    settings = [arg for setting in BROKER_SETTINGS for arg in ("-c", setting)]
    broker = start_server(
        [*wrapper, sys.executable, "-m", "minibroker", "--port", str(port), "--data-dir", data_dir, *settings],
        server_cpus, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_api_versions(f"127.0.0.1:{port}", time.perf_counter(), broker)
        client = Client(f"127.0.0.1:{port}")
        try:
            yield broker, client, prepare(client, requests)
        finally:
            client.close()
    finally:
        broker.terminate()
        broker.wait(60)
        shutil.rmtree(data_dir, ignore_errors=True)


STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("frame read", ("recv_into", "frames.py:buffer_updated", "frames.py:get_buffer", "FrameReader")),
    ("header parse", ("parse_request_header", "request_header_version")),
    ("body decode", ("decode_request_body", "protocol/primitives.py:Reader", "<codec:decode")),
    ("encode", ("encode_response", "protocol/primitives.py:Writer", "<codec:encode", "protocol/schema.py")),
    ("write", ("'send' of", "'sendmsg' of", "transports.py", "writelines")),
    ("handler", ("minibroker/handlers/", "minibroker/groups/", "minibroker/transactions/", "minibroker/share/",
                 "storage/", "minibroker/server/context.py", "minibroker/cluster/internal_topics.py", "minibroker/broker.py",
                 "minibroker/cluster/placements.py", "minibroker/cluster/clock.py", "protocol/records.py", "posix.pwrite")),
    ("dispatch", ("minibroker/server/dispatch.py", "minibroker/server/connection.py")),
    ("event loop", ("asyncio/", "selectors.py", "select.epoll", "_contextvars", "get_running_loop")),
)
READER_WRITER_SPLIT = inspect.getsourcelines(Writer)[1]  # protocol/primitives.py: Reader's methods come before


def label_of(filename: str, line: int, name: str) -> str:
    """A function as the stage patterns see it: primitives by class, generated codecs by direction."""
    if filename.endswith("protocol/primitives.py"):
        return f"protocol/primitives.py:{'Reader' if line < READER_WRITER_SPLIT else 'Writer'}.{name}"
    if filename.startswith("<codec"):
        return f"<codec:{name}"
    return f"{filename}:{name}"


def stage_of(label: str) -> str:
    for stage, patterns in STAGES:
        if any(pattern in label for pattern in patterns):
            return stage
    return "other"


def profile(requests: int) -> None:
    from minibroker.testing import Broker

    settings = dict(setting.split("=", 1) for setting in BROKER_SETTINGS)
    with Broker(settings) as broker:
        client = Client(broker.bootstrap_servers)
        try:
            steps = prepare(client, requests)
            print(f"\nwhere the broker's time goes (cProfile on its event loop thread, {requests:,} requests each):")
            print(f"{'request':<46} " + " ".join(f"{stage:>11}" for stage, _ in STAGES) + f" {'other':>8}")
            for step in steps:
                profiler = cProfile.Profile(time.thread_time)  # CPU time: a wait in epoll is not work
                broker._on_loop(call_on_loop(profiler.enable))
                measure(client, step, requests, None)
                broker._on_loop(call_on_loop(profiler.disable))
                shares = stage_shares(profiler)
                print(f"{step.name:<46} " + " ".join(f"{shares.get(stage, 0):>10.0f}%" for stage, _ in STAGES)
                      + f" {shares.get('other', 0):>7.0f}%")
        finally:
            client.close()


async def serve_echo(port: int) -> None:
    """The smallest asyncio server: a BufferedProtocol writing back what it reads, as the broker's loop reads."""

    class Echo(asyncio.BufferedProtocol):
        def __init__(self) -> None:
            self.buffer = bytearray(1 << 16)
            self.transport: asyncio.Transport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport  # type: ignore[assignment]

        def get_buffer(self, sizehint: int) -> bytearray:
            return self.buffer

        def buffer_updated(self, nbytes: int) -> None:
            self.transport.write(bytes(self.buffer[:nbytes]))

    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


async def call_on_loop(function: Callable[[], None]) -> None:
    function()  # cProfile follows the thread it is enabled on: the broker's loop


def stage_shares(profiler: cProfile.Profile) -> dict[str, float]:
    """Each function's own time to its stage; a built-in that no pattern names (len, dict.get, ...) is shared among
    its callers' stages, in proportion to the time it spent for each."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    spent: dict[str, float] = {}
    for (filename, line, name), (_, _, tottime, _, callers) in stats.items():
        stage = stage_of(label_of(filename, line, name))
        if stage == "other" and filename == "~" and callers:
            for caller, (_, _, caller_tt, _) in callers.items():
                caller_stage = stage_of(label_of(*caller))
                spent[caller_stage] = spent.get(caller_stage, 0.0) + caller_tt
        else:
            spent[stage] = spent.get(stage, 0.0) + tottime
    total = sum(spent.values()) or 1.0
    return {stage: seconds / total * 100 for stage, seconds in spent.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests of each kind")
    parser.add_argument("--profile", action="store_true", help="also profile an in-process broker")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per request under valgrind instead (use --requests 300)")
    parser.add_argument("--placement", choices=("free", "same", "split"), default="free",
                        help="where the client and the server run: as the scheduler likes (default), both on one CPU, "
                             "or each on its own (the CPU a request costs depends on it on small VMs)")
    parser.add_argument("--serve-echo", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the floor's server
    args = parser.parse_args()
    if args.serve_echo is not None:
        asyncio.run(serve_echo(args.serve_echo))
        return 0
    if args.instructions:
        instructions(args.requests)
        return 0
    client_cpus, server_cpus = placement_cpus(args.placement)
    if client_cpus is not None:
        os.sched_setaffinity(0, client_cpus)
        print(f"placement {args.placement}: client on CPU {sorted(client_cpus)}, server on CPU {sorted(server_cpus)}")
    table(args.requests, server_cpus)
    if args.profile:
        profile(min(args.requests, 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
