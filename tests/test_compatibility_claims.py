"""The docs' comparison with Apache Kafka (docs/compatibility.md) holds: each claim is read off the page's prose and
checked against the code or a running broker, so editing the prose or the code alone fails here. (The list of unserved
APIs is generated when the site is built: tests/test_docs.py.)"""

from __future__ import annotations

import re
from dataclasses import MISSING
from pathlib import Path

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from minibroker.commands.reference import UNSERVED_REASONS
from minibroker.config.kafka_settings import BROKER_SETTINGS
from minibroker.config.settings import SETTING_FIELDS
from minibroker.handlers import TABLE
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.messages import KAFKA_APIS
from minibroker.protocol.records import RecordInput, build_batch
from minibroker.testing import Broker

from tests.clientutil import Deadline, RawConnection, confluent_create_topic

COMPATIBILITY = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"
PRODUCE, METADATA, FIND_COORDINATOR = 0, 3, 10
T0 = 1_700_000_000_000


def comparison() -> str:
    """The docs' section "Compared with Apache Kafka" (docs/compatibility.md), up to the next section or the end."""
    text = COMPATIBILITY.read_text()
    start = text.index("## Compared with Apache Kafka\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def claim(pattern: str) -> re.Match[str]:
    """The one match of ``pattern`` in the section (its words may wrap across lines); the claim must be there."""
    matches = list(re.finditer(pattern.replace(" ", r"\s+"), comparison()))
    assert len(matches) == 1, f"the comparison with Kafka should state {pattern!r} once, found {len(matches)}"
    return matches[0]


def test_the_group_defaults_said_to_differ_are_those_that_do() -> None:
    """Every group default the page says differs has the stated value here and in Kafka, and no other group
    default differs from Kafka's (kafka_settings.py: Kafka's own definitions)."""
    stated = {
        name: (int(ours), int(kafka))
        for name, ours, kafka in re.findall(r"`(group\.[a-z.]+)`\s+is\s+(\d+)\s+ms\s+\(Kafka:\s+(\d+)\)", comparison())
    }
    defaults = {
        f.metadata["kafka"]: f.default for f in SETTING_FIELDS
        if f.metadata["kafka"].startswith("group.") and f.default is not MISSING
    }
    differing = {name for name, default in defaults.items() if str(default) != BROKER_SETTINGS[name][1]}
    assert set(stated) == differing
    assert {name: (defaults[name], int(BROKER_SETTINGS[name][1])) for name in differing} == stated


def message_set(magic: int) -> bytes:
    """One record in the message format of ``magic``: a legacy message set (0, 1) or a record batch (2)."""
    if magic == 2:
        return build_batch([RecordInput(b"k", b"v", (), T0)])
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    builder.append(0, None if magic == 0 else T0, b"k", b"v")
    return bytes(builder.build())


def produce_error(bootstrap: str, topic: str, records: bytes) -> ErrorCode:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]},
    ]}
    with RawConnection(bootstrap) as conn:
        answer = decode_response(PRODUCE, 9, conn.request(PRODUCE, 9, body))[1]
    [result] = answer["responses"][0]["partition_responses"]
    return ErrorCode(result["error_code"])


def test_the_old_message_formats_are_refused(bootstrap: str, topic_name: str) -> None:
    """The formats the page says are refused get its error from a Produce (Kafka 4 accepts only magic 2 from
    Produce v3 on: ProduceRequest.validateRecords, InvalidRecordException); the current format is accepted."""
    refused = claim(r"\(magic (\d) and (\d)\) are refused with ([A-Z_]+)")
    confluent_create_topic(bootstrap, topic_name, partitions=1)
    for magic in map(int, refused.groups()[:2]):
        assert produce_error(bootstrap, topic_name, message_set(magic)) == ErrorCode[refused[3]], f"magic {magic}"
    assert produce_error(bootstrap, topic_name, message_set(2)) == ErrorCode.NONE


def coordinator_ready(bootstrap: str, key_type: int, key: str) -> None:
    """FindCoordinator until it names a coordinator: by then the key type's internal topic exists."""
    deadline = Deadline()
    with RawConnection(bootstrap) as conn:
        while True:
            body = {"key_type": key_type, "coordinator_keys": [key]}
            [found] = decode_response(FIND_COORDINATOR, 4, conn.request(FIND_COORDINATOR, 4, body))[1]["coordinators"]
            if found["error_code"] == ErrorCode.NONE:
                return
            assert deadline.left(), f"no coordinator for {key!r}: {ErrorCode(found['error_code']).name}"


def replication_factors(bootstrap: str, topic: str) -> set[int]:
    body = {"topics": [{"name": topic, "topic_id": bytes(16)}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
    with RawConnection(bootstrap) as conn:
        [answer] = decode_response(METADATA, 9, conn.request(METADATA, 9, body))[1]["topics"]
    assert answer["error_code"] == ErrorCode.NONE, ErrorCode(answer["error_code"]).name
    return {len(partition["replica_nodes"]) for partition in answer["partitions"]}


@pytest.mark.parametrize("nodes", [1, 3])
def test_internal_topics_get_the_stated_replication_factor(nodes: int) -> None:
    """The internal topics' replication factor is the one the page states, capped at the node count; the stated
    factor is Kafka's default for each of them."""
    factor = int(claim(r"internal topics get Kafka's replication factor of (\d+), or the node count when the "
                       r"cluster is smaller")[1])
    for setting in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                    "share.coordinator.state.topic.replication.factor"):
        assert BROKER_SETTINGS[setting][1] == str(factor), setting
    with Broker(nodes=nodes, offsets_topic_num_partitions=3, transaction_state_log_num_partitions=3) as broker:
        for key_type, topic in ((0, "__consumer_offsets"), (1, "__transaction_state")):
            coordinator_ready(broker.bootstrap_servers, key_type, "readme-claims")
            assert replication_factors(broker.bootstrap_servers, topic) == {min(factor, nodes)}, topic


def test_every_reason_names_an_unserved_api() -> None:
    """A reason for an API that is served now, or that Kafka does not define, is stale: remove it from
    minibroker/commands/reference.py's UNSERVED_REASONS (unserved APIs without a reason fail the reference page's generation)."""
    stale = {key for keys in UNSERVED_REASONS.values() for key in keys if key in TABLE or key not in KAFKA_APIS}
    assert not stale
