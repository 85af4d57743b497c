"""Consumer-protocol groups (KIP-848, confluent-kafka with ``group.protocol=consumer``) across broker restarts and
crashes: after a clean restart new members resume exactly at the commits of the members before it, every record
read once; while the broker is killed with SIGKILL again and again under two members that keep consuming and
committing, every acknowledged offset commit holds, the group is reloaded from ``__consumer_offsets`` with its
members and their assignments (seen while the members are frozen, so they cannot have joined again), and
consumption goes on.

Run as ``python -m tests.test_groups_consumer_protocol_crash BOOTSTRAP GROUP TOPIC``, this module is such a member in
a process of its own (the crash test freezes it with SIGSTOP)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import ConsumerGroupDescription

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic
from tests.grouputil import SETTLE_S, ThreadedMember, is_split, produce_batch, stop_all, wait_until
from tests.numbered_producer import NumberedProducer

PARTITIONS = 6
ALL = set(range(PARTITIONS))
HEARTBEAT_INTERVAL_MS = 500
SESSION_TIMEOUT_MS = 6000  # longer than a broker restart, short enough to matter
SETTINGS = (
    f"group.consumer.heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}",
    f"group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}",
    "offsets.topic.num.partitions=3",  # quicker restarts: fewer partitions to open and load
)
POLL_RECORDS = 4  # records a member takes per poll, then commits: many small commits
RESTART_RECORDS = 200  # per partition, for the restart test
RESTART_BUDGET = 200  # records each of the first two members reads before the restart (a third of the partitions')
PRODUCE_EVERY_S = 0.002  # the crash test's producer: some 500 records a second
KILLS = 5
SEED = 20260848
RUN_BETWEEN_KILLS_S = (0.1, 0.6)  # after the members' first commits since the restart
COMMITS_BETWEEN_KILLS = 4
CONSUMER_GROUP_DESCRIBE = 69
MODULE = f"tests.{Path(__file__).stem}"


def consumer_config(bootstrap: str, group: str) -> dict[str, Any]:
    """A consumer of the consumer group protocol: the broker's settings time its heartbeats and session."""
    return {
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "socket.timeout.ms": TIMEOUT_MS,
        "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
    }


def committed(bootstrap: str, group: str) -> dict[int, int]:
    """The group's offsets by OffsetFetch (a new admin client: one from before a restart may hang, see below)."""
    admin = confluent_admin(bootstrap)
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S)[group]
    return {tp.partition: tp.offset for tp in future.result(timeout=TIMEOUT_S).topic_partitions}


def describe(bootstrap: str, group: str) -> ConsumerGroupDescription:
    """ConsumerGroupDescribe through the admin client. The client is new every time: librdkafka 2.16's admin client
    that saw the broker go away re-bootstraps and then leaves its requests waiting for the coordinator until they
    time out, even once the broker is back."""
    admin = confluent_admin(bootstrap)
    return admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)


def assignments(description: ConsumerGroupDescription) -> dict[str, set[int]]:
    return {m.member_id: {tp.partition for tp in m.assignment.topic_partitions} for m in description.members}


def stable_and_split(bootstrap: str, group: str) -> bool:
    """The consumer-protocol group has two members that own their target assignments, which split the topic."""
    description = describe(bootstrap, group)
    targets = [{tp.partition for tp in m.target_assignment.topic_partitions} for m in description.members]
    return (description.type == ConsumerGroupType.CONSUMER and len(description.members) == 2
            and list(assignments(description).values()) == targets and is_split(targets, PARTITIONS))


def raw_describe(bootstrap: str, group: str) -> dict[str, Any]:
    """The ConsumerGroupDescribe answer for one group as sent, epochs included (the admin client drops them)."""
    from minibroker.protocol.frames import decode_response

    with RawConnection(bootstrap) as conn:
        answer = conn.request(CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})
    [described] = decode_response(CONSUMER_GROUP_DESCRIBE, 0, answer)[1]["groups"]
    assert described["error_code"] == 0, described
    return described


def epochs(described: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": (described["group_state"], described["group_epoch"], described["assignment_epoch"]),
        "members": {
            m["member_id"]: (m["member_epoch"], [(t["topic_name"], t["partitions"]) for t in m["assignment"]["topic_partitions"]])
            for m in described["members"]
        },
    }


def index_of(value: bytes) -> int:
    """The offset of a record from ``produce_batch`` (``batchB-pP-I``, produced in order to a new partition)."""
    return int(value.rsplit(b"-", 1)[1])


# ---- restart: members in this process ----


class CommittingConsumer:
    """A ``MemberClient`` (tests.grouputil) of the consumer protocol that commits the offsets after the records of
    each poll synchronously, and reads no more than ``budget`` records; ``acked``: partition -> offset of its last
    acknowledged commit."""

    def __init__(self, bootstrap: str, group: str, topic: str, budget: int | None) -> None:
        self.topic = topic
        self.budget = budget
        self.consumer = Consumer(consumer_config(bootstrap, group))
        self.consumer.subscribe([topic])
        self.polled: dict[int, int] = {}
        self.acked: dict[int, int] = {}

    def poll_records(self) -> list[tuple[int, bytes]]:
        wanted = POLL_RECORDS if self.budget is None else min(POLL_RECORDS, self.budget)
        if wanted == 0:
            time.sleep(0.1)  # idle: done reading
            return []
        records = []
        for message in self.consumer.consume(num_messages=wanted, timeout=0.1):
            if message.error() is not None:
                raise KafkaException(message.error())
            records.append((message.partition(), message.value()))
            self.polled[message.partition()] = message.offset() + 1
        if self.budget is not None:
            self.budget -= len(records)
        return records

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def commit(self) -> None:
        offsets = [TopicPartition(self.topic, p, o) for p, o in self.polled.items()]
        for tp in self.consumer.commit(offsets=offsets, asynchronous=False):
            assert tp.error is None, f"commit of partition {tp.partition} failed: {tp.error}"
            self.acked[tp.partition] = tp.offset
        self.polled.clear()

    def close(self) -> None:
        self.consumer.close()


def start_member(
    name: str, bootstrap: str, group: str, topic: str, clients: list[CommittingConsumer], budget: int | None = None,
) -> ThreadedMember:
    def make() -> CommittingConsumer:
        client = CommittingConsumer(bootstrap, group, topic, budget)
        clients.append(client)
        return client

    return ThreadedMember(name, make)


def test_members_resume_at_their_commits_after_a_restart(fresh_broker: BrokerProcess, topic_name: str) -> None:
    fresh_broker.settings += SETTINGS
    bootstrap = fresh_broker.start().bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    clients: list[CommittingConsumer] = []
    try:
        a = start_member("a", bootstrap, group, topic_name, clients, RESTART_BUDGET)
        b = start_member("b", bootstrap, group, topic_name, clients, RESTART_BUDGET)
        members += [a, b]
        wait_until(lambda: is_split([a.assignment, b.assignment], PARTITIONS), "two members to split the partitions")
        sent = produce_batch(bootstrap, topic_name, 1, RESTART_RECORDS, PARTITIONS)
        wait_until(lambda: len(a.records) == len(b.records) == RESTART_BUDGET, "the members to read their share")
        stop_all(members)  # each polled record was committed before the next poll; then the members left
        first = a.records + b.records
        acked: dict[int, int] = {}
        for client in clients:
            for p, offset in client.acked.items():
                assert p not in acked, f"partition {p} committed by both members"  # no rebalance in between
                acked[p] = offset
        for p in ALL:
            read = sorted(index_of(v) for q, v in first if q == p)
            assert read == list(range(acked.get(p, 0))), f"partition {p}: read {len(read)}, last commit {acked.get(p)}"
        assert committed(bootstrap, group) == acked
        before = describe(bootstrap, group)
        assert (before.type, before.state, before.members) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.EMPTY, [])

        fresh_broker.restart()
        after = describe(bootstrap, group)
        assert after.type == ConsumerGroupType.CONSUMER, "the group is still a consumer-protocol group"
        assert (after.state, after.members, after.partition_assignor) == (before.state, [], before.partition_assignor)
        assert committed(bootstrap, group) == acked, "commits changed across the restart"

        clients.clear()
        c = start_member("c", bootstrap, group, topic_name, clients)
        d = start_member("d", bootstrap, group, topic_name, clients)
        members += [c, d]
        wait_until(lambda: len(c.records) + len(d.records) >= len(sent) - len(first), "the new members to read the rest")
        wait_until(lambda: stable_and_split(bootstrap, group), "the new members to share the partitions")
        time.sleep(SETTLE_S)  # room for a record read twice to show up
        second = c.records + d.records
        for p in ALL:
            indexes = [index_of(v) for q, v in second if q == p]
            assert not indexes or min(indexes) == acked.get(p, 0), f"partition {p}: resumed at {min(indexes)}, committed {acked.get(p, 0)}"
        stop_all(members)
    finally:
        stop_all(members)
    assert sorted(first + second) == sorted(sent), "every record exactly once over the restart"
    assert committed(bootstrap, group) == {p: RESTART_RECORDS for p in ALL}
    assert "Traceback" not in fresh_broker.log_text()


# ---- crash: members in child processes ----


class MemberChild:
    """A consumer-protocol member running this module in a child process; its reports are gathered by a thread.

    ``events``: (monotonic ns, "consumed" | "committed", {partition: offset}) in the order the member reported them;
    consumed offsets are those of the records, committed ones those of acknowledged commits (the next record)."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, log_dir: Path) -> None:
        self.name = name
        root = Path(__file__).resolve().parents[1]
        self.log_path = log_dir / f"member-{name}.log"
        with open(self.log_path, "a") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", MODULE, bootstrap, group, topic], cwd=root, stdout=subprocess.PIPE, stderr=stderr,
                text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.assignment: set[int] = set()
        self.events: list[tuple[int, str, list[tuple[int, int]]]] = []
        self.failed_commits: list[str] = []
        self.closed = False
        self._reader = threading.Thread(target=self._read, name=f"member-{name}-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind == "assigned":
                self.assignment = {int(p) for p in rest.split(",")} if rest else set()
            elif kind in ("consumed", "committed"):
                stamp, *pairs = rest.split()
                offsets = [(int(p), int(o)) for p, o in (pair.split(":") for pair in pairs)]
                self.events.append((int(stamp), kind, offsets))
            elif kind == "commit-failed":
                self.failed_commits.append(rest)
            elif kind == "closed":
                self.closed = True

    def commits(self) -> int:
        return sum(1 for _, kind, _ in list(self.events) if kind == "committed")

    def freeze(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        """SIGTERM: the member leaves the group and exits."""
        self.proc.send_signal(signal.SIGCONT)
        self.proc.terminate()
        assert self.proc.wait(TIMEOUT_S) == 0, f"member {self.name} exited with {self.proc.returncode}"
        self._reader.join(TIMEOUT_S)
        assert self.closed, f"member {self.name} did not close its consumer"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT_S)
        self._reader.join(TIMEOUT_S)
        self.proc.stdout.close()


def run_member(bootstrap: str, group: str, topic: str) -> None:
    """The child: consume a few records, report them, commit their offsets synchronously, report the commit if it is
    acknowledged (a failed one is tried again with the next poll), until SIGTERM; then leave the group."""
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    consumer = Consumer(consumer_config(bootstrap, group))
    consumer.subscribe([topic])
    pending: dict[int, int] = {}  # read, not yet committed
    assigned: set[int] | None = None
    while not stopping.is_set():
        records = consumer.consume(num_messages=POLL_RECORDS, timeout=0.1)
        read = [(m.partition(), m.offset()) for m in records if m.error() is None]
        if read:
            print("consumed", time.monotonic_ns(), *(f"{p}:{o}" for p, o in read), flush=True)
            for p, o in read:
                pending[p] = o + 1
        now = {tp.partition for tp in consumer.assignment()}
        if now != assigned:
            assigned = now
            print("assigned", ",".join(map(str, sorted(now))), flush=True)
        pending = {p: o for p, o in pending.items() if p in now}  # a partition given away is its new owner's
        if not pending:
            continue
        try:
            answer = consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in pending.items()], asynchronous=False)
        except KafkaException as exc:
            print("commit-failed", exc.args[0].str().replace("\n", " "), flush=True)
            continue
        done = [(tp.partition, tp.offset) for tp in answer if tp.error is None]
        print("committed", time.monotonic_ns(), *(f"{p}:{o}" for p, o in done), flush=True)
        for p, o in done:
            if pending.get(p) == o:
                del pending[p]
    consumer.close()
    print("closed", flush=True)


def check_reads(members: list[MemberChild], ends: dict[int, int]) -> int:
    """Every record up to ``ends`` was read, and none below an acknowledged commit of its partition after that commit
    (members' reports merged by their monotonic clock); returns how many records were read again."""
    timeline = sorted((stamp, kind == "consumed", offsets) for m in members for stamp, kind, offsets in list(m.events))
    acked: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    again = 0
    for stamp, is_read, offsets in timeline:
        for p, offset in offsets:
            if not is_read:
                acked[p] = offset
                continue
            assert offset >= acked.get(p, 0), f"partition {p}: offset {offset} read again after a commit of {acked[p]}"
            again += (p, offset) in seen
            seen.add((p, offset))
    missing = {p: sorted(set(range(end)) - {o for q, o in seen if q == p})[:5] for p, end in ends.items()}
    assert not any(missing.values()), f"records never read: {missing}"
    return again


def all_acked(members: list[MemberChild]) -> dict[int, int]:
    """partition -> last acknowledged commit over the members (by time: a partition may have moved)."""
    last: dict[int, tuple[int, int]] = {}
    for m in members:
        for stamp, kind, offsets in list(m.events):
            for p, offset in offsets if kind == "committed" else ():
                if p not in last or last[p][0] < stamp:
                    last[p] = (stamp, offset)
    return {p: offset for p, (_, offset) in last.items()}


def finish_producer(producer: NumberedProducer) -> dict[int, int]:
    """Stop producing and wait for every acknowledgement; returns partition -> log end offset."""
    producer.finish()
    assert not producer.errors, producer.errors[:5]
    for p, acked in producer.acked.items():
        offsets = sorted(offset for offset, _ in acked)
        assert offsets == list(range(len(offsets))), f"partition {p}: acknowledged offsets not 0..n-1"
    assert sum(map(len, producer.acked.values())) == producer.sent
    return {p: len(acked) for p, acked in producer.acked.items()}


def commits_lost(bootstrap: str, group: str, acked: dict[int, int]) -> dict[int, tuple[int, int | None]]:
    """Partitions whose committed offset is below the last commit acknowledged: (acknowledged, committed)."""
    now = committed(bootstrap, group)
    return {p: (offset, now.get(p)) for p, offset in acked.items() if now.get(p, -1) < offset}


def test_commits_and_members_survive_sigkills(fresh_broker: BrokerProcess, topic_name: str, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    fresh_broker.settings += SETTINGS
    bootstrap = fresh_broker.start().bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    members: list[MemberChild] = []
    producer: NumberedProducer | None = None
    try:
        members += [MemberChild(name, bootstrap, group, topic_name, tmp_path) for name in ("a", "b")]
        a, b = members
        wait_until(lambda: is_split([a.assignment, b.assignment], PARTITIONS), "two members to split the partitions")
        producer = NumberedProducer(bootstrap, topic_name, PARTITIONS, pace_s=PRODUCE_EVERY_S).start()

        for _ in range(KILLS):
            commits = a.commits() + b.commits()
            wait_until(lambda done=commits: a.commits() + b.commits() >= done + COMMITS_BETWEEN_KILLS,
                       "commits since the restart")
            time.sleep(rng.uniform(*RUN_BETWEEN_KILLS_S))
            acked = all_acked(members)
            fresh_broker.kill()
            fresh_broker.start()
            assert not commits_lost(bootstrap, group, acked), "acknowledged commits lost"

        # The group comes back from the log with its members and their assignments: frozen, they cannot join again.
        wait_until(lambda: stable_and_split(bootstrap, group), "the group to settle with both members")
        for m in members:
            m.freeze()
        frozen = raw_describe(bootstrap, group)
        before = describe(bootstrap, group)
        acked = all_acked(members)
        fresh_broker.kill()
        fresh_broker.start()
        reloaded = describe(bootstrap, group)
        assert reloaded.type == ConsumerGroupType.CONSUMER
        assert (reloaded.state, assignments(reloaded)) == (before.state, assignments(before))
        assert is_split(list(assignments(reloaded).values()), PARTITIONS), assignments(reloaded)
        assert epochs(raw_describe(bootstrap, group)) == epochs(frozen)
        assert not commits_lost(bootstrap, group, acked), "acknowledged commits lost"
        for m in members:
            m.thaw()
        commits = {m.name: m.commits() for m in members}
        wait_until(lambda: all(m.commits() > commits[m.name] for m in members), "both members to commit again")

        ends = finish_producer(producer)
        wait_until(lambda: all_acked(members) == ends, "the members to read and commit everything")
        assert assignments(describe(bootstrap, group)) == assignments(before), "the members kept their partitions"
        for m in members:
            m.close()
        again = check_reads(members, ends)
    finally:
        if producer is not None:
            producer.close()
        for m in members:
            m.kill()
    final = all_acked(members)
    assert final == ends and committed(bootstrap, group) == ends, "the last acknowledged commits are the offsets"
    log = fresh_broker.log_text()
    assert "Traceback" not in log
    joins = [line for line in log.splitlines() if f"consumer group {group}: member" in line and line.endswith(" joins")]
    assert len(joins) == 2, f"members joined again: {joins}"
    print(f"\n{producer.sent} records, {a.commits() + b.commits()} acknowledged commits "
          f"({len(a.failed_commits) + len(b.failed_commits)} failed), {again} records read again, {KILLS + 1} SIGKILLs")


if __name__ == "__main__":
    run_member(*sys.argv[1:4])
