"""Consumer group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit,
OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete, and the consumer group protocol of KIP-848
(ConsumerGroupHeartbeat, ConsumerGroupDescribe).

These handlers only translate between API versions and the coordinator (``minibroker.groups``), which
holds every rule. JoinGroup and SyncGroup answers may come later (when the rebalance gets there), so
those handlers wait on a future the coordinator completes. Each node has its coordinator (``GroupService``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable

from minibroker.acls.model import CLUSTER_DENIED, GROUP_DENIED, TRANSACTIONAL_ID_DENIED
from minibroker.acls.operations import (
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DELETE,
    DESCRIBE,
    GROUP,
    NO_AUTHORIZED_OPERATIONS,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from minibroker.cluster.features import GROUP_VERSION, TV2
from minibroker.cluster.placements import NO_LEADER
from minibroker.groups.requests import JoinRequest, LeavingMember, PartitionCommit, Responder
from minibroker.handlers.registry import api
from minibroker.protocol.error_responses import error_response
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.primitives import ZERO_UUID
from minibroker.server.context import RequestContext
from minibroker.share.keys import parse_coordinator_key
from minibroker.storage.errors import StorageError
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC

if TYPE_CHECKING:
    from minibroker.groups.coordinator import GroupCoordinator
    from minibroker.groups.zookeeper_offsets import ZooKeeperOffsets

GROUP_KEY = 0
TRANSACTION_KEY = 1
SHARE_KEY = 2  # a share partition's "group:topicId:partition" (KIP-932): brokers find its share coordinator
FIRST_BATCHED_LOOKUP = 4
FIRST_SHARE_LOOKUP = 6
SHARE_GROUP_HEARTBEAT = 76
NO_NODE = {"node_id": -1, "host": "", "port": -1}

log = logging.getLogger(__name__)


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    """The group coordinator of the node asked (it answers NOT_COORDINATOR for groups other nodes coordinate)."""
    return ctx.broker.groups.coordinator_of(ctx.node_id)


def answer_later() -> tuple[asyncio.Future, Responder]:
    """A future and the responder that completes it (a no-op once the client has gone and the future is cancelled)."""
    future = asyncio.get_running_loop().create_future()

    def respond(response: dict[str, Any]) -> None:
        if not future.done():
            future.set_result(response)

    return future, respond


def client_host(ctx: RequestContext) -> str:
    """Kafka reports a member's host as Java's InetAddress.toString(): "/127.0.0.1"."""
    return "/" + ctx.peer.rpartition(":")[0]


# APIs whose error answer (Kafka's getErrorResponse) is the error code alone: Heartbeat, LeaveGroup, SyncGroup,
# OffsetDelete, ConsumerGroupHeartbeat. JoinGroup's adds an unknown member; the others mirror the request.
ERROR_CODE_ONLY = frozenset((12, 13, 14, 47, 68))
JOIN_GROUP = 11
FIRST_JOIN_GROUP_WITH_NULL_PROTOCOL = 7


def refusal(ctx: RequestContext, body: dict[str, Any], operation: int, resource_type: int, name: str) -> dict[str, Any] | None:
    """With the authorizer on and the operation denied: Kafka's whole-request error answer (GROUP_AUTHORIZATION_FAILED,
    or TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id); else None."""
    if ctx.broker.authorizer is None or ctx.allowed(operation, resource_type, name):
        return None
    if resource_type == TRANSACTIONAL_ID:
        return denied_answer(ctx, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_DENIED)
    return denied_answer(ctx, body, ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_DENIED)


def denied_answer(ctx: RequestContext, body: dict[str, Any], error: ErrorCode, message: str) -> dict[str, Any]:
    """A whole request refused, answered as Kafka's getErrorResponse of its API answers (clients read these fields)."""
    if ctx.api_key in ERROR_CODE_ONLY:  # every other field at its default (an empty assignment, no members)
        return error_response(ctx.api_key, ctx.api_version, {}, error, None)
    if ctx.api_key == JOIN_GROUP:
        protocol = None if ctx.api_version >= FIRST_JOIN_GROUP_WITH_NULL_PROTOCOL else ""
        return {"error_code": error, "generation_id": -1, "protocol_name": protocol, "leader": "", "member_id": "",
                "members": []}
    return error_response(ctx.api_key, ctx.api_version, body, error, message)


def refused_topics(ctx: RequestContext, names: set[str], operation: int) -> set[str]:
    """The topics the principal may not READ (commits) or DESCRIBE (offset fetches); none without an authorizer."""
    if ctx.broker.authorizer is None:
        return set()
    return names - ctx.allowed_names(operation, TOPIC, names)


# ---- FindCoordinator ----


def lookup_refusal(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str | None] | None:
    """Why Kafka's getCoordinator answers no node for ``key`` (an unknown key type, the principal may not DESCRIBE
    the group or transactional id, a share key before v6, in a release without share groups, or not
    ``group:topicId:partition``); None when the lookup goes on."""
    if key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY):
        return ErrorCode.INVALID_REQUEST, f"Unknown key type {key_type}"
    if key_type == SHARE_KEY:
        if ctx.api_version < FIRST_SHARE_LOOKUP:
            return ErrorCode.INVALID_REQUEST, f"Key type {SHARE_KEY} needs FindCoordinator v{FIRST_SHARE_LOOKUP}"
        if SHARE_GROUP_HEARTBEAT not in ctx.broker.apis:  # an emulated 3.9 or 4.0: Kafka 3.9 had no share coordinator
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "No share coordinator"
        try:
            parse_coordinator_key(key)
        except ValueError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc)
        return None
    if ctx.broker.authorizer is not None:
        if key_type == GROUP_KEY and not ctx.allowed(DESCRIBE, GROUP, key):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_DENIED
        if key_type == TRANSACTION_KEY and not ctx.allowed(DESCRIBE, TRANSACTIONAL_ID, key):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_DENIED
    return None


async def coordinator_node(ctx: RequestContext, key: str, key_type: int) -> int:
    """The leader of the key's partition of its coordinator's topic, which is made first if missing, as a client's
    lookup makes it in Kafka (a share key: the share coordinator's ``__share_group_state``, loaded as Kafka's share
    coordinator loads the partitions it leads). Raises OSError or StorageError when the topic cannot be made."""
    broker = ctx.broker
    if key_type == SHARE_KEY:
        store = broker.share_state
        await store.start()
        return broker.placements.of(SHARE_GROUP_STATE_TOPIC, store.partition_of(parse_coordinator_key(key))).leader
    service = broker.groups if key_type == GROUP_KEY else broker.transactions
    await service.topic.create()
    return service.coordinator_node(key)


async def find_one(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    """The coordinator of a group, transactional id or share partition: the leader of its partition of the
    coordinator's topic (COORDINATOR_NOT_AVAILABLE while that partition has no leader)."""
    refused = lookup_refusal(ctx, key, key_type)
    if refused is not None:
        return {"key": key, **NO_NODE, "error_code": refused[0], "error_message": refused[1]}
    try:
        leader = await coordinator_node(ctx, key, key_type)
    except (OSError, StorageError) as exc:
        return {"key": key, **NO_NODE, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "error_message": str(exc)}
    if leader == NO_LEADER:
        return {"key": key, **NO_NODE, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "error_message": None}
    host, port = ctx.node_address(leader)
    return {"key": key, "node_id": leader, "host": host, "port": port, "error_code": ErrorCode.NONE, "error_message": None}


@api(10, 0, 6)
async def find_coordinator(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v5 only tells the broker that the client knows TRANSACTION_ABORTABLE (KIP-890), which no lookup answers, so
    it is answered as v4. A share key (v6) needs CLUSTER_ACTION on the cluster (only brokers look share coordinators
    up): without it the whole request is refused, every key answered as Kafka's error answer (prepareErrorResponse:
    no node) after authorizeClusterOperation."""
    key_type = body["key_type"]
    if (
        key_type == SHARE_KEY and ctx.api_version >= FIRST_SHARE_LOOKUP and ctx.broker.authorizer is not None
        and not ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    ):
        denied = {**NO_NODE, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_DENIED}
        return {"coordinators": [{"key": key, **denied} for key in body["coordinator_keys"]]}
    if ctx.api_version >= FIRST_BATCHED_LOOKUP:
        return {"coordinators": [await find_one(ctx, key, key_type) for key in body["coordinator_keys"]]}
    found = await find_one(ctx, body["key"], key_type)
    return {k: found[k] for k in ("error_code", "error_message", "node_id", "host", "port")}


# ---- membership ----


@api(11, 0, 9)
async def join_group(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    version = ctx.api_version
    request = JoinRequest(
        group_id=body["group_id"],
        member_id=body["member_id"],
        group_instance_id=body["group_instance_id"],
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        session_timeout_ms=body["session_timeout_ms"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"] if version >= 1 else body["session_timeout_ms"],
        protocol_type=body["protocol_type"],
        protocols=tuple((p["name"], p["metadata"]) for p in body["protocols"]),
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
        reason=body["reason"],
    )
    future, respond = answer_later()
    coordinator(ctx).join_group(request, respond)
    response = await future
    await ctx.broker.groups.flush()
    protocol_name = response.get("protocol_name")
    if version < 7 and protocol_name is None:
        response["protocol_name"] = ""  # a non-nullable string before v7, as in Kafka's JoinGroupResponse
    elif version >= 7 and protocol_name == "":
        response["protocol_name"] = None
    return response


@api(14, 0, 5)
async def sync_group(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    future, respond = answer_later()
    coordinator(ctx).sync_group(
        body["group_id"], body["member_id"], body["group_instance_id"], body["generation_id"],
        body["protocol_type"], body["protocol_name"], {a["member_id"]: a["assignment"] for a in body["assignments"]}, respond,
    )
    response = await future
    await ctx.broker.groups.flush()
    return response


@api(12, 0, 4)
async def heartbeat(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    error = coordinator(ctx).heartbeat(body["group_id"], body["member_id"], body["group_instance_id"], body["generation_id"])
    return {"error_code": error}


@api(13, 0, 5)
async def leave_group(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    if ctx.api_version >= 3:
        leaving = [LeavingMember(m["member_id"], m["group_instance_id"], m["reason"]) for m in body["members"]]
    else:
        leaving = [LeavingMember(body["member_id"], None)]
    error, members = coordinator(ctx).leave_group(body["group_id"], leaving)
    await ctx.broker.groups.flush()
    if ctx.api_version >= 3:
        return {"error_code": error, "members": members}
    if error == ErrorCode.NONE:
        error = next((m["error_code"] for m in members if m["error_code"] != ErrorCode.NONE), ErrorCode.NONE)
    return {"error_code": error}


# ---- offsets ----


CommitAnswers = dict[tuple[bytes, str], dict[int, ErrorCode]]  # by (topic id, name): v10 names topics by id
OFFSETS_BY_ID_VERSION = 10  # OffsetCommit and OffsetFetch name topics by id (KIP-848)


def name_topics(ctx: RequestContext, topics: list[dict[str, Any]]) -> None:
    """OffsetCommit/OffsetFetch v10 name topics by id: each gets the name of its id, or "" for an id no topic has (a
    deleted topic's), as KafkaApis resolves them before the coordinator."""
    for topic in topics:
        info = ctx.broker.topic_by_id(topic["topic_id"])
        topic["name"] = info.name if info is not None else ""


def known_commits(
    ctx: RequestContext, topics: list[dict[str, Any]], by_id: bool = False,
) -> tuple[CommitAnswers, list[PartitionCommit]]:
    """Partitions of unknown topic ids (v10), of topics the principal may not READ, then of unknown topics, are
    refused here, before the coordinator, as in Kafka's KafkaApis: (answers so far, commits of known partitions)."""
    answers: CommitAnswers = {}
    commits = []
    denied = refused_topics(ctx, {topic["name"] for topic in topics if topic["name"]}, READ)
    for topic in topics:
        name = topic["name"]
        partitions = answers.setdefault((topic.get("topic_id", ZERO_UUID), name), {})
        for p in topic["partitions"]:
            index = p["partition_index"]
            if by_id and not name:
                partitions[index] = ErrorCode.UNKNOWN_TOPIC_ID
            elif denied and name in denied:
                partitions[index] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif ctx.broker.partition(name, index) is None:
                partitions[index] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                partitions[index] = ErrorCode.NONE  # the coordinator's answer replaces it
                commits.append(PartitionCommit(
                    name, index, p["committed_offset"], p["committed_leader_epoch"], p["committed_metadata"],
                    p.get("commit_timestamp", -1),
                ))
    return answers, commits


def commit_response(
    answers: CommitAnswers, commits: list[PartitionCommit], errors: list[ErrorCode], by_id: bool = False,
) -> dict[str, Any]:
    """The topics answered by name, or by id from OffsetCommit v10."""
    keys = {name: (topic_id, name) for topic_id, name in answers}
    for commit, error in zip(commits, errors):
        answers[keys[commit.topic]][commit.partition] = error
    topics = []
    for (topic_id, name), partitions in answers.items():
        results = [{"partition_index": p, "error_code": e} for p, e in partitions.items()]
        topics.append({"topic_id": topic_id, "partitions": results} if by_id else {"name": name, "partitions": results})
    return {"topics": topics}


@api(8, 2, 10, oldest=0)
async def offset_commit(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v1 (served only when emulating a release before 4.0) may set each commit's timestamp; v0 commits are
    ZooKeeper's (``zookeeper_commit``)."""
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    by_id = ctx.api_version >= OFFSETS_BY_ID_VERSION
    if by_id:
        name_topics(ctx, body["topics"])
    answers, commits = known_commits(ctx, body["topics"], by_id)
    if commits and ctx.api_version == 0:
        return zookeeper_commit(ctx, body, answers, commits)
    errors = []
    if commits:
        errors = coordinator(ctx).commit_offsets(
            body["group_id"], body["member_id"], body["group_instance_id"], body["generation_id_or_member_epoch"],
            body["retention_time_ms"], commits, ctx.api_version,
        )
        await ctx.broker.groups.flush()
    return commit_response(answers, commits, errors, by_id)


def zookeeper_commit(
    ctx: RequestContext, body: dict[str, Any], answers: CommitAnswers, commits: list[PartitionCommit],
) -> dict[str, Any]:
    """OffsetCommit v0 with partitions to commit, as Kafka's commitOffsetsToZookeeper: a ZooKeeper-mode release (up
    to 3.2) stores the offsets in ZooKeeper, not through the group coordinator; a KRaft release has no ZooKeeper and
    answers every partition UNSUPPORTED_VERSION (its whole-request error answer)."""
    from minibroker.config.releases import zookeeper_mode

    if not zookeeper_mode(ctx.broker.config.kafka_version):
        return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.UNSUPPORTED_VERSION, None)
    limit = ctx.broker.config.offset_metadata_max_bytes
    errors = [
        ErrorCode.OFFSET_METADATA_TOO_LARGE if c.metadata is not None and len(c.metadata) > limit else ErrorCode.NONE
        for c in commits
    ]
    stored = [(c.topic, c.partition, c.offset) for c, error in zip(commits, errors) if error == ErrorCode.NONE]
    if stored:
        zookeeper_offsets(ctx).commit(body["group_id"], stored)
    return commit_response(answers, commits, errors)


def zookeeper_offsets(ctx: RequestContext) -> ZooKeeperOffsets:
    from minibroker.groups.zookeeper_offsets import ZooKeeperOffsets

    if ctx.broker.zookeeper_offsets is None:
        ctx.broker.zookeeper_offsets = ZooKeeperOffsets(ctx.broker.config.data_dir)
    return ctx.broker.zookeeper_offsets


FIRST_TXN_COMMIT_WITH_ABORTABLE = 4  # GENERIC_ERROR_SUPPORTED: TRANSACTION_ABORTABLE reaches the client
FIRST_TXN_COMMIT_ADDING = 5  # transactions V2: the commit adds the group's partition to the transaction itself


def transaction_error(ctx: RequestContext, body: dict[str, Any]) -> ErrorCode:
    """Whether the group's __consumer_offsets partition is in the producer's ongoing transaction, as the transactional
    id's coordinator knows it: AddOffsetsToTxn put it there, or (v5+, transactions V2) this commit adds it. Otherwise no
    marker would ever end these offsets. A fenced producer hears INVALID_PRODUCER_EPOCH, as Kafka's verification
    answers; before v4 a partition not in the transaction is INVALID_TXN_STATE, from v4 TRANSACTION_ABORTABLE."""
    owner = ctx.broker.transactions.owner_of(body["transactional_id"])
    if owner is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partition = (CONSUMER_OFFSETS_TOPIC, coordinator(ctx).partition_of(body["group_id"]))
    args = (body["transactional_id"], body["producer_id"], body["producer_epoch"])
    if ctx.api_version >= FIRST_TXN_COMMIT_ADDING:
        error = owner.add_partitions(*args, [partition], lambda tp: True, TV2)[partition]
    else:
        error = owner.verify_partition(*args, partition)
        if error == ErrorCode.INVALID_TXN_STATE and ctx.api_version >= FIRST_TXN_COMMIT_WITH_ABORTABLE:
            error = ErrorCode.TRANSACTION_ABORTABLE
    return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED else error


@api(28, 0, 5)
async def txn_offset_commit(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v3 (KIP-447) carries the consumer's group metadata (generation, member id, group instance id), checked as
    Kafka does; older versions name no member. The offsets stay invisible until the transaction commits."""
    refused = refusal(ctx, body, WRITE, TRANSACTIONAL_ID, body["transactional_id"])
    refused = refused or refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    answers, commits = known_commits(ctx, body["topics"])
    errors: list[ErrorCode] = []
    if commits:
        group_id = body["group_id"]
        error = transaction_error(ctx, body) if group_id else ErrorCode.INVALID_GROUP_ID
        if group_id and ctx.api_version >= FIRST_TXN_COMMIT_ADDING:
            await ctx.broker.transactions.flush()  # the transaction's new partition, before the answer
        if error != ErrorCode.NONE:
            log.info("TxnOffsetCommit of %s for group %s refused: %s", body["transactional_id"], group_id, error.name)
            errors = [error] * len(commits)
        else:
            errors = coordinator(ctx).commit_transactional_offsets(
                group_id, body["producer_id"], body["producer_epoch"], body["member_id"], body["group_instance_id"],
                body["generation_id"], commits,
            )
            await ctx.broker.groups.flush()
    return commit_response(answers, commits, errors)


def requested_topics(topics: list[dict[str, Any]] | None) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t["name"], t["partition_indexes"]) for t in topics]


def fetch_group_offsets(
    ctx: RequestContext, group_id: str, topics: list[tuple[str, list[int]]] | None, stable: bool,
    member_id: str | None = None, member_epoch: int = -1,
) -> dict[str, Any]:
    """One group's OffsetFetch answer; with the authorizer on, as KafkaApis: DESCRIBE on the group, and only the
    topics the principal may DESCRIBE (named ones it may not answer TOPIC_AUTHORIZATION_FAILED)."""
    if ctx.broker.authorizer is None:
        return coordinator(ctx).fetch_offsets(group_id, topics, stable, member_id, member_epoch)
    if not ctx.allowed(DESCRIBE, GROUP, group_id):
        return {"group_id": group_id, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    if topics is None:
        group = coordinator(ctx).fetch_offsets(group_id, None, stable, member_id, member_epoch)
        denied = refused_topics(ctx, {t["name"] for t in group["topics"]}, DESCRIBE)
        group["topics"] = [t for t in group["topics"] if t["name"] not in denied]
        return group
    denied = refused_topics(ctx, {name for name, _ in topics}, DESCRIBE)
    group = coordinator(ctx).fetch_offsets(group_id, [t for t in topics if t[0] not in denied], stable, member_id, member_epoch)
    if group["error_code"] == ErrorCode.NONE:
        group["topics"] += [
            {"name": name, "partitions": [
                {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                for p in partitions
            ]}
            for name, partitions in topics if name in denied
        ]
    return group


def fetch_group_offsets_by_id(
    ctx: RequestContext, group: dict[str, Any], stable: bool,
) -> dict[str, Any]:
    """OffsetFetch v10: the topics are named by id; an id no topic has answers UNKNOWN_TOPIC_ID for its partitions,
    and the answer names each topic by its id."""
    topics = group["topics"]
    unknown = []
    if topics is not None:
        name_topics(ctx, topics)
        unknown = [t for t in topics if not t["name"]]
        topics = [t for t in topics if t["name"]]
    answer = fetch_group_offsets(
        ctx, group["group_id"], requested_topics(topics), stable, group["member_id"], group["member_epoch"])
    if answer["error_code"] != ErrorCode.NONE:
        return answer
    topics = []
    for topic in answer["topics"]:
        info = ctx.broker.topic(topic["name"])
        topics.append({"topic_id": info.topic_id if info is not None else ZERO_UUID, "partitions": topic["partitions"]})
    topics += [
        {"topic_id": t["topic_id"], "partitions": [
            {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
            for p in t["partition_indexes"]
        ]}
        for t in unknown
    ]
    return {**answer, "topics": topics}


@api(9, 1, 10, oldest=0)
async def offset_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    stable = body["require_stable"]
    if ctx.api_version >= OFFSETS_BY_ID_VERSION:
        return {"groups": [fetch_group_offsets_by_id(ctx, g, stable) for g in body["groups"]]}
    if ctx.api_version >= 8:
        groups = [
            fetch_group_offsets(ctx, g["group_id"], requested_topics(g["topics"]), stable, g["member_id"], g["member_epoch"])
            for g in body["groups"]
        ]
        return {"groups": groups}
    topics = requested_topics(body["topics"])
    if ctx.api_version == 0:
        return zookeeper_fetch(ctx, body["group_id"], topics or [])
    group = fetch_group_offsets(ctx, body["group_id"], topics, stable)
    error = group["error_code"]
    if error != ErrorCode.NONE and ctx.api_version < 2:
        return every_partition(topics or [], error)  # v0-1 have no group-level error
    return {"topics": group["topics"], "error_code": error}


def every_partition(topics: list[tuple[str, list[int]]], error: ErrorCode) -> dict[str, Any]:
    """An OffsetFetch v0-1 answer of one error, which every requested partition carries."""
    return {
        "topics": [
            {"name": name, "partitions": [
                {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": error} for p in partitions
            ]}
            for name, partitions in topics
        ]
    }


def zookeeper_fetch(ctx: RequestContext, group_id: str, topics: list[tuple[str, list[int]]]) -> dict[str, Any]:
    """OffsetFetch v0 (served only when emulating a release before 4.0), as Kafka's handleOffsetFetchRequestV0: the
    offsets v0 commits stored in ZooKeeper, without metadata, a partition never committed UNKNOWN_TOPIC_OR_PARTITION;
    a KRaft release (3.3 on) has no ZooKeeper and answers UNSUPPORTED_VERSION. DESCRIBE on the group comes first."""
    from minibroker.config.releases import zookeeper_mode

    if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, GROUP, group_id):
        return every_partition(topics, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not zookeeper_mode(ctx.broker.config.kafka_version):
        return every_partition(topics, ErrorCode.UNSUPPORTED_VERSION)
    denied = refused_topics(ctx, {name for name, _ in topics}, DESCRIBE)
    stored = zookeeper_offsets(ctx)
    answers = []
    for name, partitions in topics:
        results = []
        for index in partitions:
            offset = stored.get(group_id, name, index) if ctx.broker.partition(name, index) is not None else None
            if denied and name in denied:
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                error = ErrorCode.NONE if offset is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            found = offset if error == ErrorCode.NONE else -1
            results.append({"partition_index": index, "committed_offset": found, "metadata": "", "error_code": error})
        answers.append({"name": name, "partitions": results})
    return {"topics": answers}


@api(47, 0, 0)
async def offset_delete(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = refusal(ctx, body, DELETE, GROUP, body["group_id"])
    if refused is not None:
        return refused
    unknown: list[dict[str, Any]] = []
    topics: list[tuple[str, list[int]]] = []
    denied = refused_topics(ctx, {topic["name"] for topic in body["topics"]}, READ)
    for topic in body["topics"]:
        indexes = [p["partition_index"] for p in topic["partitions"]]
        if denied and topic["name"] in denied:
            unknown.append({"name": topic["name"], "partitions": [
                {"partition_index": p, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED} for p in indexes
            ]})
            continue
        known = [p for p in indexes if ctx.broker.partition(topic["name"], p) is not None]
        if known:
            topics.append((topic["name"], known))
        missing = [p for p in indexes if p not in known]
        if missing:
            unknown.append({"name": topic["name"], "partitions": [
                {"partition_index": p, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION} for p in missing
            ]})
    error, answers = coordinator(ctx).delete_offsets(body["group_id"], topics)
    await ctx.broker.groups.flush()
    if error != ErrorCode.NONE:
        return {"error_code": error, "topics": []}
    return {"error_code": ErrorCode.NONE, "topics": answers + unknown}


# ---- administration ----


@api(16, 0, 5)
async def list_groups(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """With the authorizer on, only the groups the principal may DESCRIBE (all with DESCRIBE on the cluster)."""
    error, groups = coordinator(ctx).list_groups(body["states_filter"], body["types_filter"])
    if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME, log_denied=False):
        groups = [g for g in groups if ctx.allowed(DESCRIBE, GROUP, g["group_id"], log_denied=False)]
    return {"error_code": error, "groups": groups}


@api(15, 0, 6)
async def describe_groups(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """As Kafka's KafkaApis: authorized operations only for a group described without error."""
    groups = []
    for group_id in body["groups"]:
        if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, GROUP, group_id):
            groups.append({
                "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "group_id": group_id, "group_state": "",
                "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": NO_AUTHORIZED_OPERATIONS,
            })
            continue
        described = coordinator(ctx).describe_group(group_id, report_missing=ctx.api_version >= 6)
        described["authorized_operations"] = (
            ctx.authorized_operations(GROUP, group_id)
            if body["include_authorized_operations"] and described["error_code"] == ErrorCode.NONE
            else NO_AUTHORIZED_OPERATIONS
        )
        groups.append(described)
    return {"groups": groups}


@api(42, 0, 2)
async def delete_groups(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    names = body["groups_names"]
    denied = set()
    if ctx.broker.authorizer is not None:
        denied = set(names) - ctx.allowed_names(DELETE, GROUP, set(names))
    results = coordinator(ctx).delete_groups([name for name in names if name not in denied])
    results += [
        {"group_id": name, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED} for name in dict.fromkeys(names) if name in denied
    ]
    await ctx.broker.groups.flush()
    return {"results": results}


# ---- the consumer group protocol (KIP-848) ----


def owned_partitions(topics: list[dict[str, Any]] | None) -> dict[bytes, frozenset[int]] | None:
    if topics is None:
        return None
    owned: dict[bytes, frozenset[int]] = {}
    for topic in topics:
        if topic["partitions"]:
            owned[topic["topic_id"]] = owned.get(topic["topic_id"], frozenset()) | frozenset(topic["partitions"])
    return owned


def topic_viewer(ctx: RequestContext) -> Callable[[str], bool] | None:
    """Whether the principal may DESCRIBE a topic, for the topics its regular expression matches (no authorizer:
    None); holds the principal and address, not the connection."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return None
    principal, host = ctx.principal, ctx.host
    return lambda name: authorizer.authorize(principal, host, DESCRIBE, TOPIC, name)


@api(68, 0, 1)
async def consumer_group_heartbeat(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    from minibroker.groups.consumer_coordinator import HeartbeatRequest  # with the coordinator: on first use

    if ctx.broker.features.turned_off(GROUP_VERSION):
        return group_version_refusal(ctx, body)
    refused = refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    names = set(body["subscribed_topic_names"] or ())
    if names and refused_topics(ctx, names, DESCRIBE):  # Kafka 4.0 (KAFKA-18813): no subscribing to hidden topics
        return error_response(ctx.api_key, ctx.api_version, {}, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    request = HeartbeatRequest(
        group_id=body["group_id"],
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        instance_id=body["instance_id"],
        rack_id=body["rack_id"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=body["subscribed_topic_names"],
        subscribed_topic_regex=body["subscribed_topic_regex"],
        server_assignor=body["server_assignor"],
        owned=owned_partitions(body["topic_partitions"]),
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        api_version=ctx.api_version,
        may_describe=topic_viewer(ctx),
    )
    response = coordinator(ctx).consumer_heartbeat(request)
    await ctx.broker.groups.flush()
    return response


HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def assigned_topics(described: dict[str, Any]) -> set[str]:
    """The topics of a described group's members' assignments and target assignments (what KAFKA-18813 checks)."""
    return {
        topic["topic_name"] for member in described.get("members", ())
        for assignment in (member["assignment"], member["target_assignment"]) for topic in assignment["topic_partitions"]
    }


def group_version_refusal(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """KafkaApis refuses the consumer group APIs while group.version is 0 (isConsumerGroupProtocolEnabled)."""
    return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_VERSION_MESSAGE)


UNSUPPORTED_VERSION_MESSAGE = "The version of API is not supported."


@api(69, 0, 1)
async def consumer_group_describe(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    from minibroker.groups.coordinator import described_error

    if ctx.broker.features.turned_off(GROUP_VERSION):
        return group_version_refusal(ctx, body)
    include = body["include_authorized_operations"]
    groups = []
    for group_id in body["group_ids"]:
        if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, GROUP, group_id):
            groups.append(described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        described = coordinator(ctx).consumer_describe(group_id)
        if refused_topics(ctx, assigned_topics(described), DESCRIBE):
            groups.append(described_error(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPICS))
            continue
        described["authorized_operations"] = ctx.authorized_operations(GROUP, group_id) if include else NO_AUTHORIZED_OPERATIONS
        groups.append(described)
    return {"groups": groups}
