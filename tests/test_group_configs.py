"""Group configs (Kafka 4: KIP-848, KIP-932, KIP-1071): IncrementalAlterConfigs, AlterConfigs and DescribeConfigs on
GROUP resources, with Kafka's names, validation, bounds (the broker's group.*.min/max settings), sources and types,
kept across a restart, and applied to the consumer-protocol group they name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from minibroker.protocol.frames import decode_response
from minibroker.testing import Broker

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic
from tests.grouputil import SETTLE_S, stop_all, wait_until
from tests.test_groups_consumer_protocol import start

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, CONSUMER_GROUP_HEARTBEAT = 32, 33, 44, 68
FIND_COORDINATOR = 10
GROUP = 32  # ConfigResource.Type.GROUP
SET, DELETE, APPEND = 0, 1, 2
NONE, INVALID_REQUEST, INVALID_CONFIG = 0, 42, 40
GROUP_CONFIG, STATIC_BROKER, DEFAULT = 8, 4, 5
INT, STRING, BOOLEAN = 3, 2, 1
HEARTBEAT = "consumer.heartbeat.interval.ms"
SESSION = "consumer.session.timeout.ms"


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def change(bootstrap: str, group: str, *ops: tuple[str, str | None, int], validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs of one group: (error code, message)."""
    configs = [{"name": name, "value": value, "config_operation": op} for name, value, op in ops]
    body = {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": configs}], "validate_only": validate_only}
    [response] = call(bootstrap, INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    return response["error_code"], response["error_message"]


def replace_all(bootstrap: str, group: str, configs: dict[str, str]) -> tuple[int, str | None]:
    """AlterConfigs (the legacy API: the group's whole set of overrides)."""
    body = {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": name, "value": value} for name, value in configs.items()]}], "validate_only": False}
    [response] = call(bootstrap, ALTER_CONFIGS, 2, body)["responses"]
    return response["error_code"], response["error_message"]


def described(bootstrap: str, group: str, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    body = {"resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": names}],
            "include_synonyms": True, "include_documentation": False}
    [result] = call(bootstrap, DESCRIBE_CONFIGS, 4, body)["results"]
    assert result["error_code"] == NONE, result
    return {entry["name"]: entry for entry in result["configs"]}


def shown(bootstrap: str, group: str) -> dict[str, tuple[str, int]]:
    """name -> (value, source) of the group's configs."""
    return {name: (e["value"], e["config_source"]) for name, e in described(bootstrap, group).items()}


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose consumer-protocol bounds allow short sessions (Kafka's minimum is 45 s) and heartbeats."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("groupcfg") / "data",
        "group.consumer.min.session.timeout.ms=6000", "group.consumer.session.timeout.ms=20000",
        "group.consumer.max.heartbeat.interval.ms=3000",
    ).start()
    try:
        yield proc
    finally:
        proc.stop()


def test_describe_a_group_without_configs(bootstrap: str, topic_name: str) -> None:
    """Every group config of Kafka 4.3, each from the broker setting it follows, or GroupConfig's own default."""
    entries = described(bootstrap, f"g-{topic_name}")
    assert set(entries) == {
        "consumer.assignment.interval.ms", HEARTBEAT, SESSION, "share.assignment.interval.ms", "share.auto.offset.reset",
        "share.delivery.count.limit", "share.heartbeat.interval.ms", "share.isolation.level",
        "share.partition.max.record.locks", "share.record.lock.duration.ms", "share.renew.acknowledge.enable",
        "share.session.timeout.ms", "streams.assignment.interval.ms", "streams.heartbeat.interval.ms",
        "streams.initial.rebalance.delay.ms", "streams.num.standby.replicas", "streams.session.timeout.ms",
    }
    heartbeat = entries[HEARTBEAT]
    assert (heartbeat["value"], heartbeat["config_source"], heartbeat["config_type"]) == ("500", DEFAULT, INT)
    assert heartbeat["synonyms"] == [{"name": "group.consumer.heartbeat.interval.ms", "value": "500", "source": DEFAULT}]
    reset = entries["share.auto.offset.reset"]
    assert (reset["value"], reset["config_source"], reset["config_type"]) == ("latest", DEFAULT, STRING)
    assert reset["synonyms"] == [{"name": "share.auto.offset.reset", "value": "latest", "source": DEFAULT}]
    assert entries["share.renew.acknowledge.enable"]["config_type"] == BOOLEAN
    assert not any(e["read_only"] or e["is_sensitive"] for e in entries.values())


def test_set_describe_and_delete(bootstrap: str, topic_name: str) -> None:
    group = f"g-{topic_name}"
    assert change(bootstrap, group, (HEARTBEAT, "1000", SET), ("share.auto.offset.reset", "earliest", SET),
                  ("share.isolation.level", "read_committed", SET), ("share.record.lock.duration.ms", "20000", SET),
                  ("share.delivery.count.limit", "3", SET)) == (NONE, None)
    entries = described(bootstrap, group)
    assert (entries[HEARTBEAT]["value"], entries[HEARTBEAT]["config_source"]) == ("1000", GROUP_CONFIG)
    assert entries[HEARTBEAT]["synonyms"] == [
        {"name": HEARTBEAT, "value": "1000", "source": GROUP_CONFIG},
        {"name": "group.consumer.heartbeat.interval.ms", "value": "500", "source": DEFAULT},
    ]
    values = shown(bootstrap, group)
    assert values["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    assert values["share.isolation.level"] == ("read_committed", GROUP_CONFIG)
    assert values["share.record.lock.duration.ms"] == ("20000", GROUP_CONFIG)
    assert values[SESSION] == ("45000", DEFAULT)

    # Incremental: the other overrides stay; DELETE goes back to the broker's value.
    assert change(bootstrap, group, (HEARTBEAT, None, DELETE), ("share.delivery.count.limit", "4", SET)) == (NONE, None)
    values = shown(bootstrap, group)
    assert values[HEARTBEAT] == ("500", DEFAULT)
    assert values["share.delivery.count.limit"] == ("4", GROUP_CONFIG)
    assert values["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    assert list(described(bootstrap, group, ["share.isolation.level"])) == ["share.isolation.level"]

    # AlterConfigs replaces the whole set.
    assert replace_all(bootstrap, group, {"share.auto.offset.reset": "by_duration:PT1H30M"}) == (NONE, None)
    values = shown(bootstrap, group)
    assert values["share.auto.offset.reset"] == ("by_duration:PT1H30M", GROUP_CONFIG)
    assert values["share.delivery.count.limit"] == ("5", DEFAULT)


@pytest.mark.parametrize(("ops", "error"), [
    ([("consumer.session.timeout", "50000", SET)], (INVALID_CONFIG, "Unknown group config name: consumer.session.timeout")),
    ([(HEARTBEAT, "soon", SET)],
     (INVALID_CONFIG, "Invalid value soon for configuration consumer.heartbeat.interval.ms: Not a number of type INT")),
    ([(HEARTBEAT, "0", SET)],
     (INVALID_CONFIG, "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1")),
    ([(HEARTBEAT, "400", SET)], (INVALID_CONFIG,
     "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms")),
    ([(HEARTBEAT, "20000", SET)], (INVALID_CONFIG,
     "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")),
    ([(SESSION, "30000", SET)], (INVALID_CONFIG,
     "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")),
    ([("share.record.lock.duration.ms", "10000", SET)], (INVALID_CONFIG,
     "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms")),
    ([("share.delivery.count.limit", "11", SET)], (INVALID_CONFIG,
     "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit")),
    ([("streams.num.standby.replicas", "3", SET)], (INVALID_CONFIG,
     "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas")),
    ([("consumer.assignment.interval.ms", "16000", SET)], (INVALID_CONFIG,
     "consumer.assignment.interval.ms must be less than or equal to group.consumer.max.assignment.interval.ms")),
    ([("share.isolation.level", "committed", SET)], (INVALID_CONFIG,
     "Invalid value committed for configuration share.isolation.level: String must be one of: read_committed, "
     "read_uncommitted")),
    ([("share.auto.offset.reset", "by_duration:-PT1H", SET)], (INVALID_CONFIG,
     "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for "
     "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
     "'by_duration:<PnDTnHnMn.nS>'.")),
    ([(HEARTBEAT, "1000", APPEND)],
     (INVALID_CONFIG, "Can't APPEND to key consumer.heartbeat.interval.ms because its type is not LIST.")),
    ([(HEARTBEAT, "1000", SET), (HEARTBEAT, "2000", SET)], (INVALID_REQUEST, "Error due to duplicate config keys")),
    ([(HEARTBEAT, None, SET)], (INVALID_REQUEST, "Null value not supported for : consumer.heartbeat.interval.ms")),
])
def test_invalid_changes_change_nothing(bootstrap: str, topic_name: str, ops: list, error: tuple[int, str]) -> None:
    group = f"g-{topic_name}"
    assert change(bootstrap, group, ("share.delivery.count.limit", "3", SET)) == (NONE, None)
    before = shown(bootstrap, group)
    assert change(bootstrap, group, *ops) == error
    assert shown(bootstrap, group) == before


def test_validate_only_and_the_default_group(bootstrap: str, topic_name: str) -> None:
    group = f"g-{topic_name}"
    assert change(bootstrap, group, (HEARTBEAT, "1000", SET), validate_only=True) == (NONE, None)
    assert shown(bootstrap, group)[HEARTBEAT] == ("500", DEFAULT)
    assert change(bootstrap, "", (HEARTBEAT, "1000", SET)) == (INVALID_REQUEST, "Default group resources are not allowed.")
    body = {"resources": [{"resource_type": GROUP, "resource_name": "", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    [result] = call(bootstrap, DESCRIBE_CONFIGS, 4, body)["results"]
    assert (result["error_code"], result["error_message"]) == (INVALID_REQUEST, "Group name must not be empty")


def test_bounds_follow_the_broker_settings(bounded: BrokerProcess) -> None:
    """The same value is refused or accepted by the broker's group.consumer.min/max settings; the session timeout must
    stay above the heartbeat interval, the group's or the broker's."""
    bootstrap = bounded.bootstrap
    assert change(bootstrap, "bounds", (SESSION, "8000", SET)) == (NONE, None)
    assert change(bootstrap, "bounds", (HEARTBEAT, "4000", SET)) == (INVALID_CONFIG,
        "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    assert change(bootstrap, "bounds", (SESSION, "2000", SET), (HEARTBEAT, "2500", SET)) == (INVALID_CONFIG,
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    entries = described(bootstrap, "other-group", [SESSION])
    assert entries[SESSION]["value"] == "20000" and entries[SESSION]["config_source"] == STATIC_BROKER
    assert entries[SESSION]["synonyms"] == [
        {"name": "group.consumer.session.timeout.ms", "value": "20000", "source": STATIC_BROKER},
        {"name": "group.consumer.session.timeout.ms", "value": "45000", "source": DEFAULT},
    ]


def test_group_configs_survive_a_restart(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        assert change(proc.bootstrap, "kept", (HEARTBEAT, "2000", SET), ("share.auto.offset.reset", "earliest", SET)) == (
            NONE, None,
        )
        proc.restart()
        values = shown(proc.bootstrap, "kept")
        assert values[HEARTBEAT] == ("2000", GROUP_CONFIG)
        assert values["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
        assert change(proc.bootstrap, "kept", (HEARTBEAT, None, DELETE), ("share.auto.offset.reset", None, DELETE)) == (
            NONE, None,
        )
        proc.restart()
        assert shown(proc.bootstrap, "kept")[HEARTBEAT] == ("500", DEFAULT)
    finally:
        proc.stop()


def heartbeat_interval(bootstrap: str, group: str, topic: str, member_id: str) -> int:
    """A consumer-protocol member joins ``group``: the heartbeat interval its first heartbeat is told."""
    body = {"group_id": group, "member_id": member_id, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}
    answer = call(bootstrap, CONSUMER_GROUP_HEARTBEAT, 1, body)
    assert answer["error_code"] == NONE, answer
    return answer["heartbeat_interval_ms"]


def test_a_groups_heartbeat_interval_reaches_its_members(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1)
    group, other = f"g-{topic_name}", f"other-{topic_name}"
    found = call(bootstrap, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group, other]})
    assert [c["error_code"] for c in found["coordinators"]] == [NONE, NONE]  # __consumer_offsets exists
    assert heartbeat_interval(bootstrap, group, topic_name, "m1") == 500
    assert change(bootstrap, group, (HEARTBEAT, "1500", SET)) == (NONE, None)
    assert heartbeat_interval(bootstrap, group, topic_name, "m2") == 1500
    assert heartbeat_interval(bootstrap, other, topic_name, "m1") == 500, "only the group named"


def test_a_kip848_consumer_heartbeats_at_its_groups_interval(topic_name: str) -> None:
    """confluent-kafka (group.protocol=consumer) in a group whose consumer.heartbeat.interval.ms an AdminClient set:
    the broker tells its heartbeats the group's interval, so in steady state they come that far apart (the broker's
    own interval is 500 ms)."""
    interval_ms = 2500
    with Broker(transcript=True) as broker:
        bootstrap = broker.bootstrap_servers
        confluent_create_topic(bootstrap, topic_name, 2)
        group = f"g-{topic_name}"
        admin = confluent_admin(bootstrap)
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(HEARTBEAT, str(interval_ms), incremental_operation=AlterConfigOpType.SET)])
        [future] = admin.incremental_alter_configs([resource]).values()
        future.result(TIMEOUT_S)
        [future] = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
        entry = future.result(TIMEOUT_S)[HEARTBEAT]
        assert (entry.value, entry.source) == (str(interval_ms), GROUP_CONFIG)

        member, client = start("a", bootstrap, group, [topic_name])
        try:
            wait_until(lambda: member.assignment == {0, 1}, "the member to own both partitions")
            time.sleep(SETTLE_S)  # the heartbeat acknowledging the assignment is behind it
            since = broker.transcript_position()
            wait_until(lambda: len(heartbeats(broker, group, since)) >= 3, "three heartbeats in steady state")
            times = heartbeats(broker, group, since)
            assert min(b - a for a, b in zip(times, times[1:])) >= interval_ms - 100
        finally:
            stop_all([member])


def heartbeats(broker: Broker, group: str, since: int) -> list[int]:
    """When the broker received the group's ConsumerGroupHeartbeats after transcript position ``since``."""
    return [e["time_ms"] for e in broker.transcript(since) if e["api"] == "ConsumerGroupHeartbeat" and e.get("group_id") == group]


def test_reset_forgets_and_a_snapshot_restores_group_configs() -> None:
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        assert change(bootstrap, "snap", (HEARTBEAT, "2000", SET)) == (NONE, None)
        broker.snapshot("with-configs")
        assert change(bootstrap, "snap", (HEARTBEAT, "3000", SET)) == (NONE, None)
        broker.restore("with-configs")
        assert shown(broker.bootstrap_servers, "snap")[HEARTBEAT] == ("2000", GROUP_CONFIG)
        broker.reset()
        assert shown(broker.bootstrap_servers, "snap")[HEARTBEAT] == ("500", DEFAULT)
