"""Exceptions raised by the storage layer; the broker maps each one to a Kafka error code."""

from __future__ import annotations


class StorageError(Exception):
    """Base class for every storage failure."""


class OffsetOutOfRangeError(StorageError):
    """A read or DeleteRecords asked for an offset outside [log start, log end] (OFFSET_OUT_OF_RANGE)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class InvalidConfigError(StorageError):
    """A topic config name is unknown or its value is invalid (INVALID_CONFIG)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name = name
        self.reason = reason


class InvalidTopicError(StorageError):
    """A topic name breaks Kafka's naming rules or collides with another (INVALID_TOPIC_EXCEPTION)."""


class TopicExistsError(StorageError):
    """CreateTopics for a name that already exists (TOPIC_ALREADY_EXISTS)."""


class UnknownTopicError(StorageError):
    """An operation named a topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION)."""


class InvalidPartitionsError(StorageError):
    """A partition count that is not positive or does not grow the topic (INVALID_PARTITIONS)."""


class PartitionCreationError(StorageError):
    """A new partition's files could not be made (too many open files, a full disk): KAFKA_STORAGE_ERROR. The
    topic is left as it was before the request."""


class LogDirLockedError(StorageError):
    """Another process (or LogManager) already holds the data directory's .lock."""


class CorruptFileError(StorageError):
    """A checkpoint, properties or metadata file does not parse; it is never silently ignored."""


class InconsistentTopicIdError(StorageError):
    """partition.metadata names a different topic id than the one assigned (INCONSISTENT_TOPIC_ID)."""


# ---- producer state (idempotent and transactional producers) ----


class ProducerStateError(StorageError):
    """A batch or marker that the partition's producer state refuses; nothing was written.

    ``error_code`` is the Kafka error code to answer with, so callers need no storage internals.
    """

    error_code = -1  # UNKNOWN_SERVER_ERROR; every subclass sets its own

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OutOfOrderSequenceError(ProducerStateError):
    """A sequence number that does not follow the producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    error_code = 45


class InvalidProducerEpochError(ProducerStateError):
    """A batch or marker from an older producer epoch than the partition knows (INVALID_PRODUCER_EPOCH)."""

    error_code = 47


class InvalidTxnStateError(ProducerStateError):
    """A non-transactional batch while the producer has a transaction open here (INVALID_TXN_STATE)."""

    error_code = 48


class TransactionCoordinatorFencedError(ProducerStateError):
    """A marker from an older coordinator epoch than the last one seen (TRANSACTION_COORDINATOR_FENCED)."""

    error_code = 52


class InvalidProducerBatchError(ProducerStateError):
    """A client batch Kafka refuses before looking at producer state: a control batch, or a producer id without
    a sequence number (INVALID_RECORD)."""

    error_code = 87
