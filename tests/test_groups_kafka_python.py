"""Consumer groups with kafka-python: sharing, takeover, resuming from commits, restart, admin (including
OffsetDelete and removing a static member by instance id), and a member that dies without leaving.
Eager (range, roundrobin) and cooperative-sticky assignors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import MemberToRemove
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import GroupSubscribedToTopicError

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, confluent_create_topic
from tests.grouputil import (
    ALL,
    GROUP_PARTITIONS,
    SETTLE_S,
    KafkaPythonMember,
    ThreadedMember,
    produce_batch,
    share_take_over_and_resume,
    silent_member_is_removed,
    stop_all,
    wait_until,
)


def member(name: str, bootstrap: str, group: str, topic: str, **config: Any) -> ThreadedMember:
    return ThreadedMember(name, lambda: KafkaPythonMember(bootstrap, group, topic, **config))


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    try:
        yield client
    finally:
        client.close()


def committed(admin: KafkaAdminClient, group: str) -> dict[int, int]:
    return {tp.partition: meta.offset for tp, meta in admin.list_group_offsets({group: None})[group].items()}


@pytest.mark.parametrize(
    "assignor", [RangePartitionAssignor, RoundRobinPartitionAssignor, CooperativeStickyAssignor], ids=lambda a: a.name
)
def test_members_share_take_over_and_resume(bootstrap: str, topic_name: str, assignor: type) -> None:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    config = {"partition_assignment_strategy": [assignor]}
    share_take_over_and_resume(bootstrap, topic_name, lambda name: member(name, bootstrap, group, topic_name, **config))


def test_committed_offsets_survive_a_restart(fresh_broker: BrokerProcess, topic_name: str) -> None:
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    first = produce_batch(bootstrap, topic_name, 1, 3)
    members: list[ThreadedMember] = []
    try:
        a = member("a", bootstrap, group, topic_name)
        members.append(a)
        wait_until(lambda: len(a.records) >= len(first), "the first batch")
        stop_all(members)
        fresh_broker.restart()
        probe = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        try:
            assert {p: probe.committed(TopicPartition(topic_name, p)) for p in ALL} == {p: 3 for p in ALL}
        finally:
            probe.close()
        second = produce_batch(bootstrap, topic_name, 2, 2)
        b = member("b", bootstrap, group, topic_name)
        members.append(b)
        wait_until(lambda: len(b.records) >= len(second), "the second batch after the restart")
        time.sleep(SETTLE_S)
        assert sorted(b.records) == sorted(second)
    finally:
        stop_all(members)


def test_admin_lists_describes_and_deletes(admin: KafkaAdminClient, bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    sent = produce_batch(bootstrap, topic_name, 1, 2)
    members: list[ThreadedMember] = []
    try:
        a = member("a", bootstrap, group, topic_name, client_id="kp-admin-test")
        members.append(a)
        wait_until(lambda: len(a.records) >= len(sent), "the messages")

        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["protocol_type"] == "consumer" and listed[group]["group_state"] == "Stable"
        assert group in {g["group_id"] for g in admin.list_groups(states_filter=["Stable"])}
        assert group not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}

        description = admin.describe_groups([group])[group]
        assert (description["group_state"], description["protocol_type"], description["protocol_data"]) == (
            "Stable", "consumer", "range"
        )
        [only] = description["members"]
        assert only["client_id"] == "kp-admin-test"
        assert only["member_metadata"]["topics"] == [topic_name]

        assert committed(admin, group) == {p: 2 for p in ALL}
        refused = admin.delete_group_offsets(group, [TopicPartition(topic_name, 0)])
        assert refused == {TopicPartition(topic_name, 0): GroupSubscribedToTopicError}
        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}

        stop_all(members)
        errors = admin.delete_group_offsets(group, [TopicPartition(topic_name, 0)])
        assert [e.__name__ for e in errors.values()] == ["NoError"]
        assert committed(admin, group) == {1: 2, 2: 2, 3: 2}
        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.describe_groups([group])[group]["group_state"] == "Dead"
    finally:
        stop_all(members)


def test_static_member_restarts_without_rebalance_and_is_removed_by_instance_id(
    admin: KafkaAdminClient, bootstrap: str, topic_name: str
) -> None:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    members: list[ThreadedMember] = []
    try:
        for name in ("first run", "restarted"):
            static = member(name, bootstrap, group, topic_name, group_instance_id="instance-1")
            members.append(static)
            wait_until(lambda: static.assignment == ALL, f"the {name} static member to own every partition")
            stop_all(members)  # a static member sends no LeaveGroup: it stays in the group
            [kept] = admin.describe_groups([group])[group]["members"]
            assert kept["group_instance_id"] == "instance-1"
        result = admin.remove_group_members(group, [MemberToRemove(member_id=None, group_instance_id="instance-1")])
        assert all(error is None or error.__name__ == "NoError" for error in dict(result).values()), result
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
    finally:
        stop_all(members)


def test_a_member_that_stops_heartbeating_is_removed(tmp_path: Path, topic_name: str) -> None:
    silent_member_is_removed(
        tmp_path / "data", topic_name, "kafka-python",
        lambda name, bootstrap, group: member(name, bootstrap, group, topic_name),
    )
