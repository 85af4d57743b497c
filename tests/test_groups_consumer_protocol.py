"""The consumer group protocol of Kafka 4 (KIP-848) with confluent-kafka (``group.protocol=consumer``): server-side
assignment that covers the topic, incremental rebalances (a member keeps consuming what it keeps), a leaving
member's partitions moving at the others' next heartbeat, regular-expression subscriptions that pick up new topics,
static members that come back without a new group epoch, the admin views, and a kafka-python group beside it."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaException
from minibroker.protocol.frames import decode_response

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic
from tests.grouputil import (
    SETTLE_S,
    ConfluentMember,
    Consumed,
    KafkaPythonMember,
    ThreadedMember,
    is_split,
    produce_batch,
    stop_all,
    wait_until,
)

PARTITIONS = 6
ALL6 = set(range(PARTITIONS))
HEARTBEAT_INTERVAL_MS = 1000
SESSION_TIMEOUT_MS = 10_000
CONSUMER_GROUP_DESCRIBE = 69


@pytest.fixture(scope="module")
def kip848_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose consumer-protocol members heartbeat every second (Kafka's default is 5 s)."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("kip848") / "data",
        f"group.consumer.heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}",
        f"group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}",
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def kip848(kip848_broker: BrokerProcess) -> str:
    return kip848_broker.bootstrap


class ConsumerProtocolMember(ConfluentMember):
    """A confluent-kafka consumer of the consumer group protocol; ``events`` logs its (incremental) rebalance
    callbacks as (kind, partitions)."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], **config: Any) -> None:
        self.events: list[tuple[str, set[tuple[str, int]]]] = []
        self.topic_assignment: set[tuple[str, int]] = set()
        super().__init__(
            bootstrap, group, topics, {"group.protocol": "consumer", **config},
            on_assign=self._log("assign"), on_revoke=self._log("revoke"),
        )

    def _log(self, kind: str) -> Any:
        return lambda _consumer, partitions: self.events.append((kind, {(tp.topic, tp.partition) for tp in partitions}))

    def assigned(self) -> set[int]:
        """Called by the member's own thread after each poll; also keeps ``topic_assignment`` for other threads."""
        self.topic_assignment = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        return {partition for _, partition in self.topic_assignment}


def start(name: str, bootstrap: str, group: str, topics: list[str], **config: Any) -> tuple[ThreadedMember, ConsumerProtocolMember]:
    """A member polling (and committing what it read) in its own thread; returns it and its client."""
    made: list[ConsumerProtocolMember] = []
    ready = threading.Event()

    def make() -> ConsumerProtocolMember:
        made.append(ConsumerProtocolMember(bootstrap, group, topics, **config))
        ready.set()
        return made[0]

    member = ThreadedMember(name, make)
    assert ready.wait(TIMEOUT_S), f"member {name} was not created"
    return member, made[0]


def describe_raw(bootstrap: str, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe v1 as the broker answers it (group epoch, member epochs and member types included)."""
    with RawConnection(bootstrap) as conn:
        frame = conn.request(CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    [described] = decode_response(CONSUMER_GROUP_DESCRIBE, 1, frame)[1]["groups"]
    return described


def all_records(members: list[ThreadedMember]) -> list[Consumed]:
    return sorted(record for member in members for record in member.records)


def test_members_split_rebalance_incrementally_and_consume_each_record_once(
    kip848_broker: BrokerProcess, kip848: str, topic_name: str,
) -> None:
    confluent_create_topic(kip848, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    clients: dict[str, ConsumerProtocolMember] = {}
    everyone: list[ThreadedMember] = []
    try:
        for name in ("a", "b", "c"):
            member, clients[name] = start(name, kip848, group, [topic_name])
            members.append(member)
            everyone.append(member)
        wait_until(lambda: is_split([m.assignment for m in members], PARTITIONS), "three members to split six partitions")
        first = produce_batch(kip848, topic_name, 1, 5, PARTITIONS)
        wait_until(lambda: len(all_records(everyone)) >= len(first), "the first batch")

        before = {m.name: set(m.assignment) for m in members}
        logged = {name: len(client.events) for name, client in clients.items()}
        d, clients["d"] = start("d", kip848, group, [topic_name])
        members.append(d)
        everyone.append(d)
        wait_until(lambda: is_split([m.assignment for m in members], PARTITIONS), "four members to split six partitions")
        for member in members[:3]:
            kept = member.assignment
            assert kept <= before[member.name], f"{member.name} was given {kept - before[member.name]} while d joined"
            revoked = set().union(*(
                {p for _, p in partitions} for kind, partitions in clients[member.name].events[logged[member.name]:]
                if kind == "revoke"
            ))
            assert revoked == before[member.name] - kept, f"{member.name} revoked {revoked}, kept {kept}: not incremental"
        second = produce_batch(kip848, topic_name, 2, 5, PARTITIONS)
        wait_until(lambda: len(all_records(everyone)) >= len(first) + len(second), "the second batch")

        leaving = members.pop(0)
        leaving.stop()
        wait_until(lambda: is_split([m.assignment for m in members], PARTITIONS), "the others to take over")
        said = [line for line in kip848_broker.log_text().splitlines() if f"consumer group {group}: member " in line]
        assert any(line.endswith(" left") for line in said), "the member's leave moved its partitions"
        assert not any("fenced" in line for line in said), "not the end of its session"
        third = produce_batch(kip848, topic_name, 3, 5, PARTITIONS)
        wait_until(lambda: len(all_records(everyone)) >= len(first) + len(second) + len(third), "the third batch")
        time.sleep(SETTLE_S)
        assert all_records(everyone) == sorted(first | second | third), "a record was lost or consumed twice"
    finally:
        stop_all(members)


def test_a_regex_subscription_picks_up_a_topic_created_later(kip848: str, topic_name: str) -> None:
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    try:
        member, client = start("a", kip848, group, [f"^{topic_name}-.*"])
        members.append(member)
        confluent_create_topic(kip848, f"{topic_name}-1", 2)
        wait_until(lambda: client.topic_assignment == {(f"{topic_name}-1", 0), (f"{topic_name}-1", 1)},
                   "the member to be assigned the new topic")
        sent = produce_batch(kip848, f"{topic_name}-1", 1, 3, 2)
        wait_until(lambda: len(member.records) >= len(sent), "the records of the new topic")
        described = describe_raw(kip848, group)
        [only] = described["members"]
        assert f"^{topic_name}-.*" in only["subscribed_topic_regex"]  # librdkafka sends "(^...)"
        assert {t["topic_name"] for t in only["assignment"]["topic_partitions"]} == {f"{topic_name}-1"}
    finally:
        stop_all(members)


def test_a_static_member_comes_back_to_its_partitions_without_a_new_group_epoch(kip848: str, topic_name: str) -> None:
    confluent_create_topic(kip848, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    try:
        static, _ = start("static", kip848, group, [topic_name], **{"group.instance.id": "instance-1"})
        members.append(static)
        other, _ = start("other", kip848, group, [topic_name])
        members.append(other)
        wait_until(lambda: is_split([static.assignment, other.assignment], PARTITIONS), "two members to split")
        wait_until(lambda: describe_raw(kip848, group)["group_state"] == "Stable", "the group to be stable")
        owned = set(static.assignment)
        before = describe_raw(kip848, group)

        members.remove(static)
        static.stop()  # a static member leaves with epoch -2: it keeps its partitions for its session timeout
        again, _ = start("static-again", kip848, group, [topic_name], **{"group.instance.id": "instance-1"})
        members.append(again)
        wait_until(lambda: again.assignment == owned, "the static member to get its partitions back")
        after = describe_raw(kip848, group)
        assert after["group_epoch"] == before["group_epoch"], "the static member's return made a new group epoch"
        epochs = {m["client_id"]: m["member_epoch"] for m in before["members"]}
        assert {m["member_epoch"] for m in after["members"]} == set(epochs.values())
        assert other.assignment == ALL6 - owned
    finally:
        stop_all(members)


def test_admin_describes_and_lists_consumer_protocol_groups(kip848: str, topic_name: str) -> None:
    confluent_create_topic(kip848, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    admin = confluent_admin(kip848)
    members: list[ThreadedMember] = []
    try:
        member, _ = start("a", kip848, group, [topic_name], **{"client.id": "kip848-admin"})
        members.append(member)
        wait_until(lambda: member.assignment == ALL6, "the member to own every partition")
        wait_until(lambda: describe_raw(kip848, group)["group_state"] == "Stable", "the group to be stable")

        description = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)
        assert description.type == ConsumerGroupType.CONSUMER
        assert description.state == ConsumerGroupState.STABLE
        [only] = description.members
        assert only.client_id == "kip848-admin"
        assert {tp.partition for tp in only.assignment.topic_partitions} == ALL6

        def listed(kind: ConsumerGroupType) -> set[str]:
            result = admin.list_consumer_groups(types={kind}, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
            return {g.group_id for g in result.valid}

        assert group in listed(ConsumerGroupType.CONSUMER)
        assert group not in listed(ConsumerGroupType.CLASSIC)
    finally:
        stop_all(members)
    refused = admin.delete_consumer_groups([f"{group}-none"], request_timeout=TIMEOUT_S)[f"{group}-none"]
    with pytest.raises(KafkaException):
        refused.result(timeout=TIMEOUT_S)
    admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)
    assert group not in {
        g.group_id for g in admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S).valid
    }


def test_a_classic_group_and_a_consumer_protocol_group_read_the_same_topic(kip848: str, topic_name: str) -> None:
    confluent_create_topic(kip848, topic_name, PARTITIONS)
    members: list[ThreadedMember] = []
    try:
        classic = ThreadedMember("classic", lambda: KafkaPythonMember(kip848, f"classic-{topic_name}", topic_name))
        members.append(classic)
        modern, _ = start("modern", kip848, f"modern-{topic_name}", [topic_name])
        members.append(modern)
        sent = produce_batch(kip848, topic_name, 1, 4, PARTITIONS)
        wait_until(lambda: len(classic.records) >= len(sent) and len(modern.records) >= len(sent), "both groups to read")
        time.sleep(SETTLE_S)
        assert sorted(classic.records) == sorted(sent) and sorted(modern.records) == sorted(sent)
        admin = confluent_admin(kip848)
        result = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        kinds = {g.group_id: g.type for g in result.valid}
        assert kinds[f"classic-{topic_name}"] == ConsumerGroupType.CLASSIC
        assert kinds[f"modern-{topic_name}"] == ConsumerGroupType.CONSUMER
    finally:
        stop_all(members)


def test_the_consumer_protocol_can_be_turned_off(tmp_path: Path, topic_name: str) -> None:
    """Without "consumer" in group.coordinator.rebalance.protocols, ConsumerGroupHeartbeat is refused."""
    proc = BrokerProcess(tmp_path / "data", "group.coordinator.rebalance.protocols=classic").start()
    try:
        with RawConnection(proc.bootstrap) as conn:
            frame = conn.request(68, 1, {
                "group_id": "g", "member_id": "m-1", "member_epoch": 0, "rebalance_timeout_ms": 30000,
                "subscribed_topic_names": [topic_name], "topic_partitions": [],
            })
        answer = decode_response(68, 1, frame)[1]
        assert answer["error_code"] == 35  # UNSUPPORTED_VERSION
    finally:
        proc.stop()


def test_a_classic_group_is_upgraded_online_and_downgraded_when_the_new_member_leaves(kip848: str, topic_name: str) -> None:
    """KIP-848's online migration: a consumer-protocol member joins a kafka-python group with members (the group
    becomes a consumer-protocol group and the classic member keeps consuming in it), then leaves (it becomes a
    classic group again); every record is read once across the three phases."""
    confluent_create_topic(kip848, topic_name, PARTITIONS)
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    try:
        classic = ThreadedMember("classic", lambda: KafkaPythonMember(kip848, group, topic_name))
        members.append(classic)
        wait_until(lambda: classic.assignment == ALL6, "the classic member to own every partition")
        first = produce_batch(kip848, topic_name, 1, 3, PARTITIONS)
        wait_until(lambda: len(classic.records) >= len(first), "the first batch")

        modern, _ = start("modern", kip848, group, [topic_name])
        members.append(modern)
        wait_until(lambda: is_split([classic.assignment, modern.assignment], PARTITIONS), "the two members to split")
        described = describe_raw(kip848, group)
        assert {m["member_type"] for m in described["members"]} == {0, 1}  # a classic and a consumer-protocol member
        second = produce_batch(kip848, topic_name, 2, 3, PARTITIONS)
        wait_until(lambda: len(classic.records) + len(modern.records) >= len(first) + len(second), "the second batch")

        members.remove(modern)
        modern.stop()
        wait_until(lambda: classic.assignment == ALL6, "the classic member to own every partition again")
        assert describe_raw(kip848, group)["error_code"] == 69  # GROUP_ID_NOT_FOUND: a classic group again
        third = produce_batch(kip848, topic_name, 3, 3, PARTITIONS)
        expected = len(first) + len(second) + len(third)
        wait_until(lambda: len(classic.records) + len(modern.records) >= expected, "the third batch")
        time.sleep(SETTLE_S)
        assert sorted(classic.records + modern.records) == sorted(first | second | third)
    finally:
        stop_all(members)
