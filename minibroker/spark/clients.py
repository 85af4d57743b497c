"""confluent-kafka clients for the Spark source and sink, and the driver's offset look-ups.

Every client logs through Python logging instead of librdkafka's stderr lines, and every failure to
reach the cluster is turned into :class:`KafkaUnavailableError` naming the bootstrap servers.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from minibroker.spark.config import SourceOptions
from minibroker.spark.offsets import EARLIEST, LATEST, OffsetSpec, PartitionOffsets, TopicPartitionKey

log = logging.getLogger(__name__)
client_log = logging.getLogger("minibroker.spark.librdkafka")


class KafkaUnavailableError(ConnectionError):
    """The cluster could not be reached in time; the message names the bootstrap servers."""


class UnknownTopicError(LookupError):
    """A subscribed topic does not exist (the source never creates topics)."""


def make_consumer(config: Mapping[str, Any]) -> Consumer:
    return Consumer({**config, "logger": client_log})


def make_producer(config: Mapping[str, Any]) -> Producer:
    return Producer({**config, "logger": client_log})


def unavailable(bootstrap: str, timeout_s: float, exc: BaseException) -> KafkaUnavailableError:
    return KafkaUnavailableError(f"Kafka at {bootstrap} did not answer within {timeout_s:g}s: {exc}")


def check_reachable(producer: Producer, bootstrap: str, timeout_s: float) -> None:
    """Fail on the driver, before tasks start, when the sink's cluster cannot be reached."""
    try:
        producer.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise unavailable(bootstrap, timeout_s, exc) from None


class OffsetLookup:
    """The driver's view of the subscribed partitions and their offsets.

    Offsets come from ListOffsets through ``offsets_for_times`` (-2 earliest, -1 latest, or a timestamp),
    which the consumer sends with its isolation level: under read_committed "latest" is the last stable
    offset, so a range never ends inside an open transaction.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.timeout_s = options.metadata_timeout_ms / 1000
        self.consumer = make_consumer(options.consumer_config())

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> OffsetLookup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self) -> list[TopicPartitionKey]:
        """Every partition of the subscribed topics; an unknown topic is an error, not an empty read."""
        found: list[TopicPartitionKey] = []
        for topic in self.options.topics:
            try:
                metadata = self.consumer.list_topics(topic, timeout=self.timeout_s)
            except KafkaException as exc:
                raise unavailable(self.options.bootstrap, self.timeout_s, exc) from None
            info = metadata.topics.get(topic)
            if info is None or info.error is not None and info.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise UnknownTopicError(f"topic {topic!r} does not exist on {self.options.bootstrap}")
            if info.error is not None:
                raise KafkaException(info.error)
            found.extend((topic, partition) for partition in sorted(info.partitions))
        return found

    def earliest(self, partitions: Iterable[TopicPartitionKey]) -> PartitionOffsets:
        return self._list_offsets({tp: EARLIEST for tp in partitions})

    def latest(self, partitions: Iterable[TopicPartitionKey]) -> PartitionOffsets:
        return self._list_offsets({tp: LATEST for tp in partitions})

    def resolve(self, spec: OffsetSpec, partitions: list[TopicPartitionKey]) -> PartitionOffsets:
        """Concrete offsets for ``partitions``; a per-partition spec must name exactly these partitions, as in Spark."""
        if spec.kind in ("earliest", "latest"):
            return self._list_offsets({tp: EARLIEST if spec.kind == "earliest" else LATEST for tp in partitions})
        if spec.kind == "timestamp":
            assert spec.timestamp is not None
            return self._list_offsets({tp: spec.timestamp for tp in partitions})
        if set(spec.offsets) != set(partitions):
            missing = sorted(set(partitions) - set(spec.offsets))
            extra = sorted(set(spec.offsets) - set(partitions))
            raise ValueError(
                f"per-partition offsets must name every subscribed partition: missing {missing}, unknown {extra}"
            )
        if spec.kind == "timestamps":
            return self._list_offsets(dict(spec.offsets))
        special = {tp: offset for tp, offset in spec.offsets.items() if offset in (EARLIEST, LATEST)}
        return {**spec.offsets, **self._list_offsets(special)}

    def _list_offsets(self, queries: Mapping[TopicPartitionKey, int]) -> PartitionOffsets:
        """One ListOffsets round; a timestamp after the last record resolves to the end, as Kafka defines it."""
        if not queries:
            return {}
        request = [TopicPartition(topic, partition, query) for (topic, partition), query in queries.items()]
        try:
            answers = self.consumer.offsets_for_times(request, timeout=self.timeout_s)
        except KafkaException as exc:
            raise unavailable(self.options.bootstrap, self.timeout_s, exc) from None
        result: PartitionOffsets = {}
        unmatched: list[TopicPartitionKey] = []
        for answer in answers:
            if answer.error is not None:
                raise KafkaException(answer.error)
            key = (answer.topic, answer.partition)
            if answer.offset < 0:
                unmatched.append(key)
            else:
                result[key] = answer.offset
        if unmatched:
            if any(queries[tp] in (EARLIEST, LATEST) for tp in unmatched):
                raise RuntimeError(f"{self.options.bootstrap} returned no offset for {sorted(unmatched)}")
            result.update(self._list_offsets({tp: LATEST for tp in unmatched}))
        log.debug("offsets %s -> %s", dict(queries), result)
        return result
