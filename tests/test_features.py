"""Feature levels: ApiVersions v3+ reports them as a Kafka 4.3 broker does, UpdateFeatures changes them with Kafka's
controller's checks and errors, they survive restarts, an emulated release reports only the features it had, and
group.version 0 turns the consumer group protocol off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.testing import Broker
from tests.clientutil import RawConnection

API_VERSIONS, UPDATE_FEATURES, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 18, 57, 68, 69
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
KAFKA_4_3 = {
    "metadata.version": 30, "kraft.version": 1, "transaction.version": 2, "group.version": 1,
    "eligible.leader.replicas.version": 1, "share.version": 1,
}


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def features(bootstrap: str, version: int = 4) -> tuple[dict[str, tuple[int, int]], int, dict[str, int]]:
    """ApiVersions' (supported ranges, finalized epoch, finalized levels)."""
    body = {"client_software_name": "raw-test", "client_software_version": "1"} if version >= 3 else {}
    answer = call(bootstrap, API_VERSIONS, version, body)
    assert answer["error_code"] == ErrorCode.NONE
    supported = {f["name"]: (f["min_version"], f["max_version"]) for f in answer["supported_features"]}
    finalized = {}
    for f in answer["finalized_features"]:
        assert f["min_version_level"] == f["max_version_level"]
        finalized[f["name"]] = f["max_version_level"]
    return supported, answer["finalized_features_epoch"], finalized


def update(bootstrap: str, *changes: tuple[str, int, int], validate_only: bool = False, version: int = 2) -> dict[str, Any]:
    updates = [{"feature": name, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": False}
               for name, level, kind in changes]
    return call(bootstrap, UPDATE_FEATURES, version, {"timeout_ms": 5000, "feature_updates": updates,
                                                      "validate_only": validate_only})


def test_api_versions_reports_kafka_4_3s_features() -> None:
    with Broker() as broker:
        supported, epoch, finalized = features(broker.bootstrap_servers)
        assert supported == {
            "metadata.version": (7, 30), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
            "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1),
        }
        assert finalized == KAFKA_4_3 and epoch >= 0
        supported_v3, epoch_v3, finalized_v3 = features(broker.bootstrap_servers, 3)
        assert supported_v3 == {"metadata.version": (7, 30)}, "v3 leaves out features supported from 0 (KAFKA-17492)"
        assert (epoch_v3, finalized_v3) == (epoch, KAFKA_4_3)
        v2 = call(broker.bootstrap_servers, API_VERSIONS, 2, {})  # no feature fields: the decoder's defaults
        assert (v2["supported_features"], v2["finalized_features_epoch"], v2["finalized_features"]) == ([], -1, [])


def test_lowering_transaction_version_is_seen_and_kept_across_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        _, epoch, _ = features(bootstrap)
        answer = update(bootstrap, ("transaction.version", 1, SAFE_DOWNGRADE), version=1)
        assert (answer["error_code"], answer["error_message"]) == (ErrorCode.NONE, None)
        assert answer["results"] == [{"feature": "transaction.version", "error_code": 0, "error_message": None}]
        _, lowered_epoch, finalized = features(bootstrap)
        assert finalized == {**KAFKA_4_3, "transaction.version": 1} and lowered_epoch > epoch
        assert update(bootstrap, ("group.version", 0, UNSAFE_DOWNGRADE))["error_code"] == ErrorCode.NONE
        assert "group.version" not in features(bootstrap)[2], "a feature at level 0 is not finalized"

        broker.restart()
        _, restarted_epoch, finalized = features(broker.bootstrap_servers)
        assert finalized == {name: level for name, level in KAFKA_4_3.items() if name != "group.version"} | {
            "transaction.version": 1}
        assert restarted_epoch == lowered_epoch + 1

        assert update(broker.bootstrap_servers, ("transaction.version", 2, UPGRADE))["error_code"] == ErrorCode.NONE
        assert features(broker.bootstrap_servers)[2]["transaction.version"] == 2


@pytest.mark.parametrize(("change", "message"), [
    (("streams.version", 1, UPGRADE), "Local controller 1 does not support this feature."),
    (("share.version", 2, UPGRADE), "Local controller 1 only supports versions 0-1"),
    (("transaction.version", 3, UPGRADE), "Local controller 1 only supports versions 0-2"),
    (("transaction.version", -1, SAFE_DOWNGRADE), "A feature version cannot be less than 0."),
    (("transaction.version", 1, UPGRADE),
     "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."),
    (("metadata.version", 29, SAFE_DOWNGRADE),
     "Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might "
     "delete metadata information."),
    (("kraft.version", 0, SAFE_DOWNGRADE), "Can't downgrade the version of this feature."),
    (("group.version", 1, 7), "The controller does not support the given upgrade type."),
])
def test_refused_updates_get_kafkas_errors(change: tuple[str, int, int], message: str) -> None:
    with Broker() as broker:
        name, level, _ = change
        answer = update(broker.bootstrap_servers, ("group.version", 0, SAFE_DOWNGRADE), change, version=1)
        assert answer["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
        assert answer["error_message"] == (
            "The update failed for all features since the following feature had an error: "
            f"Invalid update version {level} for feature {name}. {message}"
        )
        assert answer["results"] == []
        assert features(broker.bootstrap_servers)[2] == KAFKA_4_3, "nothing changed, not even the valid update"


def test_validate_only_and_unchanged_levels_change_nothing() -> None:
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        _, epoch, _ = features(bootstrap)
        assert update(bootstrap, ("transaction.version", 0, SAFE_DOWNGRADE), validate_only=True)["error_code"] == 0
        assert update(bootstrap, ("transaction.version", 2, UPGRADE))["error_code"] == 0
        assert features(bootstrap)[1:] == (epoch, KAFKA_4_3)


def test_group_version_0_refuses_the_consumer_group_protocol() -> None:
    heartbeat = {
        "group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": [],
    }
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        assert call(bootstrap, CONSUMER_GROUP_HEARTBEAT, 1, heartbeat)["error_code"] != ErrorCode.UNSUPPORTED_VERSION
        assert update(bootstrap, ("group.version", 0, SAFE_DOWNGRADE))["error_code"] == ErrorCode.NONE
        assert call(bootstrap, CONSUMER_GROUP_HEARTBEAT, 1, heartbeat)["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        described = call(bootstrap, CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": False})
        assert [g["error_code"] for g in described["groups"]] == [ErrorCode.UNSUPPORTED_VERSION]


@pytest.mark.parametrize(("release", "supported", "unfinalized"), [
    ("2.8", {}, ()),
    ("3.5", {"metadata.version": (1, 11)}, ()),
    ("3.9", {"metadata.version": (1, 21), "kraft.version": (0, 1)}, ()),
    ("4.0", {"metadata.version": (7, 25), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1)}, ()),
    ("4.1", {"metadata.version": (7, 27), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
             "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1)}, ("share.version",)),  # KIP-932's preview
    ("4.3", {"metadata.version": (7, 30), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
             "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1)}, ()),
])
def test_an_emulated_release_reports_only_its_features(
    release: str, supported: dict[str, tuple[int, int]], unfinalized: tuple[str, ...],
) -> None:
    """Each feature finalized at its highest level on a new data directory, but those the release formatted at 0."""
    with Broker(kafka_version=release) as broker:
        got, epoch, finalized = features(broker.bootstrap_servers, 3)
        assert got == {name: span for name, span in supported.items() if span[0] > 0}
        assert finalized == {name: high for name, (_, high) in supported.items() if name not in unfinalized}
        assert epoch == (0 if supported else -1)
        if "transaction.version" not in supported:
            refused = update(broker.bootstrap_servers, ("transaction.version", 2, UPGRADE), version=0)
            assert refused["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
