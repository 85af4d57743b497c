"""Consumer groups with confluent-kafka (librdkafka): sharing, takeover, resuming from commits, restart,
admin, and a member that dies without leaving. Eager (range, roundrobin) and cooperative-sticky assignors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, confluent_admin, confluent_create_topic
from tests.grouputil import (
    ALL,
    GROUP_PARTITIONS,
    HEARTBEAT_MS,
    SETTLE_S,
    ConfluentMember,
    ThreadedMember,
    produce_batch,
    share_take_over_and_resume,
    silent_member_is_removed,
    stop_all,
    wait_until,
)


def member(name: str, bootstrap: str, group: str, topic: str, **config: Any) -> ThreadedMember:
    return ThreadedMember(
        name, lambda: ConfluentMember(bootstrap, group, [topic], {"heartbeat.interval.ms": HEARTBEAT_MS, **config}),
    )


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_members_share_take_over_and_resume(bootstrap: str, topic_name: str, strategy: str) -> None:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    config = {"partition.assignment.strategy": strategy}
    share_take_over_and_resume(bootstrap, topic_name, lambda name: member(name, bootstrap, group, topic_name, **config))


def committed(bootstrap: str, group: str) -> dict[int, int]:
    admin = confluent_admin(bootstrap)
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT_S)[group]
    return {tp.partition: tp.offset for tp in future.result(timeout=TIMEOUT_S).topic_partitions}


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
        assert committed(bootstrap, group) == {p: 3 for p in ALL}

        fresh_broker.restart()
        assert committed(bootstrap, group) == {p: 3 for p in ALL}
        second = produce_batch(bootstrap, topic_name, 2, 2)
        b = member("b", bootstrap, group, topic_name)
        members.append(b)
        wait_until(lambda: len(b.records) >= len(second), "the second batch after the restart")
        time.sleep(SETTLE_S)
        assert sorted(b.records) == sorted(second)
    finally:
        stop_all(members)
    assert "loaded 1 group(s)" in fresh_broker.log_text()


def test_admin_lists_describes_and_deletes_groups(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    sent = produce_batch(bootstrap, topic_name, 1, 2)
    admin = confluent_admin(bootstrap)
    members: list[ThreadedMember] = []
    try:
        a = member("a", bootstrap, group, topic_name, **{"client.id": "admin-test"})
        members.append(a)
        wait_until(lambda: len(a.records) >= len(sent), "the messages")

        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        states = {g.group_id: g.state for g in listed.valid}
        assert states[group] == ConsumerGroupState.STABLE

        description = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)
        assert description.state == ConsumerGroupState.STABLE
        assert description.partition_assignor == "range"
        [only] = description.members
        assert only.client_id == "admin-test" and only.host.startswith("/127.0.0.1")
        assert {tp.partition for tp in only.assignment.topic_partitions} == ALL

        assert committed(bootstrap, group) == {p: 2 for p in ALL}

        refused = admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group]
        with pytest.raises(KafkaException) as info:
            refused.result(timeout=TIMEOUT_S)
        assert info.value.args[0].code() == KafkaError.NON_EMPTY_GROUP

        stop_all(members)
        admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        assert group not in {g.group_id for g in listed.valid}
        assert committed(bootstrap, group) == {}
    finally:
        stop_all(members)


def test_a_member_that_stops_heartbeating_is_removed(tmp_path: Path, topic_name: str) -> None:
    def one_member_left(bootstrap: str, group: str) -> None:
        admin = confluent_admin(bootstrap)
        description = admin.describe_consumer_groups([group])[group].result(timeout=TIMEOUT_S)
        assert len(description.members) == 1

    silent_member_is_removed(
        tmp_path / "data", topic_name, "confluent",
        lambda name, bootstrap, group: member(name, bootstrap, group, topic_name), one_member_left,
    )
