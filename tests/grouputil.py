"""Helpers for the consumer group tests: numbered messages, members polling in their own thread or task,
members in a child process (to kill), and the checks the three client modules share."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, Deadline, confluent_create_topic

GROUP_PARTITIONS = 4
ALL = set(range(GROUP_PARTITIONS))
SETTLE_S = 0.5  # time given to a consumer to show a duplicate after it has what it should
HEARTBEAT_MS = 200
KILLED_SESSION_MS = 1500
# A broker that allows the short session timeout of the member the session-timeout tests kill.
SHORT_SESSION_SETTINGS = ("group.min.session.timeout.ms=500",)

Consumed = tuple[int, bytes]  # (partition, value)


def produce_batch(bootstrap: str, topic: str, batch: int, per_partition: int, partitions: int = GROUP_PARTITIONS) -> set[Consumed]:
    """``per_partition`` messages to each partition, values naming batch, partition and index; returns them."""
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS})
    sent = set()
    try:
        for partition in range(partitions):
            for index in range(per_partition):
                value = f"batch{batch}-p{partition}-{index}".encode()
                producer.produce(topic, value=value, partition=partition)
                sent.add((partition, value))
        assert producer.flush(TIMEOUT_S) == 0, "messages left undelivered"
    finally:
        producer.close()
    return sent


def wait_until(condition: Callable[[], bool], what: str, seconds: float = TIMEOUT_S) -> float:
    """Poll ``condition`` until true; returns how long it took, fails naming ``what`` after ``seconds``."""
    start = time.monotonic()
    deadline = Deadline(seconds)
    while not condition():
        assert deadline.left(), f"timed out after {seconds}s waiting for {what}"
        time.sleep(0.02)
    return time.monotonic() - start


async def async_wait_until(condition: Callable[[], bool], what: str, seconds: float = TIMEOUT_S) -> float:
    start = time.monotonic()
    deadline = Deadline(seconds)
    while not condition():
        assert deadline.left(), f"timed out after {seconds}s waiting for {what}"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def assert_split(assignments: list[set[int]], partitions: int = GROUP_PARTITIONS) -> None:
    """Every member has partitions, no partition twice, every partition once."""
    assert all(assignments), f"a member has no partitions: {assignments}"
    flat = [p for assigned in assignments for p in assigned]
    assert sorted(flat) == list(range(partitions)), f"assignments overlap or leave gaps: {assignments}"


def is_split(assignments: list[set[int]], partitions: int = GROUP_PARTITIONS) -> bool:
    return all(assignments) and sorted(p for a in assignments for p in a) == list(range(partitions))


class MemberClient(Protocol):
    """One client's consumer, reduced to what the group tests need."""

    def poll_records(self) -> list[Consumed]: ...

    def assigned(self) -> set[int]: ...

    def commit(self) -> None: ...

    def close(self) -> None: ...


class ConfluentMember:
    """A confluent-kafka member: the group tests' defaults, then ``config``; ``subscribe`` keyword arguments
    (rebalance callbacks) go to ``Consumer.subscribe``."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], config: dict[str, Any], **subscribe: Any) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "socket.timeout.ms": TIMEOUT_MS,
            **config,
        })
        self.consumer.subscribe(topics, **subscribe)

    def poll_records(self) -> list[Consumed]:
        records = []
        for message in self.consumer.consume(num_messages=100, timeout=0.1):
            if message.error() is not None:
                raise KafkaException(message.error())
            records.append((message.partition(), message.value()))
        return records

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def commit(self) -> None:
        self.consumer.commit(asynchronous=False)

    def close(self) -> None:
        self.consumer.close()


def member_settings(bootstrap: str, group: str, config: dict[str, Any]) -> dict[str, Any]:
    """The group tests' consumer settings for kafka-python and aiokafka (same names in both), then ``config``."""
    return {
        "bootstrap_servers": bootstrap, "group_id": group, "auto_offset_reset": "earliest", "enable_auto_commit": False,
        "heartbeat_interval_ms": HEARTBEAT_MS, "request_timeout_ms": TIMEOUT_MS, **config,
    }


class KafkaPythonMember:
    def __init__(self, bootstrap: str, group: str, topic: str, **config: Any) -> None:
        self.consumer = KafkaConsumer(topic, **member_settings(bootstrap, group, config))

    def poll_records(self) -> list[Consumed]:
        batches = self.consumer.poll(timeout_ms=100)
        return [(tp.partition, record.value) for tp, records in batches.items() for record in records]

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def commit(self) -> None:
        self.consumer.commit()

    def close(self) -> None:
        self.consumer.close()


class ThreadedMember:
    """A group member that polls in its own thread and commits after every poll that returned records.

    The client object is created, used and closed by that thread only (the clients are not thread-safe).
    """

    def __init__(self, name: str, make_client: Callable[[], MemberClient]) -> None:
        self.name = name
        self.records: list[Consumed] = []
        self.assignment: set[int] = set()
        self._make_client = make_client
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            client = self._make_client()
            try:
                while not self._stop.is_set():
                    records = client.poll_records()
                    if records:
                        self.records.extend(records)
                        client.commit()
                    self.assignment = client.assigned()
            finally:
                client.close()
        except BaseException as exc:  # reported by stop()
            self._error = exc

    def stop(self) -> None:
        """Close the member (the client leaves the group) and re-raise anything its thread failed with."""
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), f"member {self.name} did not stop"
        self.assignment = set()
        if self._error is not None:
            raise self._error


class AsyncMemberClient(Protocol):
    async def poll_records(self) -> list[Consumed]: ...

    def assigned(self) -> set[int]: ...

    async def commit(self) -> None: ...

    async def close(self) -> None: ...


class TaskMember:
    """ThreadedMember for asyncio clients: the member polls in its own task."""

    def __init__(self, name: str, make_client: Callable[[], Awaitable[AsyncMemberClient]]) -> None:
        self.name = name
        self.records: list[Consumed] = []
        self.assignment: set[int] = set()
        self._make_client = make_client
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        client = await self._make_client()
        try:
            while not self._stopping:
                records = await client.poll_records()
                if records:
                    self.records.extend(records)
                    await client.commit()
                self.assignment = client.assigned()
        finally:
            await client.close()

    async def stop(self) -> None:
        self._stopping = True
        await asyncio.wait_for(self._task, TIMEOUT_S)
        self.assignment = set()


class MemberProcess:
    """A member in a child process (``python -m tests.group_member``), so a test can kill it without a LeaveGroup."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, session_ms: int) -> None:
        root = Path(__file__).resolve().parents[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.group_member", client, bootstrap, group, topic, str(session_ms)],
            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.assignment: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("assigned"):
                parts = line.split()[1:]
                self.assignment = {int(p) for p in parts[0].split(",")} if parts else set()

    def kill(self) -> None:
        """SIGKILL: the member stops heartbeating and never says goodbye."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT_S)
        self.proc.stdout.close()


def stop_all(members: list[ThreadedMember]) -> None:
    while members:
        members.pop().stop()


def share_take_over_and_resume(bootstrap: str, topic: str, start: Callable[[str], ThreadedMember]) -> None:
    """Two members split the topic, the one left takes every partition over, and a member started after both
    resumes exactly after their commits. ``start(name)`` makes a member of the group with the client under test."""
    members: list[ThreadedMember] = []
    try:
        a = start("a")
        members.append(a)
        wait_until(lambda: a.assignment == ALL, "the first member to own every partition")
        b = start("b")
        members.append(b)
        wait_until(lambda: is_split([a.assignment, b.assignment]), "two members to split the partitions")
        assert_split([a.assignment, b.assignment])

        first = produce_batch(bootstrap, topic, 1, 5)
        wait_until(lambda: len(a.records) + len(b.records) >= len(first), "the members to consume the first batch")
        time.sleep(SETTLE_S)
        assert {p for p, _ in a.records} <= a.assignment and {p for p, _ in b.records} <= b.assignment
        assert sorted(a.records + b.records) == sorted(first)

        b.stop()
        members.remove(b)
        wait_until(lambda: a.assignment == ALL, "the remaining member to take over every partition")
        seen = len(a.records)
        second = produce_batch(bootstrap, topic, 2, 5)
        wait_until(lambda: len(a.records) - seen >= len(second), "the second batch")
        time.sleep(SETTLE_S)
        assert sorted(a.records[seen:]) == sorted(second)  # b's partitions resume after b's commits

        a.stop()
        members.remove(a)
        third = produce_batch(bootstrap, topic, 3, 5)
        c = start("c")
        members.append(c)
        wait_until(lambda: len(c.records) >= len(third), "a new member to consume the third batch")
        time.sleep(SETTLE_S)
        assert sorted(c.records) == sorted(third)
    finally:
        stop_all(members)


def silent_member_is_removed(
    data_dir: Path, topic: str, client: str, start: Callable[[str, str, str], ThreadedMember],
    check: Callable[[str, str], None] = lambda bootstrap, group: None,
) -> None:
    """A member process of ``client`` is killed (it stops heartbeating): after its session timeout, not at the
    disconnect, the member started by ``start(name, bootstrap, group)`` owns every partition; then
    ``check(bootstrap, group)`` runs while that member is still in the group."""
    broker = BrokerProcess(data_dir, *SHORT_SESSION_SETTINGS).start()
    silent: MemberProcess | None = None
    members: list[ThreadedMember] = []
    try:
        confluent_create_topic(broker.bootstrap, topic, GROUP_PARTITIONS)
        group = f"g-{topic}"
        silent = MemberProcess(client, broker.bootstrap, group, topic, KILLED_SESSION_MS)
        wait_until(lambda: silent.assignment == ALL, "the member process to own every partition")
        a = start("a", broker.bootstrap, group)
        members.append(a)
        wait_until(lambda: is_split([a.assignment, silent.assignment]), "the partitions to be split")
        silent.kill()
        took = wait_until(lambda: a.assignment == ALL, "the survivor to own every partition")
        assert took >= KILLED_SESSION_MS / 1000 - 2 * HEARTBEAT_MS / 1000  # the session timeout, not the disconnect
        check(broker.bootstrap, group)
    finally:
        stop_all(members)
        if silent is not None:
            silent.kill()
        broker.stop()
