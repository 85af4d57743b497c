"""The coordinators' internal topics: created by their own rules (also when a client's Metadata names them), written
under the flush policy, and the group coordinator's view of deleted topics. In-process brokers, hand-made requests
and aiokafka."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka import TopicPartition as AIOTopicPartition
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response, encode_request
from minibroker.protocol.records import build_batch

from minibroker.testing import Broker
from tests.clientutil import RawConnection

PRODUCE, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 0, 3, 8, 9, 10
CREATE_TOPICS, DELETE_TOPICS, WRITE_TXN_MARKERS = 19, 20, 27
TIMEOUT_S = 20


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        _, response = decode_response(api_key, version, conn.request(api_key, version, body))
    return response


async def acall(broker: Broker, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """A blocking hand-made request, off the loop the broker runs on."""
    return await asyncio.to_thread(call, broker.bootstrap_servers, api_key, version, body)


async def metadata(broker: Broker, *names: str) -> dict[str, dict[str, Any]]:
    answer = await acall(broker, METADATA, 9, {
        "topics": [{"name": name} for name in names], "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False,
    })
    return {topic["name"]: topic for topic in answer["topics"]}


async def test_metadata_creates_internal_topics_as_their_coordinators_do() -> None:
    """As Kafka's AutoTopicCreationManager: offsets.topic.num.partitions and transaction.state.log.num.partitions,
    compacted, not num.partitions."""
    async with Broker(num_partitions=3, offsets_topic_num_partitions=2, transaction_state_log_num_partitions=4) as broker:
        topics = await metadata(broker, "__consumer_offsets", "__transaction_state", "plain")
        assert {name: (t["error_code"], len(t["partitions"])) for name, t in topics.items()} == {
            "__consumer_offsets": (ErrorCode.NONE, 2), "__transaction_state": (ErrorCode.NONE, 4),
            "plain": (ErrorCode.NONE, 3),
        }
        assert topics["__consumer_offsets"]["is_internal"] and not topics["plain"]["is_internal"]
        for name in ("__consumer_offsets", "__transaction_state"):
            assert broker.core.topic(name).config.compact, f"{name} is not compacted"
        assert not broker.core.topic("plain").config.compact


async def test_metadata_without_auto_creation_leaves_internal_topics_alone() -> None:
    async with Broker(auto_create_topics_enable=False) as broker:
        topics = await metadata(broker, "__consumer_offsets")
        assert topics["__consumer_offsets"]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert broker.core.topic("__consumer_offsets") is None


def fully_flushed(broker: Broker, topic: str) -> bool:
    partition_log = broker.core.partition(topic, 0)
    return partition_log.log_end_offset > 0 and partition_log.recovery_point == partition_log.log_end_offset


async def test_coordinator_writes_are_flushed_before_the_answer_with_flush_messages_1() -> None:
    """log.flush.interval.messages=1: __transaction_state records and the markers and transactional offset commits in
    __consumer_offsets are fsynced before the client hears back, as Produce's batches are."""
    settings = {"log.flush.interval.messages": 1, "offsets.topic.num.partitions": 1,
                "transaction.state.log.num.partitions": 1}
    async with Broker(settings) as broker:
        await acall(broker, CREATE_TOPICS, 5, {"topics": [
            {"name": "source", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        ], "timeout_ms": 5000, "validate_only": False})
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id="flushed")
        try:
            await producer.start()  # InitProducerId
            assert fully_flushed(broker, "__transaction_state")
            async with asyncio.timeout(TIMEOUT_S):
                await producer.begin_transaction()
                await producer.send_offsets_to_transaction({AIOTopicPartition("source", 0): 4}, "flushed-group")
                assert fully_flushed(broker, "__transaction_state")  # AddOffsetsToTxn
                assert fully_flushed(broker, "__consumer_offsets")  # TxnOffsetCommit
                await producer.commit_transaction()
            assert fully_flushed(broker, "__transaction_state")  # EndTxn
            assert fully_flushed(broker, "__consumer_offsets")  # its marker
        finally:
            await producer.stop()


async def test_write_txn_markers_are_flushed_before_the_answer_with_flush_messages_1() -> None:
    """WriteTxnMarkers (Admin.abortTransaction) honours the flush policy as the coordinator's own markers do."""
    async with Broker({"log.flush.interval.messages": 1}) as broker:
        await acall(broker, CREATE_TOPICS, 5, {"topics": [
            {"name": "hanging", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        ], "timeout_ms": 5000, "validate_only": False})
        partition_log = broker.core.partition("hanging", 0)
        marker = {"producer_id": 7, "producer_epoch": 0, "transaction_result": False,
                  "topics": [{"name": "hanging", "partition_indexes": [0]}], "coordinator_epoch": 0}
        [result] = (await acall(broker, WRITE_TXN_MARKERS, 1, {"markers": [marker]}))["markers"]
        assert result["topics"][0]["partitions"] == [{"partition_index": 0, "error_code": 0}]
        assert partition_log.log_end_offset == 1 and fully_flushed(broker, "hanging")


async def test_deleting_a_topic_deletes_the_groups_offsets_of_it() -> None:
    """As Kafka's onPartitionsDeleted: a topic created again under the same name starts with no committed offsets,
    also after a restart (the offsets were tombstoned)."""
    def create(name: str) -> dict[str, Any]:
        return {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}

    def commit(topic: str) -> dict[str, Any]:
        return {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]}

    async def fetched(topic: str) -> int:
        answer = await acall(broker, OFFSET_FETCH, 6, {
            "group_id": "g", "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": False,
        })
        return answer["topics"][0]["partitions"][0]["committed_offset"]

    async with Broker(offsets_topic_num_partitions=1) as broker:
        await acall(broker, CREATE_TOPICS, 5, {"topics": [create("doomed"), create("kept")], "timeout_ms": 5000,
                                               "validate_only": False})
        await acall(broker, FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})  # as clients do: it makes the topic
        answer = await acall(broker, OFFSET_COMMIT, 8, {
            "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [commit("doomed"), commit("kept")],
        })
        assert [p["error_code"] for t in answer["topics"] for p in t["partitions"]] == [ErrorCode.NONE, ErrorCode.NONE]
        deleted = await acall(broker, DELETE_TOPICS, 4, {"topic_names": ["doomed"], "timeout_ms": 5000})
        assert deleted["responses"][0]["error_code"] == ErrorCode.NONE
        await acall(broker, CREATE_TOPICS, 5, {"topics": [create("doomed")], "timeout_ms": 5000, "validate_only": False})
        assert (await fetched("doomed"), await fetched("kept")) == (-1, 5)
        await broker.arestart()
        assert (await fetched("doomed"), await fetched("kept")) == (-1, 5)


async def test_topic_creation_outlives_a_requester_that_goes_away() -> None:
    """Partitions are made off the event loop; a requester cancelled meanwhile (its connection closed, as librdkafka
    does with its bootstrap connection) neither stops the creation nor leaves the name taken, and concurrent
    requesters of an internal topic share one creation."""
    async with Broker(offsets_topic_num_partitions=20) as broker:
        core = broker.core
        abandoned = asyncio.ensure_future(core.create_topic("wide", 20, {}))
        await asyncio.sleep(0)
        abandoned.cancel()
        info = await core.topic_created("wide")
        assert info is not None and len(info.partitions) == 20
        assert await core.create_topic("wide", 1, {}) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'wide' already exists.")
        first, second = await asyncio.gather(core.groups.topic.create(), core.groups.topic.create())
        assert first is second and len(first.partitions) == 20


async def test_clients_cannot_produce_to_internal_topics() -> None:
    """As Kafka's ReplicaManager: INVALID_TOPIC_EXCEPTION for an internal topic unless the client id is
    "__admin_client"; a user topic whose name merely starts with "__" is an ordinary topic."""
    def produce(client_id: str, topic: str) -> dict[str, Any]:
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v")])}]}]}
        with RawConnection(broker.bootstrap_servers) as conn:
            conn.send(encode_request(PRODUCE, 9, 1, client_id, body))
            _, answer = decode_response(PRODUCE, 9, conn.recv_frame())
        return answer["responses"][0]["partition_responses"][0]

    async with Broker(offsets_topic_num_partitions=1) as broker:
        await broker.core.groups.topic.create()
        await acall(broker, CREATE_TOPICS, 5, {"topics": [
            {"name": "__mine", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        ], "timeout_ms": 5000, "validate_only": False})
        refused = await asyncio.to_thread(produce, "rdkafka", "__consumer_offsets")
        assert refused["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert refused["error_message"] == "Cannot append to internal topic __consumer_offsets"
        assert broker.core.partition("__consumer_offsets", 0).log_end_offset == 0
        assert (await asyncio.to_thread(produce, "__admin_client", "__consumer_offsets"))["error_code"] == ErrorCode.NONE
        assert (await asyncio.to_thread(produce, "rdkafka", "__mine"))["error_code"] == ErrorCode.NONE
        topics = await metadata(broker, "__mine", "__consumer_offsets")
        assert not topics["__mine"]["is_internal"] and topics["__consumer_offsets"]["is_internal"]
