"""Version emulation (kafka.version, --kafka-version, Broker(kafka_version=...)): the release table, ApiVersions and
the version checks of an emulating broker, and real clients against emulated releases."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer, KafkaProducer
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response, encode_request

from minibroker.commands.cli import build_parser, flag_settings
from minibroker.commands.reference import api_table
from minibroker.config.releases import (
    emulated_release,
    emulates_before,
    known_releases,
    resolve,
    served_by_release,
    unfinalized_features,
)
from minibroker.config.settings import ConfigError
from minibroker.control.faults import FaultSpecError
from minibroker.handlers import HANDLERS, OLDEST
from minibroker.handlers.emulation import emulated_apis
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    PARTITIONS,
    TIMEOUT_S,
    RawConnection,
    check_round_trip,
    confluent_admin,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    drain,
    make_messages,
    raw_request_frame,
)
from tests.conftest import SPEC_DIR, needs_kafka_spec
from tests.grouputil import wait_until

PRODUCE, FETCH, JOIN_GROUP, API_VERSIONS, CONSUMER_GROUP_HEARTBEAT = 0, 1, 11, 18, 68
REFUSAL_WAIT_S = 10.0


def advertised(bootstrap: str, version: int = 3) -> dict[int, tuple[int, int]]:
    """One ApiVersions round trip on a fresh connection: {api_key: (min, max)}."""
    body = {"client_software_name": "raw-test", "client_software_version": "1"} if version >= 3 else {}
    with RawConnection(bootstrap) as conn:
        correlation_id, answer = decode_response(API_VERSIONS, version, conn.request(API_VERSIONS, version, body, 7))
    assert (correlation_id, answer["error_code"]) == (7, ErrorCode.NONE)
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def expected(release: str) -> dict[int, tuple[int, int]]:
    """The release's ranges of minibroker's APIs, down to the oldest version each handler answers when emulating (the
    versions Kafka 4 removed included) and up to its own maximum; APIs without a common version left out."""
    served = served_by_release()[release]
    ranges = {}
    for key, handler in HANDLERS.items():
        if key in served:
            low = max(served[key][0], OLDEST.get(key, handler.min_version))
            high = min(served[key][1], handler.max_version)
            if low <= high:
                ranges[key] = (low, high)
    return ranges


@pytest.fixture(scope="module")
def kafka35() -> Iterator[Broker]:
    with Broker(kafka_version="3.5") as broker:
        yield broker


# ---- the table ----


@pytest.mark.parametrize(("text", "release"), [
    ("3.5", "3.5"), ("3.5.0", "3.5"), ("3.5.1", "3.5"), (" 3.5 ", "3.5"), ("2.1", "2.1"),
    ("4.0", "4.0"), ("4.0.0", "4.0"), ("4.0.1", "4.0.1"), ("4.0.2", "4.0.1"), ("4.1.1", "4.1"),
])
def test_a_release_is_named_by_its_minor_version_or_any_patch(text: str, release: str) -> None:
    assert resolve(text) == release


@pytest.mark.parametrize("text", ["9.9", "2.0", "3.10", "3", "3.5.x", "latest", "3.5-IV2", ""])
def test_an_unknown_release_is_refused_naming_the_known_ones(text: str) -> None:
    with pytest.raises(ConfigError, match=r"kafka.version .*known: 2\.1, 2\.2, .*3\.9, 4\.0, 4\.1"):
        resolve(text)


@pytest.mark.parametrize(("text", "release", "before_4_2"), [
    ("", "4.3", False), ("  ", "4.3", False), ("4.1.2", "4.1", True), ("4.2", "4.2", False), ("2.1", "2.1", True),
])
def test_the_emulated_release_is_the_newest_without_kafka_version(text: str, release: str, before_4_2: bool) -> None:
    assert emulated_release(text) == release
    assert emulates_before(text, "4.2") == before_4_2


def test_only_4_1_formats_share_version_below_its_highest() -> None:
    """Kafka 4.1's ShareVersion.SV_1 was production-ready but bootstrapped by 4.2-IV0, unstable in 4.1."""
    assert unfinalized_features("4.1.0") == {"share.version": 0}
    assert all(unfinalized_features(release) == {} for release in known_releases() if release != "4.1")


def test_facts_from_kafka_documentation() -> None:
    """A few ranges from Kafka's protocol guide and KIPs, written down independently of the table."""
    table = served_by_release()
    assert table["2.1"][PRODUCE] == (0, 7) and table["2.1"][FETCH] == (0, 10)  # KIP-110 (zstd)
    assert table["2.8"][PRODUCE] == (0, 9) and table["2.8"][FETCH] == (0, 12)
    assert table["2.3"][API_VERSIONS] == (0, 2) and table["2.4"][API_VERSIONS] == (0, 3)  # KIP-511
    assert table["3.5"][FETCH] == (0, 15)
    assert CONSUMER_GROUP_HEARTBEAT not in table["3.6"] and table["3.7"][CONSUMER_GROUP_HEARTBEAT] == (0, 0)  # KIP-848
    assert 75 not in table["3.7"] and table["3.8"][75] == (0, 0)  # DescribeTopicPartitions (KIP-966)
    assert table["4.0"][PRODUCE] == (3, 12) and table["4.0"][FETCH] == (4, 17)  # KIP-896 removed old versions
    assert table["4.0"][JOIN_GROUP] == (2, 9) and table["4.0.1"][JOIN_GROUP] == (0, 9)  # KAFKA-19444 put v0-1 back
    assert known_releases()[0] == "2.1" and {"2.8", "3.9", "4.0", "4.1"} <= set(known_releases())


def kafka_definitions() -> dict[int, tuple[int, int, list[str]]]:
    """Kafka 4.3.1's request definitions: key -> (min, highest stable version, listeners)."""
    definitions = {}
    for path in (SPEC_DIR / "messages").glob("*Request.json"):
        text = re.sub(r"//.*", "", path.read_text())
        spec = json.loads(text)
        if spec["validVersions"] == "none":  # removed APIs (ZooKeeper's LeaderAndIsr, ...)
            continue
        low, _, high = spec["validVersions"].partition("-")
        top = int(high or low) - (1 if spec.get("latestVersionUnstable") else 0)
        definitions[spec["apiKey"]] = (int(low), top, spec.get("listeners", []))
    return definitions


@needs_kafka_spec
def test_4x_releases_agree_with_kafkas_later_definitions() -> None:
    """No 4.x range goes beyond what Kafka 4.3.1 defines for its broker, and the minimums KIP-896 set in 4.0
    (with JoinGroup's back in 4.0.1) are still Kafka's."""
    definitions = kafka_definitions()
    table = served_by_release()
    for release in ("4.0", "4.0.1", "4.1", "4.2", "4.3"):
        for key, (low, high) in table[release].items():
            kafka_low, kafka_high, listeners = definitions[key]
            assert "broker" in listeners, (release, key)
            assert kafka_low <= low <= high <= kafka_high, (release, key, (low, high), (kafka_low, kafka_high))
    assert {key: low for key, (low, _) in table["4.0.1"].items()} == {key: definitions[key][0] for key in table["4.0.1"]}


def test_emulation_is_the_releases_ranges_within_what_minibroker_answers() -> None:
    for release in served_by_release():
        capped = emulated_apis(HANDLERS, release)
        assert {key: (h.min_version, h.max_version) for key, h in capped.items()} == expected(release), release
        assert all(capped[key].fn is HANDLERS[key].fn for key in capped)


@pytest.mark.parametrize(("release", "maxima"), [
    ("3.0", {PRODUCE: 9, FETCH: 12, 2: 7, 3: 11, 8: 8, 9: 8, 75: None}),
    ("3.1", {FETCH: 13, 3: 12}),  # KIP-516: Fetch and Metadata by topic id
    ("3.5", {FETCH: 15, 2: 8}),  # KIP-903 ReplicaState, KIP-405 earliest local offset
    ("3.7", {FETCH: 16, 75: None}),  # KIP-951 leader discovery
    ("3.8", {PRODUCE: 11, FETCH: 16, 75: 0}),  # KIP-966 DescribeTopicPartitions
    ("3.9", {FETCH: 17, 2: 9}),  # KIP-853 ReplicaDirectoryId, KIP-1005 latest tiered offset
    ("4.0", {PRODUCE: 12, FETCH: 17, 2: 10, 3: 13, 8: 9, 9: 9}),
    ("4.1", {PRODUCE: 13, FETCH: 18, 8: 9, 9: 9}),  # KIP-516 Produce by topic id
    ("4.2", {2: 11, 8: 10, 9: 10}),  # KIP-1023, KIP-848 offsets by topic id
])
def test_topic_id_versions_come_with_the_release_that_added_them(release: str, maxima: dict[int, int | None]) -> None:
    capped = emulated_apis(HANDLERS, release)
    assert {key: capped[key].max_version if key in capped else None for key in maxima} == maxima


def test_api_reference_prints_the_emulated_table() -> None:
    table = api_table("2.8")
    assert "| Produce | 0 | 0-9 |" in table and "| ConsumerGroupHeartbeat |" not in table
    assert "served as the release served them: Produce v0-2, Fetch v0-3, ListOffsets v0," in table
    assert "the release did not: DescribeTransactions, ListTransactions, ConsumerGroupHeartbeat," in table
    assert "does not serve" not in api_table("3.9"), "every version 3.9 served is served"
    assert "| FindCoordinator | 10 | 0-6 |" in api_table("3.9") and "| AddOffsetsToTxn | 25 | 0-4 |" in api_table("3.9")
    result = subprocess.run([sys.executable, "-m", "minibroker", "api-reference", "--kafka-version", "2.8"],
                            capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stdout) == (0, table)


# ---- an emulating broker over TCP ----


def test_api_versions_of_an_emulated_broker(kafka35: Broker) -> None:
    ranges = advertised(kafka35.bootstrap_servers)
    assert ranges == expected("3.5")
    assert ranges[PRODUCE] == (0, 9) and ranges[API_VERSIONS] == (0, 3)
    assert CONSUMER_GROUP_HEARTBEAT not in ranges and 69 not in ranges
    with Broker() as plain:
        assert advertised(plain.bootstrap_servers) == {k: (h.min_version, h.max_version) for k, h in HANDLERS.items()}
        assert plain.core.apis is HANDLERS, "without kafka.version the handler table itself is served, uncopied"


def test_api_versions_above_the_emulated_range_gets_the_v0_fallback() -> None:
    with Broker(kafka_version="2.3") as broker, RawConnection(broker.bootstrap_servers) as conn:
        conn.send(raw_request_frame(API_VERSIONS, 3, 41, b"\x09raw-test\x021\x00", header_version=2))
        correlation_id, answer = decode_response(API_VERSIONS, 0, conn.recv_frame())
        assert (correlation_id, answer["error_code"]) == (41, ErrorCode.UNSUPPORTED_VERSION)
        assert [(k["api_key"], k["min_version"], k["max_version"]) for k in answer["api_keys"]] == [(API_VERSIONS, 0, 2)]
        retry = conn.request(API_VERSIONS, 2, {}, 42)
        assert decode_response(API_VERSIONS, 2, retry)[1]["error_code"] == ErrorCode.NONE


def test_versions_and_apis_the_release_lacked_are_refused_like_unknown_ones(kafka35: Broker) -> None:
    """A version above the release's range (Produce v10 came with 3.7) and an API it lacked (ConsumerGroupHeartbeat)
    close the connection, as Kafka does with a version or key it does not serve; without emulation both are answered."""
    requests = {
        PRODUCE: (10, {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": []}),
        CONSUMER_GROUP_HEARTBEAT: (0, {
            "group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 1000, "subscribed_topic_names": [], "server_assignor": None, "topic_partitions": [],
        }),
    }
    for key, (version, body) in requests.items():
        with RawConnection(kafka35.bootstrap_servers) as conn:
            conn.send(encode_request(key, version, 5, "raw-test", body))
            assert conn.closed_by_peer(), f"API key {key} v{version} was answered"
    with Broker() as plain:
        for key, (version, body) in requests.items():
            with RawConnection(plain.bootstrap_servers) as conn:
                assert decode_response(key, version, conn.request(key, version, body, 5))[0] == 5


def test_a_fault_must_name_what_the_emulated_release_serves(kafka35: Broker) -> None:
    with pytest.raises(FaultSpecError, match="unknown API 'ConsumerGroupHeartbeat'"):
        kafka35.add_fault("ConsumerGroupHeartbeat", error="NOT_COORDINATOR")
    with pytest.raises(FaultSpecError, match="never match: this broker serves versions 0-9"):
        kafka35.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", versions=[10, 11])
    fault = kafka35.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER")
    assert fault["versions"] == [0, 9]
    kafka35.clear_faults()


# ---- real clients ----


@pytest.mark.parametrize("release", ["2.1", "2.8", "3.0"])
def test_confluent_producer_and_group_consumer_against_an_emulated_release(release: str) -> None:
    topic, group = f"t-{release}", f"g-{release}"
    messages = make_messages(300)
    with Broker(kafka_version=release) as broker:
        bootstrap = broker.bootstrap_servers
        admin = confluent_admin(bootstrap)  # kept: the futures fail when the admin client is collected
        admin.create_topics([NewTopic(topic, PARTITIONS, replication_factor=1)])[topic].result(timeout=TIMEOUT_S)
        placements = confluent_produce(bootstrap, topic, messages, **{"enable.idempotence": True})
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        try:
            consumer.subscribe([topic])
            consumed = drain(consumer, counts_by_partition(placements))
            consumer.commit(asynchronous=False)
            committed = {tp.partition: tp.offset for tp in consumer.committed(consumer.assignment(), timeout=TIMEOUT_S)}
        finally:
            consumer.close()
        check_round_trip(messages, placements, consumed)
        assert committed == counts_by_partition(placements)


def test_librdkafka_admin_knows_a_release_without_kip_464() -> None:
    """CreateTopics v4 (2.4) lets a topic take the broker's default replication factor; librdkafka's admin refuses to
    ask an emulated 2.1 for it, as it would a real one."""
    with Broker(kafka_version="2.1") as broker:
        admin = confluent_admin(broker.bootstrap_servers)
        with pytest.raises(KafkaException, match="KIP-464"):
            admin.create_topics([NewTopic("t", 1)])["t"].result(timeout=TIMEOUT_S)


def consumer_protocol_member(bootstrap: str, topic: str, logs: list[str]) -> Consumer:
    """A KIP-848 (group.protocol=consumer) member whose group debug log lines go to ``logs``."""

    class Logger:
        def log(self, level: int, message: str, *args: object) -> None:
            logs.append(message % args if args else message)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kip848-{topic}", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "debug": "cgrp", "logger": Logger()})
    consumer.subscribe([topic])
    return consumer


def polled_until(consumer: Consumer, condition: Callable[[], bool], what: str, seconds: float = TIMEOUT_S) -> None:
    """Poll (which runs the client's callbacks and group work) until ``condition`` holds."""
    wait_until(lambda: consumer.poll(0.05) is None and condition(), what, seconds)


def test_a_kip848_consumer_meets_a_broker_without_it() -> None:
    """3.5 had no ConsumerGroupHeartbeat: librdkafka finds the feature missing (its _UNSUPPORTED_FEATURE, logged, not
    raised) and never joins; against an emulated 4.0 the same consumer joins."""
    with Broker(kafka_version="3.5") as broker:
        confluent_create_topic(broker.bootstrap_servers, "t")
        logs: list[str] = []
        consumer = consumer_protocol_member(broker.bootstrap_servers, "t", logs)
        try:
            missing = "Required feature not supported by broker: ConsumerGroupHeartbeatRequest not supported by broker"
            polled_until(consumer, lambda: any(missing in line for line in logs), "the feature found missing", REFUSAL_WAIT_S)
            assert not consumer.assignment()
        finally:
            consumer.close()
    with Broker(kafka_version="4.0") as broker:
        confluent_create_topic(broker.bootstrap_servers, "t")
        consumer = consumer_protocol_member(broker.bootstrap_servers, "t", [])
        try:
            polled_until(consumer, lambda: bool(consumer.assignment()), "a KIP-848 assignment")
        finally:
            consumer.close()


@pytest.mark.parametrize(("release", "inferred"), [
    ("2.1", (2, 1)), ("2.4", (2, 4)), ("2.8", (2, 8)), ("3.0", (3, 0)), ("3.1", (3, 1)), ("3.5", (3, 5)), ("3.7", (3, 7)),
    ("3.9", (3, 9)), ("4.0", (4, 0)), ("4.1", (4, 1)), ("4.2", (4, 2)),
])
def test_kafka_python_infers_the_emulated_release(release: str, inferred: tuple[int, int]) -> None:
    """kafka-python probes ApiVersions and names the release from marker versions (e.g. 2.8: Produce v9, 3.1: Fetch
    v13, 3.9: Fetch v17, 4.1: Produce v13, 4.2: ListOffsets v11). Releases whose marker is above minibroker's own
    range would be inferred lower; these are exact."""
    with Broker(kafka_version=release) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        try:
            assert producer.config["api_version"] == inferred
        finally:
            producer.close()


def test_an_emulated_4_0_refuses_a_client_pinned_to_an_old_protocol(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python pinned to 0.10.1 joins with JoinGroup v1, which Kafka 4.0.0 removed (KIP-896) and 4.0.1 put back
    (minibroker itself serves it); a kafka-python that probes ApiVersions produces and consumes against 4.0."""
    caplog.set_level(logging.WARNING, logger="minibroker.server.dispatch")
    for release in ("4.0", "4.0.1"):
        with Broker(kafka_version=release, num_partitions=1) as broker:
            consumer = KafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id="old",
                                     api_version=(0, 10, 1))
            try:
                if release == "4.0":
                    refused = "API key 11 version 1 is outside the supported 2-9"
                    wait_until(lambda: bool(consumer.poll(timeout_ms=50) or refused in caplog.text), "JoinGroup v1 refused",
                               REFUSAL_WAIT_S)
                    assert not consumer.assignment()
                else:
                    wait_until(lambda: bool(consumer.poll(timeout_ms=50) or consumer.assignment()), "a v1 member's assignment")
            finally:
                consumer.close()
    with Broker(kafka_version="4.0", num_partitions=1) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send("t", b"v").get(timeout=TIMEOUT_S)
        producer.close()
        consumer = KafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id="modern",
                                 auto_offset_reset="earliest")
        try:
            records: list[bytes] = []
            wait_until(lambda: bool(records.extend(r.value for batch in consumer.poll(timeout_ms=50).values()
                                                   for r in batch) or records), "the record, read by a group member")
            assert records == [b"v"]
        finally:
            consumer.close()


async def test_aiokafka_against_an_emulated_release_in_async_mode() -> None:
    async with Broker(kafka_version="2.8", num_partitions=1) as broker:
        ranges = await asyncio.to_thread(advertised, broker.bootstrap_servers, 0)  # the broker runs on this loop
        assert ranges == expected("2.8") and ranges[PRODUCE] == (0, 9)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait("t", b"v")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id="g",
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            record = await consumer.getone()
            assert record.value == b"v"
        finally:
            await consumer.stop()


# ---- settings ----


def test_broker_keyword_refuses_an_unknown_release() -> None:
    with pytest.raises(ConfigError, match="kafka.version '2.0'.*known: 2.1"):
        Broker(kafka_version="2.0").start()


def test_cli_flag_is_the_setting() -> None:
    assert flag_settings(build_parser().parse_args(["serve", "--kafka-version", "3.5.1"]))["kafka.version"] == "3.5.1"
    assert "--kafka-version" in subprocess.run([sys.executable, "-m", "minibroker", "serve", "--help"],
                                               capture_output=True, text=True, timeout=30).stdout


def test_cli_refuses_an_unknown_release(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "minibroker", "serve", "--port", "0", "--data-dir", str(tmp_path),
                             "--kafka-version", "3.10"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "configuration error: kafka.version '3.10'" in result.stderr and "4.1" in result.stderr


def test_environment_setting_and_start_up_line(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", env={"MINIBROKER_KAFKA_VERSION": "3.5.1"}).start()
    try:
        assert advertised(broker.bootstrap) == expected("3.5")
        assert re.search(r"emulating Apache Kafka 3\.5: ApiVersions advertises \d+ APIs at the versions that release "
                         r"served \(versions Kafka 4 removed, served as the release did: Produce v0-2, .*\); "
                         r"not served: ConsumerGroupHeartbeat, ConsumerGroupDescribe", broker.log_text())
    finally:
        broker.stop()
