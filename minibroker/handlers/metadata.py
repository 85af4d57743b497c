"""ApiVersions, Metadata and DescribeCluster: what the cluster (this one broker) looks like."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from minibroker.acls.operations import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, NO_AUTHORIZED_OPERATIONS, TOPIC
from minibroker.cluster.features import FeatureLevels
from minibroker.handlers.registry import api
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.frames import API_VERSIONS_KEY, EncodedAnswer
from minibroker.protocol.primitives import ZERO_UUID
from minibroker.server.context import RequestContext
from minibroker.storage.errors import StorageError
from minibroker.storage.log_manager import TopicInfo
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, is_internal

if TYPE_CHECKING:
    from minibroker.cluster.internal_topics import InternalTopic

log = logging.getLogger(__name__)


FIRST_VERSION_WITH_FEATURES = 3
FIRST_VERSION_WITH_LEVEL_0 = 4  # v3 answers leave out features supported from level 0 (KAFKA-17492)


@api(18, 0, 4)
async def api_versions(ctx: RequestContext, body: dict[str, Any]) -> EncodedAnswer:
    """The broker's API table (with kafka.version, capped at that release's): what it advertises is what it serves;
    from v3 the feature levels too. The same for every request of a version, so encoded once per version (UpdateFeatures
    clears these answers)."""
    answers = ctx.broker.api_versions_answers
    answer = answers.get(ctx.api_version)
    if answer is None:
        keys = [
            {"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
            for h in sorted(ctx.broker.apis.values(), key=lambda h: h.api_key)
        ]
        data = {"error_code": ErrorCode.NONE, "api_keys": keys, "throttle_time_ms": 0}
        if ctx.api_version >= FIRST_VERSION_WITH_FEATURES:
            data.update(feature_fields(ctx.broker.features, ctx.api_version))
        answer = answers[ctx.api_version] = EncodedAnswer.of(API_VERSIONS_KEY, ctx.api_version, data)
    return answer


def feature_fields(features: FeatureLevels, version: int) -> dict[str, Any]:
    """SupportedFeatures, FinalizedFeaturesEpoch and FinalizedFeatures, as Kafka's ApiVersionsResponse builds them."""
    supported = [
        {"name": name, "min_version": low, "max_version": high}
        for name, (low, high) in features.supported.items()
        if low > 0 or version >= FIRST_VERSION_WITH_LEVEL_0
    ]
    finalized = [
        {"name": name, "max_version_level": level, "min_version_level": level}
        for name, level in features.finalized().items()
    ]
    return {"supported_features": supported, "finalized_features_epoch": features.epoch, "finalized_features": finalized}


def broker_entries(ctx: RequestContext, id_field: str, include_stopped: bool = False) -> list[dict[str, Any]]:
    """Every live node (with ``include_stopped`` every node), at its listener of the name the request came in on
    (Kafka answers per listener). Metadata names the id field ``node_id``, DescribeCluster ``broker_id``."""
    broker = ctx.broker
    entries = []
    for node_id in broker.node_ids:
        if include_stopped or node_id in broker.live_nodes:
            host, port = ctx.node_address(node_id)
            entries.append({id_field: node_id, "host": host, "port": port, "rack": broker.racks.get(node_id)})
    return entries


def leader_endpoints(ctx: RequestContext, leaders: set[int]) -> list[dict[str, Any]]:
    """KIP-951's NodeEndpoints of a Produce or Fetch answer: the live ``leaders`` its moved partitions name."""
    return [entry for entry in broker_entries(ctx, "node_id") if entry["node_id"] in leaders]


def controller_id(ctx: RequestContext) -> int:
    """A KRaft broker names a live broker as the controller (Kafka picks one at random); clients send it their
    admin requests, so a stopped node must not be named. The lowest live id keeps every node's answer the same."""
    return min(ctx.broker.live_nodes, default=-1)


def topic_metadata(ctx: RequestContext, info: TopicInfo) -> dict[str, Any]:
    placements = ctx.broker.placements
    live = ctx.broker.live_nodes
    partitions = []
    for index in range(len(info.partitions)):
        placed = placements.of(info.name, index)
        partitions.append({
            "error_code": NO_ERROR if placed.leader in live else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": index,
            "leader_id": placed.leader,
            "leader_epoch": placed.leader_epoch,
            "replica_nodes": list(placed.replicas),
            "isr_nodes": [node for node in placed.replicas if node in live],
            "offline_replicas": [node for node in placed.replicas if node not in live],
        })
    return {
        "error_code": NO_ERROR,
        "name": info.name,
        "topic_id": info.topic_id,
        "is_internal": is_internal(info.name),
        "partitions": partitions,
    }


def missing_topic(name: str | None, topic_id: bytes, error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "name": name, "topic_id": topic_id, "partitions": []}


def internal_topic(ctx: RequestContext, name: str) -> InternalTopic | None:
    if name == CONSUMER_OFFSETS_TOPIC:
        return ctx.broker.groups.topic.internal
    if name == TRANSACTION_STATE_TOPIC:
        return ctx.broker.transactions.topic
    return None


async def auto_create(ctx: RequestContext, name: str) -> ErrorCode:
    """Kafka's AutoTopicCreationManager: an internal topic gets its coordinator's partition count and configs
    (offsets.topic.num.partitions or transaction.state.log.num.partitions, compacted), others num.partitions."""
    internal = internal_topic(ctx, name)
    if internal is None:
        factor = ctx.broker.config.default_replication_factor
        error, message = await ctx.broker.create_topic(name, ctx.broker.config.num_partitions, {},
                                                       replication_factor=factor)
        if error == ErrorCode.INVALID_REPLICATION_FACTOR:
            log.info("topic %s not created: %s (default.replication.factor)", name, message)
        return ErrorCode.LEADER_NOT_AVAILABLE if error == ErrorCode.TOPIC_ALREADY_EXISTS else error  # being created
    try:
        await internal.create()
    except (OSError, StorageError):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


def may_describe(ctx: RequestContext, name: str, log_denied: bool = True) -> bool:
    return ctx.broker.authorizer is None or ctx.allowed(DESCRIBE, TOPIC, name, log_denied)


def may_create(ctx: RequestContext, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic (KafkaApis.handleTopicMetadataRequest)."""
    if ctx.broker.authorizer is None or ctx.allowed(CREATE, CLUSTER, CLUSTER_NAME, log_denied=False):
        return True
    return ctx.allowed(CREATE, TOPIC, name)


def topics_by_id(ctx: RequestContext, ids: list[bytes]) -> list[dict[str, Any]]:
    """Metadata v12+ asking by topic id (the Java client sends the name as "" then): as Kafka's KafkaApis, a request
    naming any id is answered by its ids alone, an unknown id with UNKNOWN_TOPIC_ID echoing it, and ids are not
    auto-created. Ids are not secret, so an undescribable topic answers TOPIC_AUTHORIZATION_FAILED with its id."""
    topics = []
    for topic_id in dict.fromkeys(ids):
        info = ctx.broker.topic_by_id(topic_id)
        if info is None:
            topics.append(missing_topic(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
        elif not may_describe(ctx, info.name):
            topics.append(missing_topic(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        else:
            topics.append(topic_metadata(ctx, info))
    return topics


def ids_before_v12(requested: list[dict[str, Any]]) -> dict[str, Any]:
    """Versions 10 and 11 carry a topic id field but may not use it (nor a null name): Kafka's KafkaApis throws
    InvalidRequestException, answered as MetadataRequest.getErrorResponse does, every topic INVALID_REQUEST."""
    return {
        "brokers": [],
        "cluster_id": None,
        "controller_id": -1,
        "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        "topics": [{"error_code": ErrorCode.INVALID_REQUEST, "name": item.get("name") or "",
                    "topic_id": item.get("topic_id", ZERO_UUID), "is_internal": False, "partitions": []}
                   for item in requested],
    }


@api(3, 0, 13)
async def metadata(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """With the authorizer on, topics the principal may not DESCRIBE are left out of an all-topics answer and answer
    TOPIC_AUTHORIZATION_FAILED when named (without their id: their existence is not disclosed)."""
    broker = ctx.broker
    requested = body["topics"]
    if requested and ctx.api_version < 12 and any(
            item.get("name") is None or item.get("topic_id", ZERO_UUID) != ZERO_UUID for item in requested):
        return ids_before_v12(requested)
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [topic_metadata(ctx, info) for info in broker.logs.topics.values() if may_describe(ctx, info.name, False)]
    elif ids := [item["topic_id"] for item in requested if item.get("topic_id", ZERO_UUID) != ZERO_UUID]:
        topics = topics_by_id(ctx, ids)
    else:
        topics = []
        for item in requested:
            name = item.get("name")
            if name is None:
                topics.extend(topics_by_id(ctx, [item["topic_id"]]))
                continue
            if not may_describe(ctx, name):
                topics.append(missing_topic(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            info = broker.topic(name)
            if info is None and body["allow_auto_topic_creation"] and broker.config.auto_create_topics_enable:
                if not may_create(ctx, name):
                    topics.append(missing_topic(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                error = await auto_create(ctx, name)
                if error != ErrorCode.NONE:
                    topics.append(missing_topic(name, ZERO_UUID, error))
                    continue
                info = broker.topic(name)
            topics.append(topic_metadata(ctx, info) if info else missing_topic(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    if body["include_topic_authorized_operations"]:
        for topic in topics:
            if topic["error_code"] == ErrorCode.NONE:
                topic["topic_authorized_operations"] = ctx.authorized_operations(TOPIC, topic["name"])
    return {
        "error_code": NO_ERROR,  # v13+: REBOOTSTRAP_REQUIRED is for brokers that lose track of their cluster
        "brokers": broker_entries(ctx, "node_id"),
        "cluster_id": broker.logs.cluster_id,
        "controller_id": controller_id(ctx),
        "cluster_authorized_operations": (
            ctx.cluster_authorized_operations() if body["include_cluster_authorized_operations"] else NO_AUTHORIZED_OPERATIONS
        ),
        "topics": topics,
    }


BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS = 1, 2  # DescribeCluster's EndpointType


@api(60, 0, 2)
async def describe_cluster(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """A broker describes brokers; asked for controllers (or an unknown endpoint type) it answers as Kafka's
    AuthHelper.computeDescribeClusterResponse does: an error (INVALID_REQUEST at v0) and nothing else.

    A stopped node is a fenced broker: KRaft's controller fences a broker that stops (a controlled shutdown, or a
    crash once its session times out) and keeps its registration, so v2 asking IncludeFencedBrokers (KIP-1073) gets
    it marked IsFenced, and otherwise it is left out, as from Metadata."""
    endpoint_type = body.get("endpoint_type", BROKER_ENDPOINTS)
    if endpoint_type != BROKER_ENDPOINTS:
        known = endpoint_type == CONTROLLER_ENDPOINTS
        error = ErrorCode.MISMATCHED_ENDPOINT_TYPE if known else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
                   if known else f"Unsupported endpoint type {endpoint_type}")
        return {"error_code": ErrorCode.INVALID_REQUEST if ctx.api_version == 0 else error, "error_message": message,
                "endpoint_type": BROKER_ENDPOINTS, "cluster_id": "", "controller_id": -1, "brokers": [],
                "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS}
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINTS,
        "cluster_id": ctx.broker.logs.cluster_id,
        "controller_id": controller_id(ctx),
        "brokers": [
            {**entry, "is_fenced": entry["broker_id"] not in ctx.broker.live_nodes}
            for entry in broker_entries(ctx, "broker_id", include_stopped=body["include_fenced_brokers"])
        ],
        "cluster_authorized_operations": (
            ctx.cluster_authorized_operations() if body["include_cluster_authorized_operations"] else NO_AUTHORIZED_OPERATIONS
        ),
    }
