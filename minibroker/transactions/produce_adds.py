"""Transactions V2 (KIP-890 part 2): a transactional Produce v12+ adds its partitions to the transaction itself.

Kafka's ReplicaManager does this before appending (TransactionSupportedOperation.ADD_PARTITION): a partition where the
producer already has a transaction open at this epoch needs nothing; a batch from an epoch older than the one the
partition knows is refused at once; every other partition is added through the transactional id's coordinator,
which starts the transaction if none is under way. Its errors reach the client as ReplicaManager translates them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.cluster.features import TV2
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.records import BATCH_HEADER_SIZE, parse_header

if TYPE_CHECKING:
    from minibroker.server.context import RequestContext

FIRST_PRODUCE_ADDING_PARTITIONS = 12
Refusal = tuple[ErrorCode, "str | None"]
UNVERIFIED = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


def transactional_batches(
    body: dict[str, Any], names: list[str | None], denied: set[str],
) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (producer id, epoch) of each partition whose batch is transactional (``names``: each
    topic's name, None for an unknown id; those and the topics the principal may not write are refused before
    anything is added)."""
    found = {}
    for topic, name in zip(body["topic_data"], names):
        if name is None or name in denied:
            continue
        for partition in topic["partition_data"]:
            records = partition["records"]
            if records is not None and len(records) >= BATCH_HEADER_SIZE:
                header = parse_header(records)
                if header.is_transactional:
                    found[(name, partition["index"])] = (header.producer_id, header.producer_epoch)
    return found


async def add_produced_partitions(
    ctx: RequestContext, body: dict[str, Any], names: list[str | None], denied: set[str],
) -> dict[tuple[str, int], Refusal]:
    """The partitions whose batches must not be appended, with the error and message Kafka answers for them."""
    transactional_id = body["transactional_id"]
    batches = transactional_batches(body, names, denied) if transactional_id is not None else {}
    refused: dict[tuple[str, int], Refusal] = {}
    to_add: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for tp, (producer_id, epoch) in batches.items():
        partition_log, _ = ctx.led_partition(*tp)
        if partition_log is None:
            continue  # the append answers for it (unknown partition, not the leader)
        known = partition_log.producer_epoch(producer_id)
        if known is not None and epoch < known[0]:
            refused[tp] = (ErrorCode.INVALID_PRODUCER_EPOCH,
                           f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen epoch {known[0]}")
        elif known is None or not (known[1] and known[0] == epoch):
            to_add.setdefault((producer_id, epoch), []).append(tp)
    if not to_add:
        return refused
    owner = ctx.broker.transactions.owner_of(transactional_id)
    for (producer_id, epoch), partitions in to_add.items():
        if owner is None:
            errors = {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        else:
            errors = owner.add_partitions(transactional_id, producer_id, epoch, partitions, lambda tp: True, TV2)
        refused.update({tp: translated(error) for tp, error in errors.items() if error != NO_ERROR})
    await ctx.broker.transactions.flush()
    return refused


def translated(error: ErrorCode) -> Refusal:
    """AddPartitionsToTxnManager and ReplicaManager's translation of the coordinator's answer for a producer."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH, "Producer attempted to produce with an old epoch."
    if error == ErrorCode.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    if error in UNVERIFIED:
        return (ErrorCode.NOT_ENOUGH_REPLICAS,
                f"Unable to verify the partition has been added to the transaction. Underlying error: {error.name}")
    return error, None
