"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92): the start offsets
of a share group's partitions (KIP-932), as Kafka's KafkaApis and GroupCoordinatorService answer them.

The group coordinator answers them (NOT_COORDINATOR elsewhere); the offsets are those the share partitions hold
(minibroker/share/manager.py), and altering or deleting them needs the share group to be empty, which membership
tells. Since Kafka 4.2 (KAFKA-19662) altering them creates a share group that does not exist yet, so its start
offsets are set before any consumer joins; an emulated 4.1 answers GROUP_ID_NOT_FOUND, as deleting them does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from minibroker.acls.operations import DELETE, DESCRIBE, GROUP, READ, TOPIC
from minibroker.handlers.groups import coordinator
from minibroker.handlers.registry import api
from minibroker.handlers.share_groups import share_groups_enabled
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.primitives import ZERO_UUID
from minibroker.protocol.share_state import SharePartitionKey
from minibroker.server.context import RequestContext

if TYPE_CHECKING:
    from minibroker.storage.log_manager import TopicInfo

UNINITIALIZED = -1  # Kafka's PartitionFactory.UNINITIALIZED_START_OFFSET
DEFAULT_LEADER_EPOCH = 0
NO_LAG = -1
CREATES_GROUP_SINCE = "4.2"  # AlterShareGroupOffsets creates a missing share group (KAFKA-19662, apache/kafka#20708)


def coordinator_error(ctx: RequestContext, group_id: str) -> ErrorCode:
    """INVALID_GROUP_ID for no id, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS where this node does not serve the
    group's partition, else NONE."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID
    return coordinator(ctx).availability(group_id)


def creates_missing_groups(ctx: RequestContext) -> bool:
    """Whether AlterShareGroupOffsets creates a share group that does not exist (the release emulated, if any)."""
    from minibroker.config.releases import emulates_before

    return not emulates_before(ctx.broker.config.kafka_version, CREATES_GROUP_SINCE)


def allowed(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    return ctx.broker.authorizer is None or ctx.allowed(operation, resource_type, name)


# ---- DescribeShareGroupOffsets ----


@api(90, 0, 1)
async def describe_share_group_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    manager = ctx.broker.share_partitions
    await manager.ready()
    return {"groups": [describe_group(ctx, group) for group in body["groups"]]}


def describe_group(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    group_id = request["group_id"]
    answer: dict[str, Any] = {"group_id": group_id, "topics": [], "error_code": NO_ERROR, "error_message": None}
    if not share_groups_enabled(ctx):
        return {**answer, "error_code": ErrorCode.UNSUPPORTED_VERSION}
    if not allowed(ctx, DESCRIBE, GROUP, group_id):
        return {**answer, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = coordinator_error(ctx, group_id)
    if error != NO_ERROR:
        return {**answer, "error_code": error}
    broker = ctx.broker
    if request["topics"] is None:  # every initialized share partition of the group, of the topics it may describe
        by_topic: dict[bytes, list[int]] = {}
        for topic_id, index in sorted(broker.share_partitions.start_offsets(group_id)):
            by_topic.setdefault(topic_id, []).append(index)
        named = [(broker.topic_name(topic_id), topic_id, indexes) for topic_id, indexes in by_topic.items()]
        answer["topics"] = [
            described_topic(ctx, group_id, name, topic_id, indexes)
            for name, topic_id, indexes in named if name is not None and allowed(ctx, DESCRIBE, TOPIC, name)
        ]
        return answer
    refused = []
    for topic in request["topics"]:
        name = topic["topic_name"]
        if not allowed(ctx, DESCRIBE, TOPIC, name):
            refused.append({"topic_name": name, "topic_id": ZERO_UUID, "partitions": [
                {**uninitialized(index), "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 "error_message": "Topic authorization failed."}
                for index in topic["partitions"]
            ]})
            continue
        info = broker.topic(name)
        if info is None:  # absence of data, not an error (as OffsetFetch)
            answer["topics"].append({"topic_name": name, "topic_id": ZERO_UUID, "partitions": [
                uninitialized(index) for index in topic["partitions"]]})
            continue
        answer["topics"].append(described_topic(ctx, group_id, name, info.topic_id, topic["partitions"]))
    answer["topics"] += refused
    return answer


def uninitialized(index: int) -> dict[str, Any]:
    return {
        "partition_index": index, "start_offset": UNINITIALIZED, "leader_epoch": DEFAULT_LEADER_EPOCH, "lag": NO_LAG,
        "error_code": NO_ERROR, "error_message": None,
    }


def described_topic(ctx: RequestContext, group_id: str, name: str, topic_id: bytes, indexes: list[int]) -> dict[str, Any]:
    manager = ctx.broker.share_partitions
    started = manager.start_offsets(group_id)
    partitions = []
    for index in indexes:
        answer = uninitialized(index)
        state = started.get((topic_id, index))
        if state is not None:
            lag = manager.lag(SharePartitionKey(group_id, topic_id, index))
            answer.update(start_offset=state[0], leader_epoch=state[1], lag=NO_LAG if lag is None else lag)
        partitions.append(answer)
    return {"topic_name": name, "topic_id": topic_id, "partitions": partitions}


# ---- AlterShareGroupOffsets ----


@api(91, 0, 0)
async def alter_share_group_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    group_id = body["group_id"]
    refused = await change_refusal(ctx, group_id, READ)
    if refused is not None:
        return refused
    erroneous, valid = checked_topics(ctx, body["topics"])
    groups = coordinator(ctx)
    error, message = groups.share_offsets_refusal(group_id, creates_missing_groups(ctx))
    if error == NO_ERROR:  # the group's record first, then the share partitions' state, as Kafka's coordinator
        error = groups.share.initialize(group_id, initialized_partitions(valid))
        await ctx.broker.groups.flush()
    if error != NO_ERROR:
        return offsets_error(error, message)
    altered = [altered_topic(ctx, group_id, topic, info) for topic, info in valid]
    await ctx.broker.share_partitions.flush()
    return {"error_code": NO_ERROR, "error_message": None, "responses": erroneous + altered}


def checked_topics(
    ctx: RequestContext, topics: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], TopicInfo]]]:
    """The answers of the topics that cannot be altered (READ denied, unknown), and the others with their topic."""
    erroneous, valid = [], []
    for topic in topics:
        name = topic["topic_name"]
        info = ctx.broker.topic(name)
        error = (ErrorCode.TOPIC_AUTHORIZATION_FAILED if not allowed(ctx, READ, TOPIC, name)
                 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else NO_ERROR)
        if error != NO_ERROR:
            erroneous.append({"topic_name": name, "topic_id": info.topic_id if info is not None else ZERO_UUID, "partitions": [
                {"partition_index": p["partition_index"], "error_code": error, "error_message": None} for p in topic["partitions"]
            ]})
        else:
            valid.append((topic, info))
    return erroneous, valid


def altered_topic(ctx: RequestContext, group_id: str, topic: dict[str, Any], info: TopicInfo) -> dict[str, Any]:
    """One topic's partitions started again at their new offsets (a partition the topic does not have: unknown)."""
    partitions = []
    for partition in topic["partitions"]:
        index = partition["partition_index"]
        if index < len(info.partitions):
            key = SharePartitionKey(group_id, info.topic_id, index)
            change = ctx.broker.share_partitions.alter_start_offset
            partitions.append({"partition_index": index, **written(change, key, partition["start_offset"])})
        else:
            partitions.append({"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "error_message": None})
    return {"topic_name": topic["topic_name"], "topic_id": info.topic_id, "partitions": partitions}


def initialized_partitions(valid: list[tuple[dict[str, Any], TopicInfo]]) -> dict[bytes, tuple[str, frozenset[int]]]:
    """The share partitions an alteration initializes (topic id -> (name, indexes)): those of the existing topics named,
    each topic listed even when none of its partitions exists, as Kafka's initializing topics."""
    return {
        info.topic_id: (topic["topic_name"], frozenset(
            p["partition_index"] for p in topic["partitions"] if p["partition_index"] < len(info.partitions)))
        for topic, info in valid
    }


def written(change: Callable[..., None], *args: Any) -> dict[str, Any]:
    """A change of the stored state: its error code and message (the store's refusal, else none)."""
    from minibroker.share.state_store import ShareStateWriteError

    try:
        change(*args)
    except ShareStateWriteError as exc:
        return {"error_code": exc.error, "error_message": str(exc)}
    return {"error_code": NO_ERROR, "error_message": None}


async def change_refusal(ctx: RequestContext, group_id: str, operation: int) -> dict[str, Any] | None:
    """What Alter/DeleteShareGroupOffsets answer before looking at topics (share groups off, the group's ACL
    ``operation`` denied, not this group's coordinator), else None once the share partitions are ready."""
    if not share_groups_enabled(ctx):
        return offsets_error(ErrorCode.UNSUPPORTED_VERSION)
    if not allowed(ctx, operation, GROUP, group_id):
        return offsets_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = coordinator_error(ctx, group_id)
    if error != NO_ERROR:
        return offsets_error(error)
    await ctx.broker.share_partitions.ready()
    return None


def offsets_error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    """Kafka's getErrorResponse of Alter/DeleteShareGroupOffsets: the error alone."""
    return {"error_code": error, "error_message": message, "responses": []}


# ---- DeleteShareGroupOffsets ----


@api(92, 0, 0)
async def delete_share_group_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    group_id = body["group_id"]
    refused = await change_refusal(ctx, group_id, DELETE)
    if refused is not None:
        return refused
    manager = ctx.broker.share_partitions
    denied, wanted = [], []
    for topic in body["topics"]:
        name = topic["topic_name"]
        if allowed(ctx, READ, TOPIC, name):
            wanted.append(name)
        else:
            denied.append({"topic_name": name, "topic_id": ZERO_UUID, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            "error_message": "Topic authorization failed."})
    error, message = coordinator(ctx).share_offsets_refusal(group_id, creates=False)
    if error != NO_ERROR:
        return offsets_error(error, message)
    started = manager.start_offsets(group_id)
    erroneous, deleted = [], []
    for name in wanted:
        info = ctx.broker.topic(name)
        indexes = [] if info is None else [index for topic_id, index in started if topic_id == info.topic_id]
        if info is None:
            erroneous.append({"topic_name": name, "topic_id": ZERO_UUID, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": None})
        elif not indexes:
            erroneous.append({"topic_name": name, "topic_id": ZERO_UUID, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": "There is no offset information to delete."})
        else:
            results = [written(manager.delete, SharePartitionKey(group_id, info.topic_id, index)) for index in indexes]
            failed = [result for result in results if result["error_code"] != NO_ERROR]
            deleted.append({"topic_name": name, "topic_id": info.topic_id, **(failed[0] if failed else results[0])})
    await manager.flush()
    return {"error_code": NO_ERROR, "error_message": None, "responses": denied + erroneous + deleted}
