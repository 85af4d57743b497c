"""Producer ids and transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
WriteTxnMarkers, and the admin views DescribeTransactions, ListTransactions, DescribeProducers.

Handlers that change a transaction await ``TransactionService.flush`` before answering (the flush policy).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from minibroker.acls.model import CLUSTER_DENIED, TOPIC_DENIED
from minibroker.acls.operations import (
    ALTER,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    DESCRIBE,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from minibroker.cluster.features import TV2
from minibroker.cluster.internal_topics import PendingFlushes
from minibroker.handlers.registry import api
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.server.context import RequestContext
from minibroker.storage.errors import StorageError
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, is_internal
from minibroker.transactions.markers import write_markers

if TYPE_CHECKING:
    from minibroker.transactions.coordinator import TransactionCoordinator


def coordinator(ctx: RequestContext) -> TransactionCoordinator:
    """The transaction coordinator of the node asked (NOT_COORDINATOR for ids other nodes coordinate)."""
    return ctx.broker.transactions.coordinator_of(ctx.node_id)


def fenced_error(error: ErrorCode, version: int, first_version_with_fenced: int) -> ErrorCode:
    """Older clients know PRODUCER_FENCED as INVALID_PRODUCER_EPOCH (Kafka maps it the same way)."""
    if version < first_version_with_fenced and error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def init_refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode:
    """KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id; an idempotent producer needs
    IDEMPOTENT_WRITE on the cluster or WRITE on some topic (authorizeByResourceType)."""
    if transactional_id is not None:
        allowed = ctx.allowed(WRITE, TRANSACTIONAL_ID, transactional_id)
        return NO_ERROR if allowed else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.allowed(IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME, log_denied=False):
        return NO_ERROR
    if ctx.broker.authorizer.authorize_any(ctx.principal, ctx.host, WRITE, TOPIC):
        return NO_ERROR
    ctx.allowed(IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)  # logs the denial, once
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@api(22, 0, 5)
async def init_producer_id(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v5 only tells the broker that the client knows TRANSACTION_ABORTABLE (KIP-890), which Kafka's coordinator never
    answers here, so it is answered as v4 (v6, KIP-939's two-phase commit, is unstable in Kafka 4.3 and not served)."""
    transactional_id = body["transactional_id"]
    if ctx.broker.authorizer is not None:
        refused = init_refusal(ctx, transactional_id)
        if refused != NO_ERROR:
            return {"error_code": refused, "producer_id": -1, "producer_epoch": -1}
    if transactional_id is None:
        return {"error_code": NO_ERROR, "producer_id": ctx.broker.producer_ids.allocate(), "producer_epoch": 0}
    try:
        await ctx.broker.transactions.topic.create()
    except (OSError, StorageError):
        return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    result = coordinator(ctx).init_producer_id(
        transactional_id, body["transaction_timeout_ms"], body["producer_id"], body["producer_epoch"]
    )
    await ctx.broker.transactions.flush()
    return {
        "error_code": fenced_error(result.error, ctx.api_version, 4),
        "producer_id": result.producer_id,
        "producer_epoch": result.producer_epoch,
    }


def partition_exists(ctx: RequestContext, tp: tuple[str, int]) -> bool:
    return ctx.broker.partition(*tp) is not None


FIRST_BATCHED_ADD_PARTITIONS = 4  # versions 4+ batch transactions and may only verify (brokers send them)
FIRST_ADD_PARTITIONS_WITH_ABORTABLE = 5


@api(24, 0, 5)
async def add_partitions_to_txn(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """Versions 4+ come from brokers only: with the authorizer on they need CLUSTER_ACTION on the cluster."""
    if (
        ctx.broker.authorizer is not None and ctx.api_version >= FIRST_BATCHED_ADD_PARTITIONS
        and not ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    ):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results_by_transaction": []}
    if ctx.api_version < FIRST_BATCHED_ADD_PARTITIONS:
        topics = add_or_verify(
            ctx, body["v3_and_below_transactional_id"], body["v3_and_below_producer_id"],
            body["v3_and_below_producer_epoch"], body["v3_and_below_topics"], verify_only=False,
        )
        await ctx.broker.transactions.flush()
        return {"results_by_topic_v3_and_below": topics}
    results = [
        {
            "transactional_id": txn["transactional_id"],
            "topic_results": add_or_verify(
                ctx, txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], txn["topics"],
                verify_only=txn["verify_only"],
            ),
        }
        for txn in body["transactions"]
    ]
    await ctx.broker.transactions.flush()
    return {"error_code": NO_ERROR, "results_by_transaction": results}


def add_or_verify(
    ctx: RequestContext, transactional_id: str, producer_id: int, producer_epoch: int,
    topics: list[dict[str, Any]], *, verify_only: bool,
) -> list[dict[str, Any]]:
    """One transaction's partitions added to it, or (``verify_only``, KIP-890) only checked to be in it; the
    per-topic results of AddPartitionsToTxn."""
    txn_coordinator = coordinator(ctx)
    partitions = [(t["name"], p) for t in topics for p in t["partitions"]]
    if ctx.broker.authorizer is not None and ctx.api_version < FIRST_BATCHED_ADD_PARTITIONS:
        refused = add_refusals(ctx, transactional_id, partitions)
        if refused is not None:
            return topic_results(ctx, refused)
    if verify_only:
        results = {
            tp: txn_coordinator.verify_partition(transactional_id, producer_id, producer_epoch, tp) for tp in partitions
        }
        if ctx.api_version >= FIRST_ADD_PARTITIONS_WITH_ABORTABLE:
            results = {tp: ErrorCode.TRANSACTION_ABORTABLE if error == ErrorCode.INVALID_TXN_STATE else error
                       for tp, error in results.items()}
    else:  # v4+ come from brokers adding for a transactions-V2 client (transactionVersionForAddPartitionsToTxn)
        results = txn_coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, lambda tp: partition_exists(ctx, tp),
            TV2 if ctx.api_version >= FIRST_BATCHED_ADD_PARTITIONS else 0,
        )
    return topic_results(ctx, results)


def add_refusals(
    ctx: RequestContext, transactional_id: str, partitions: list[tuple[str, int]],
) -> dict[tuple[str, int], ErrorCode] | None:
    """KafkaApis' checks of a client's AddPartitionsToTxn: WRITE on the transactional id (every partition answers
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then on each topic (internal ones aside); a refused topic fails the whole
    transaction, the others answering OPERATION_NOT_ATTEMPTED. None when nothing is refused."""
    if not ctx.allowed(WRITE, TRANSACTIONAL_ID, transactional_id):
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in partitions}
    names = {topic for topic, _ in partitions if not is_internal(topic)}
    denied = names - ctx.allowed_names(WRITE, TOPIC, names)
    if not denied:
        return None
    return {
        tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied
        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if not partition_exists(ctx, tp)
        else ErrorCode.OPERATION_NOT_ATTEMPTED
        for tp in partitions
    }


def topic_results(ctx: RequestContext, results: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    """Per-partition errors as AddPartitionsToTxn's per-topic results."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "partition_error_code": fenced_error(error, ctx.api_version, 2)}
        )
    return [{"name": topic, "results_by_partition": items} for topic, items in by_topic.items()]


@api(25, 0, 4)
async def add_offsets_to_txn(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v4 only tells the broker that the client knows TRANSACTION_ABORTABLE (KIP-890), which Kafka's coordinator never
    answers here (it adds the group's partition as a transactions-V1 client's), so it is answered as v3."""
    broker = ctx.broker
    if broker.authorizer is not None:
        if not ctx.allowed(WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
            return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        if not ctx.allowed(READ, GROUP, body["group_id"]):
            return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    try:
        await broker.groups.topic.create()
    except (OSError, StorageError):
        return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    tp = (CONSUMER_OFFSETS_TOPIC, broker.groups.partition_of(body["group_id"]))
    results = coordinator(ctx).add_partitions(
        body["transactional_id"], body["producer_id"], body["producer_epoch"], [tp], lambda tp: partition_exists(ctx, tp)
    )
    await broker.transactions.flush()
    return {"error_code": fenced_error(results[tp], ctx.api_version, 2)}


FIRST_END_TXN_V2 = 5  # transactions V2: the epoch bumps with every transaction, the answer carries it


@api(26, 0, 5)
async def end_txn(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v5 ends the transaction as transactions V2 (TransactionVersion.transactionVersionForEndTxn: the request version
    decides, whatever transaction.version is finalized) and answers the producer id and epoch to go on with."""
    if ctx.broker.authorizer is not None and not ctx.allowed(WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
        return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "producer_id": -1, "producer_epoch": -1}
    args = (body["transactional_id"], body["producer_id"], body["producer_epoch"], body["committed"])
    if ctx.api_version >= FIRST_END_TXN_V2:
        result = coordinator(ctx).end_transaction_v2(*args)
        await ctx.broker.transactions.flush()
        return {"error_code": result.error, "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}
    error = coordinator(ctx).end_transaction(*args)
    await ctx.broker.transactions.flush()
    return {"error_code": fenced_error(error, ctx.api_version, 2)}


@api(27, 1, 2, oldest=0)
async def write_txn_markers(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if ctx.broker.authorizer is not None and not (
        ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME, log_denied=False) or ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)
    ):
        from minibroker.protocol.error_responses import error_response

        return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    markers = []
    flushes = PendingFlushes(ctx.broker)
    for marker in body["markers"]:
        partitions = [(t["name"], p) for t in marker["topics"] for p in t["partition_indexes"]]
        results = write_markers(
            ctx.broker, marker["producer_id"], marker["producer_epoch"], marker["coordinator_epoch"],
            marker["transaction_result"], partitions, flushes,
        )
        by_topic: dict[str, list[dict[str, int]]] = {}
        for (topic, partition), error in results.items():
            by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
        markers.append(
            {"producer_id": marker["producer_id"], "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}
        )
    await flushes.flush()  # what the flush policy says must be durable is, before the answer
    return {"markers": markers}


def transaction_topics(partitions: set[tuple[str, int]]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": topic, "partitions": ids} for topic, ids in by_topic.items()]


def visible_partitions(ctx: RequestContext, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """Only the partitions of topics the principal may DESCRIBE (KafkaApis.handleDescribeTransactionsRequest)."""
    if ctx.broker.authorizer is None:
        return partitions
    return {tp for tp in partitions if ctx.allowed(DESCRIBE, TOPIC, tp[0])}


def undescribed(transactional_id: str, error: ErrorCode) -> dict[str, Any]:
    """A transaction the answer cannot describe: its error and Kafka's empty state (TransactionState's defaults)."""
    return {
        "error_code": error, "transactional_id": transactional_id, "transaction_state": "", "transaction_timeout_ms": 0,
        "transaction_start_time_ms": 0, "producer_id": 0, "producer_epoch": 0, "topics": [],
    }


@api(65, 0, 0)
async def describe_transactions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    txn_coordinator = coordinator(ctx)
    states = []
    for transactional_id in body["transactional_ids"]:
        if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, TRANSACTIONAL_ID, transactional_id):
            states.append(undescribed(transactional_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        unavailable = txn_coordinator.availability(transactional_id)
        if unavailable != NO_ERROR:
            states.append(undescribed(transactional_id, unavailable))
            continue
        txn = txn_coordinator.transactions.get(transactional_id)
        if txn is None:
            states.append(undescribed(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND))
            continue
        states.append(
            {
                "error_code": NO_ERROR,
                "transactional_id": transactional_id,
                "transaction_state": txn.state.kafka_name,
                "transaction_timeout_ms": txn.timeout_ms,
                "transaction_start_time_ms": txn.start_ms,
                "producer_id": txn.producer_id,
                "producer_epoch": txn.producer_epoch,
                "topics": transaction_topics(visible_partitions(ctx, txn.partitions)),
            }
        )
    return {"transaction_states": states}


@api(66, 0, 2)
async def list_transactions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v2's TransactionalIdPattern (KIP-1152) must match a whole transactional id; a pattern RE2/J refuses answers
    INVALID_REGULAR_EXPRESSION alone, as Kafka's TransactionStateManager once loading is over."""
    from minibroker.config.re2_syntax import compile_re2
    from minibroker.transactions.metadata import TxnState  # here: the coordinator's modules load on first use

    by_name = {state.kafka_name: state for state in TxnState}
    wanted = {by_name[name] for name in body["state_filters"] if name in by_name}
    unknown = [name for name in body["state_filters"] if name not in by_name]
    producers = set(body["producer_id_filters"])
    now = ctx.broker.clock()
    min_duration = body["duration_filter"]
    txn_coordinator = coordinator(ctx)
    if txn_coordinator.partitions.loading:
        return {"error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "unknown_state_filters": [], "transaction_states": []}
    try:
        pattern = compile_re2(body["transactional_id_pattern"]) if body["transactional_id_pattern"] else None
    except re.error:
        return {"error_code": ErrorCode.INVALID_REGULAR_EXPRESSION, "unknown_state_filters": [], "transaction_states": []}
    states = []
    for txn in txn_coordinator.transactions.values():
        if body["state_filters"] and txn.state not in wanted:
            continue
        if producers and txn.producer_id not in producers:
            continue
        if min_duration >= 0 and now - txn.start_ms <= min_duration:  # Kafka's arithmetic: an Empty one's start is -1
            continue
        if pattern is not None and not pattern.fullmatch(txn.transactional_id):
            continue
        if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, TRANSACTIONAL_ID, txn.transactional_id):
            continue
        states.append(
            {"transactional_id": txn.transactional_id, "producer_id": txn.producer_id, "transaction_state": txn.state.kafka_name}
        )
    return {"error_code": NO_ERROR, "unknown_state_filters": unknown, "transaction_states": states}


@api(61, 0, 0)
async def describe_producers(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    topics = []
    for topic in body["topics"]:
        partitions = []
        if ctx.broker.authorizer is not None and not ctx.allowed(READ, TOPIC, topic["name"]):  # READ, not DESCRIBE
            partitions = [
                {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_DENIED,
                 "active_producers": []}
                for index in topic["partition_indexes"]
            ]
            topics.append({"name": topic["name"], "partitions": partitions})
            continue
        for index in topic["partition_indexes"]:
            partition_log = ctx.broker.partition(topic["name"], index)
            if partition_log is None:
                partitions.append(
                    {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "active_producers": []})
                continue
            producers = [
                {
                    "producer_id": p.producer_id,
                    "producer_epoch": p.producer_epoch,
                    "last_sequence": p.last_sequence,
                    "last_timestamp": p.last_timestamp,
                    "coordinator_epoch": p.coordinator_epoch,
                    "current_txn_start_offset": p.current_txn_start_offset,
                }
                for p in partition_log.active_producers()
            ]
            partitions.append({"partition_index": index, "error_code": NO_ERROR, "active_producers": producers})
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"topics": topics}
