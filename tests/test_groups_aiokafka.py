"""Consumer groups with aiokafka, which speaks only the old non-flexible group APIs (JoinGroup <= 5,
SyncGroup <= 3, Heartbeat/LeaveGroup <= 1, OffsetCommit 2-3, OffsetFetch 1-3, FindCoordinator <= 1):
sharing, takeover, resuming from commits, restart, admin, and a member that dies without leaving.
aiokafka has only eager assignors (range, roundrobin, sticky)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Iterator

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.protocol.admin import DeleteGroupsRequest
from minibroker.protocol.errors import ErrorCode

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, confluent_create_topic
from tests.grouputil import (
    ALL,
    GROUP_PARTITIONS,
    HEARTBEAT_MS,
    KILLED_SESSION_MS,
    SETTLE_S,
    SHORT_SESSION_SETTINGS,
    Consumed,
    MemberProcess,
    TaskMember,
    assert_split,
    async_wait_until,
    is_split,
    member_settings,
    produce_batch,
)


class AiokafkaMember:
    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer

    @classmethod
    async def start(cls, bootstrap: str, group: str, topic: str, **config: Any) -> AiokafkaMember:
        consumer = AIOKafkaConsumer(topic, **member_settings(bootstrap, group, config))
        await consumer.start()
        return cls(consumer)

    async def poll_records(self) -> list[Consumed]:
        batches = await self.consumer.getmany(timeout_ms=100)
        return [(tp.partition, record.value) for tp, records in batches.items() for record in records]

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def commit(self) -> None:
        await self.consumer.commit()

    async def close(self) -> None:
        await self.consumer.stop()


def member(name: str, bootstrap: str, group: str, topic: str, **config: Any) -> TaskMember:
    return TaskMember(name, lambda: AiokafkaMember.start(bootstrap, group, topic, **config))


async def stop_all(members: list[TaskMember]) -> None:
    while members:
        await members.pop().stop()


@pytest.fixture
def topic(bootstrap: str, topic_name: str) -> Iterator[str]:
    confluent_create_topic(bootstrap, topic_name, GROUP_PARTITIONS)
    yield topic_name


@pytest.mark.parametrize(
    "assignor", [RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor], ids=lambda a: a.name
)
async def test_members_share_take_over_and_resume(bootstrap: str, topic: str, assignor: type) -> None:
    group = f"g-{topic}"
    config = {"partition_assignment_strategy": (assignor,)}
    members: list[TaskMember] = []
    try:
        a = member("a", bootstrap, group, topic, **config)
        members.append(a)
        await async_wait_until(lambda: a.assignment == ALL, "the first member to own every partition")
        b = member("b", bootstrap, group, topic, **config)
        members.append(b)
        await async_wait_until(lambda: is_split([a.assignment, b.assignment]), "two members to split the partitions")
        assert_split([a.assignment, b.assignment])

        first = await asyncio.to_thread(produce_batch, bootstrap, topic, 1, 5)
        await async_wait_until(lambda: len(a.records) + len(b.records) >= len(first), "the first batch")
        await asyncio.sleep(SETTLE_S)
        assert {p for p, _ in a.records} <= a.assignment and {p for p, _ in b.records} <= b.assignment
        assert sorted(a.records + b.records) == sorted(first)

        await b.stop()
        members.remove(b)
        await async_wait_until(lambda: a.assignment == ALL, "the remaining member to take over every partition")
        seen = len(a.records)
        second = await asyncio.to_thread(produce_batch, bootstrap, topic, 2, 5)
        await async_wait_until(lambda: len(a.records) - seen >= len(second), "the second batch")
        await asyncio.sleep(SETTLE_S)
        assert sorted(a.records[seen:]) == sorted(second)

        await a.stop()
        members.remove(a)
        third = await asyncio.to_thread(produce_batch, bootstrap, topic, 3, 5)
        c = member("c", bootstrap, group, topic, **config)
        members.append(c)
        await async_wait_until(lambda: len(c.records) >= len(third), "a new member to consume the third batch")
        await asyncio.sleep(SETTLE_S)
        assert sorted(c.records) == sorted(third)
    finally:
        await stop_all(members)


async def committed(bootstrap: str, group: str) -> dict[int, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items()}


async def test_committed_offsets_survive_a_restart(fresh_broker: BrokerProcess, topic_name: str) -> None:
    await asyncio.to_thread(fresh_broker.start)
    bootstrap = fresh_broker.bootstrap
    await asyncio.to_thread(confluent_create_topic, bootstrap, topic_name, GROUP_PARTITIONS)
    group = f"g-{topic_name}"
    first = await asyncio.to_thread(produce_batch, bootstrap, topic_name, 1, 3)
    members: list[TaskMember] = []
    try:
        a = member("a", bootstrap, group, topic_name)
        members.append(a)
        await async_wait_until(lambda: len(a.records) >= len(first), "the first batch")
        await stop_all(members)
        await asyncio.to_thread(fresh_broker.restart)
        probe = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        await probe.start()
        try:
            assert {p: await probe.committed(TopicPartition(topic_name, p)) for p in ALL} == {p: 3 for p in ALL}
        finally:
            await probe.stop()
        second = await asyncio.to_thread(produce_batch, bootstrap, topic_name, 2, 2)
        b = member("b", bootstrap, group, topic_name)
        members.append(b)
        await async_wait_until(lambda: len(b.records) >= len(second), "the second batch after the restart")
        await asyncio.sleep(SETTLE_S)
        assert sorted(b.records) == sorted(second)
    finally:
        await stop_all(members)


async def test_admin_lists_describes_and_deletes(bootstrap: str, topic: str) -> None:
    group = f"g-{topic}"
    sent = await asyncio.to_thread(produce_batch, bootstrap, topic, 1, 2)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    await admin.start()
    members: list[TaskMember] = []
    try:
        a = member("a", bootstrap, group, topic, client_id="aio-admin-test")
        members.append(a)
        await async_wait_until(lambda: len(a.records) >= len(sent), "the messages")

        assert (group, "consumer") in [tuple(g[:2]) for g in await admin.list_consumer_groups()]
        [response] = await admin.describe_consumer_groups([group])
        [described] = response.groups
        error_code, group_id, state, protocol_type, protocol = described[:5]
        assert (error_code, group_id, state, protocol_type, protocol) == (0, group, "Stable", "consumer", "roundrobin")
        [only] = described[5]
        assert only[1] == "aio-admin-test" and only[2].startswith("/127.0.0.1")

        assert await committed(bootstrap, group) == {p: 2 for p in ALL}

        # aiokafka has DeleteGroups on the wire but no admin method for it
        coordinator = await admin.find_coordinator(group)
        refused = await admin._send_request(DeleteGroupsRequest([group]), coordinator)
        assert [tuple(r) for r in refused.results] == [(group, ErrorCode.NON_EMPTY_GROUP)]
        await stop_all(members)
        deleted = await admin._send_request(DeleteGroupsRequest([group]), coordinator)
        assert [tuple(r) for r in deleted.results] == [(group, ErrorCode.NONE)]
        assert group not in [g[0] for g in await admin.list_consumer_groups()]
        assert await committed(bootstrap, group) == {}
    finally:
        await stop_all(members)
        await admin.close()


async def test_a_member_that_stops_heartbeating_is_removed(tmp_path: Path, topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", *SHORT_SESSION_SETTINGS)
    await asyncio.to_thread(broker.start)
    silent: MemberProcess | None = None
    members: list[TaskMember] = []
    try:
        await asyncio.to_thread(confluent_create_topic, broker.bootstrap, topic_name, GROUP_PARTITIONS)
        group = f"g-{topic_name}"
        silent = MemberProcess("aiokafka", broker.bootstrap, group, topic_name, KILLED_SESSION_MS)
        await async_wait_until(lambda: silent.assignment == ALL, "the member process to own every partition")
        a = member("a", broker.bootstrap, group, topic_name)
        members.append(a)
        await async_wait_until(lambda: is_split([a.assignment, silent.assignment]), "the partitions to be split")
        silent.kill()
        took = await async_wait_until(lambda: a.assignment == ALL, "the survivor to own every partition", TIMEOUT_S)
        assert took >= KILLED_SESSION_MS / 1000 - 2 * HEARTBEAT_MS / 1000
    finally:
        await stop_all(members)
        if silent is not None:
            silent.kill()
        await asyncio.to_thread(broker.stop)
