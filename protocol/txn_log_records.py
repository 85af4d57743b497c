"""Keys and values of the ``__transaction_state`` records (ONDISK.md §5), sans-IO.

Key: ``int16 0`` then TransactionLogKey v0 (the transactional id). Value: ``int16 version`` then
TransactionLogValue: version 1 (flexible, with the tagged PreviousProducerId, NextProducerId and
ClientTransactionVersion of KIP-890) while ``transaction.version`` is finalized at 1 or more, else version 0,
as Kafka's TransactionLog.valueToBytes writes them; an Empty state has null partitions. A ``None`` value is a tombstone.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .messages import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
from .primitives import ProtocolError, Reader, Writer
from .schema import codec, in_range

KEY_TYPE = 0


class TransactionLogValue(NamedTuple):
    """One state of a transactional id; a tuple, as it is made at every state change (three per transaction) and a
    frozen dataclass costs twice as much to make."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: dict[str, tuple[int, ...]]
    last_update_ms: int = -1
    start_ms: int = -1
    prev_producer_id: int = -1  # the producer id before this state change (version 1)
    next_producer_id: int = -1  # the id an epoch overflow moves to at completion (version 1)
    client_transaction_version: int = 0  # 2: the client ends transactions with EndTxn v5 (version 1)


@lru_cache(maxsize=65536)
def encode_key(transactional_id: str) -> bytes:
    """The record key of a transactional id; cached, as every state change of a transaction writes it again."""
    writer = Writer()
    writer.int16(KEY_TYPE)
    codec(TRANSACTION_LOG_KEY, 0).encode(writer, {"transactional_id": transactional_id})
    return writer.getvalue()


def decode_key(data: bytes | bytearray | memoryview) -> str:
    reader = Reader(data)
    key_type = reader.int16()
    if key_type != KEY_TYPE:
        raise ProtocolError(f"unknown __transaction_state key type {key_type}")
    return codec(TRANSACTION_LOG_KEY, 0).decode(reader)["transactional_id"]


EMPTY_STATUS = 0


def encode_value(value: TransactionLogValue, version: int) -> bytes:
    writer = Writer()
    writer.int16(version)
    partitions = [{"topic": topic, "partition_ids": ids} for topic, ids in sorted(value.partitions.items())]
    body = {
        "producer_id": value.producer_id,
        "producer_epoch": value.producer_epoch,
        "transaction_timeout_ms": value.timeout_ms,
        "transaction_status": value.status,
        "transaction_partitions": None if value.status == EMPTY_STATUS else partitions,
        "transaction_last_update_timestamp_ms": value.last_update_ms,
        "transaction_start_timestamp_ms": value.start_ms,
        "previous_producer_id": value.prev_producer_id,
        "next_producer_id": value.next_producer_id,
        "client_transaction_version": value.client_transaction_version,
    }
    codec(TRANSACTION_LOG_VALUE, version).encode(writer, body)
    return writer.getvalue()


def decode_value(data: bytes | bytearray | memoryview | None) -> TransactionLogValue | None:
    if data is None:
        return None
    reader = Reader(data)
    version = reader.int16()
    if not in_range(version, TRANSACTION_LOG_VALUE.valid):
        raise ProtocolError(f"TransactionLogValue has no version {version}")
    body = codec(TRANSACTION_LOG_VALUE, version).decode(reader)
    return TransactionLogValue(
        producer_id=body["producer_id"],
        producer_epoch=body["producer_epoch"],
        timeout_ms=body["transaction_timeout_ms"],
        status=body["transaction_status"],
        partitions={p["topic"]: tuple(p["partition_ids"]) for p in body["transaction_partitions"] or []},
        last_update_ms=body["transaction_last_update_timestamp_ms"],
        start_ms=body["transaction_start_timestamp_ms"],
        prev_producer_id=body["previous_producer_id"],
        next_producer_id=body["next_producer_id"],
        client_transaction_version=body["client_transaction_version"],
    )
