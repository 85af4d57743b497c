"""Share group membership (KIP-932) over real TCP: ShareGroupHeartbeat joins, leaves, fencing and session timeouts
(on the virtual clock), the simple assignor (partitions spread over members, shared when members outnumber them),
ShareGroupDescribe, ListGroups/DeleteGroups/FindCoordinator/DescribeGroups and the other group APIs meeting a share
group id, the share.version feature and --kafka-version, a restart replaying the ShareGroup* records, and
confluent-kafka's admin client and ShareConsumer."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, ShareConsumer
from confluent_kafka.admin import AdminClient
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.testing import Broker
from tests.aclutil import ADMIN, GROUP, TOPIC, acl_broker, create_topics, grant, login, unique
from tests.clientutil import TIMEOUT_S, RawConnection
from tests.test_security import call as security_call

SHARE_GROUP_HEARTBEAT = 76
SHARE_GROUP_DESCRIBE = 77
FIND_COORDINATOR = 10
JOIN_GROUP = 11
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
API_VERSIONS = 18
UPDATE_FEATURES = 57
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
SESSION_MS = 45_000  # group.share.session.timeout.ms, Kafka's default
MAX_SIZE = 3


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def find_coordinator(bootstrap: str, group: str) -> dict[str, Any]:
    return call(bootstrap, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]


def heartbeat(bootstrap: str, group: str, member: str, epoch: int, topics: list[str] | None = None,
              rack: str | None = None) -> dict[str, Any]:
    return call(bootstrap, SHARE_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": rack, "subscribed_topic_names": topics,
    })


def join(bootstrap: str, group: str, topics: list[str]) -> tuple[str, dict[str, Any]]:
    member = str(uuid.uuid4())
    answer = heartbeat(bootstrap, group, member, 0, topics)
    assert answer["error_code"] == ErrorCode.NONE, answer
    assert answer["member_id"] == member
    return member, answer


def partitions(answer: dict[str, Any]) -> set[int]:
    """The partitions of a heartbeat's assignment (one topic)."""
    return {p for topic in answer["assignment"]["topic_partitions"] for p in topic["partitions"]}


def describe(bootstrap: str, *groups: str, operations: bool = False) -> list[dict[str, Any]]:
    return call(bootstrap, SHARE_GROUP_DESCRIBE, 1, {"group_ids": list(groups), "include_authorized_operations": operations})[
        "groups"]


def described_assignments(bootstrap: str, group: str) -> dict[str, set[int]]:
    (described,) = describe(bootstrap, group)
    return {
        m["member_id"]: {p for t in m["assignment"]["topic_partitions"] for p in t["partitions"]} for m in described["members"]
    }


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"group.share.max.size": MAX_SIZE}, clock="virtual") as running:
        yield running


@pytest.fixture
def topic(broker: Broker, topic_name: str) -> str:
    broker.create_topic(topic_name, 3)
    return topic_name


@pytest.fixture
def group(broker: Broker, topic_name: str) -> str:
    """A share group id whose coordinator (and __consumer_offsets) exists, as after a client's FindCoordinator."""
    group_id = f"share-{topic_name}"
    assert find_coordinator(broker.bootstrap_servers, group_id)["error_code"] == ErrorCode.NONE
    return group_id


def test_a_member_joins_and_gets_every_partition(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    member, answer = join(bootstrap, group, [topic])
    assert answer["member_epoch"] == 1
    assert answer["heartbeat_interval_ms"] == 5000  # group.share.heartbeat.interval.ms
    assert partitions(answer) == {0, 1, 2}
    again = heartbeat(bootstrap, group, member, 1)
    assert (again["error_code"], again["member_epoch"], again["assignment"]) == (ErrorCode.NONE, 1, None)
    (described,) = describe(bootstrap, group, operations=True)
    assert (described["error_code"], described["group_state"], described["group_epoch"], described["assignment_epoch"],
            described["assignor_name"]) == (ErrorCode.NONE, "Stable", 1, 1, "simple")
    (m,) = described["members"]
    assert (m["member_id"], m["member_epoch"], m["client_id"], m["subscribed_topic_names"]) == (member, 1, "raw-test", [topic])
    assert m["client_host"] == "/127.0.0.1"
    assert [(t["topic_name"], t["partitions"]) for t in m["assignment"]["topic_partitions"]] == [(topic, [0, 1, 2])]
    assert described["authorized_operations"] > 0


def test_partitions_are_spread_over_members(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    first, _ = join(bootstrap, group, [topic])
    second, answer = join(bootstrap, group, [topic])
    assert answer["member_epoch"] == 2
    moved = heartbeat(bootstrap, group, first, 1)  # the first member learns its new target at its next heartbeat
    assert moved["member_epoch"] == 2
    assert sorted([len(partitions(moved)), len(partitions(answer))]) == [1, 2]
    assert partitions(moved) | partitions(answer) == {0, 1, 2} and not partitions(moved) & partitions(answer)
    third, answer3 = join(bootstrap, group, [topic])
    for member in (first, second):
        heartbeat(bootstrap, group, member, 2)
    owned = described_assignments(bootstrap, group)
    assert sorted(map(len, owned.values())) == [1, 1, 1] and set().union(*owned.values()) == {0, 1, 2}
    assert owned[third] == partitions(answer3)


def test_members_share_a_partition_when_they_outnumber_it(broker: Broker, topic_name: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    broker.create_topic(topic_name, 1)
    first, answer1 = join(bootstrap, group, [topic_name])
    second, answer2 = join(bootstrap, group, [topic_name])
    assert partitions(answer1) == partitions(answer2) == {0}
    assert described_assignments(bootstrap, group) == {first: {0}, second: {0}}


def test_a_member_that_leaves_gives_its_partitions_to_the_others(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    first, _ = join(bootstrap, group, [topic])
    second, _ = join(bootstrap, group, [topic])
    assert len(partitions(heartbeat(bootstrap, group, first, 1))) == 2
    left = heartbeat(bootstrap, group, second, -1)
    assert (left["error_code"], left["member_id"], left["member_epoch"]) == (ErrorCode.NONE, second, -1)
    answer = heartbeat(bootstrap, group, first, 2)
    assert answer["member_epoch"] == 3 and partitions(answer) == {0, 1, 2}  # joined (2), left (3)
    assert list(described_assignments(bootstrap, group)) == [first]
    assert heartbeat(bootstrap, group, second, -1)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_epochs_members_and_requests_are_checked(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    member, _ = join(bootstrap, group, [topic])
    fenced = heartbeat(bootstrap, group, member, 5)
    assert fenced["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH and "greater member epoch" in fenced["error_message"]
    second, _ = join(bootstrap, group, [topic])
    assert heartbeat(bootstrap, group, member, 1)["member_epoch"] == 2  # the previous epoch is accepted
    stale = heartbeat(bootstrap, group, second, 1)  # it never had epoch 1
    assert stale["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH and "previous member epoch (0)" in stale["error_message"]
    assert heartbeat(bootstrap, group, str(uuid.uuid4()), 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    missing = heartbeat(bootstrap, f"{group}-missing", str(uuid.uuid4()), 1)
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    rejoined = heartbeat(bootstrap, group, member, 0, [topic])  # a fenced member rejoins under its id
    assert rejoined["error_code"] == ErrorCode.NONE and rejoined["assignment"] is not None
    for answer, message in [
        (heartbeat(bootstrap, group, "", 0, [topic]), "MemberId can't be empty."),
        (heartbeat(bootstrap, "", member, 0, [topic]), "GroupId can't be empty."),
        (heartbeat(bootstrap, group, member, 0, [topic], rack=""), "RackId can't be empty."),
        (heartbeat(bootstrap, group, str(uuid.uuid4()), 0, []), "SubscribedTopicNames must be set in first request."),
        (heartbeat(bootstrap, group, member, -2), "MemberEpoch is invalid."),
    ]:
        assert (answer["error_code"], answer["error_message"]) == (ErrorCode.INVALID_REQUEST, message)


def test_a_full_group_refuses_new_members(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    members = [join(bootstrap, group, [topic])[0] for _ in range(MAX_SIZE)]
    refused = heartbeat(bootstrap, group, str(uuid.uuid4()), 0, [topic])
    assert refused["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert heartbeat(bootstrap, group, members[0], 0, [topic])["error_code"] == ErrorCode.NONE  # a member rejoins


def test_a_silent_member_is_removed_when_the_clock_passes_its_session_timeout(broker: Broker, topic: str, group: str) -> None:
    bootstrap = broker.bootstrap_servers
    silent, _ = join(bootstrap, group, [topic])
    alive, _ = join(bootstrap, group, [topic])
    broker.advance(SESSION_MS - 5_000)
    assert heartbeat(bootstrap, group, alive, 2)["error_code"] == ErrorCode.NONE
    assert set(described_assignments(bootstrap, group)) == {silent, alive}
    broker.advance(10_000)  # past the silent member's session, within the other's
    assert list(described_assignments(bootstrap, group)) == [alive]
    answer = heartbeat(bootstrap, group, alive, 2)
    assert partitions(answer) == {0, 1, 2}
    assert heartbeat(bootstrap, group, silent, 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_list_find_and_delete_share_groups(broker: Broker, topic: str, group: str, monkeypatch: pytest.MonkeyPatch) -> None:
    deleted: list[str] = []
    manager = broker.core.share_partitions
    delete_group = manager.delete_group

    def recording(group_id: str) -> None:
        deleted.append(group_id)
        delete_group(group_id)

    monkeypatch.setattr(manager, "delete_group", recording)
    bootstrap = broker.bootstrap_servers
    member, _ = join(bootstrap, group, [topic])
    coordinator = find_coordinator(bootstrap, group)
    assert (coordinator["error_code"], coordinator["node_id"]) == (ErrorCode.NONE, 1)
    listed = call(bootstrap, LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})["groups"]
    assert {"group_id": group, "protocol_type": "share", "group_state": "Stable", "group_type": "share"} in listed
    assert all(g["group_type"] == "share" for g in listed)
    consumers = call(bootstrap, LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer", "classic"]})["groups"]
    assert group not in {g["group_id"] for g in consumers}
    stable = call(bootstrap, LIST_GROUPS, 5, {"states_filter": ["Empty"], "types_filter": ["Share"]})["groups"]
    assert group not in {g["group_id"] for g in stable}
    (result,) = call(bootstrap, DELETE_GROUPS, 2, {"groups_names": [group]})["results"]
    assert result["error_code"] == ErrorCode.NON_EMPTY_GROUP and not deleted
    heartbeat(bootstrap, group, member, -1)
    empty = call(bootstrap, LIST_GROUPS, 5, {"states_filter": ["empty"], "types_filter": []})["groups"]
    assert {"group_id": group, "protocol_type": "share", "group_state": "Empty", "group_type": "share"} in empty
    (result,) = call(bootstrap, DELETE_GROUPS, 2, {"groups_names": [group]})["results"]
    assert result["error_code"] == ErrorCode.NONE and deleted == [group]
    (described,) = describe(bootstrap, group)
    assert described["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert heartbeat(bootstrap, group, member, 1)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_share_and_other_groups_do_not_mix(broker: Broker, topic: str, group: str) -> None:
    """A share group id is no classic or consumer group, and the reverse, as Kafka answers each API."""
    bootstrap = broker.bootstrap_servers
    join(bootstrap, group, [topic])
    joined = call(bootstrap, JOIN_GROUP, 9, {
        "group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    })
    assert joined["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    consumer = call(bootstrap, CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 10_000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": [],
    })
    assert consumer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    (described,) = call(bootstrap, CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})[
        "groups"]
    assert described["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    (classic,) = call(bootstrap, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})["groups"]
    assert (classic["error_code"], classic["group_state"]) == (ErrorCode.NONE, "Dead")
    committed = call(bootstrap, OFFSET_COMMIT, 9, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                    "committed_leader_epoch": -1, "committed_metadata": None}]}],
    })
    assert committed["topics"][0]["partitions"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    fetched = call(bootstrap, OFFSET_FETCH, 9, {"groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}], "require_stable": False})
    assert fetched["groups"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND

    simple = f"{group}-simple"  # a classic group made by a plain offset commit
    find_coordinator(bootstrap, simple)
    commit = call(bootstrap, OFFSET_COMMIT, 9, {
        "group_id": simple, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                    "committed_leader_epoch": -1, "committed_metadata": None}]}],
    })
    assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    refused = heartbeat(bootstrap, simple, str(uuid.uuid4()), 0, [topic])
    assert (refused["error_code"], refused["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Group {simple} is not a share group.")
    (not_share,) = describe(bootstrap, simple)
    assert (not_share["error_code"], not_share["error_message"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Group {simple} is not a share group.")


def test_a_restart_keeps_share_groups(topic_name: str) -> None:
    """The ShareGroup* records of __consumer_offsets are replayed: members, epochs and assignments come back, and the
    members get a new session to heartbeat in, as in Kafka."""
    with Broker(clock="virtual") as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(topic_name, 3)
        group = f"share-{topic_name}"
        find_coordinator(bootstrap, group)
        first, _ = join(bootstrap, group, [topic_name])
        second, _ = join(bootstrap, group, [topic_name])
        heartbeat(bootstrap, group, first, 1)
        before = describe(bootstrap, group)
        broker.restart()
        bootstrap = broker.bootstrap_servers
        assert find_coordinator(bootstrap, group)["error_code"] == ErrorCode.NONE
        assert describe(bootstrap, group) == before
        answer = heartbeat(bootstrap, group, first, 2)
        assert (answer["error_code"], answer["member_epoch"], answer["assignment"]) == (ErrorCode.NONE, 2, None)
        broker.advance(SESSION_MS - 1_000)
        assert heartbeat(bootstrap, group, first, 2)["error_code"] == ErrorCode.NONE
        broker.advance(2_000)  # the second member has not heartbeated since the restart: its session is over
        assert set(described_assignments(bootstrap, group)) == {first}
        assert heartbeat(bootstrap, group, second, 2)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_share_version_zero_turns_share_groups_off(topic_name: str) -> None:
    """Lowered to 0 with UpdateFeatures, share.version takes the share APIs away (UNSUPPORTED_VERSION), as Kafka's
    isShareGroupProtocolEnabled; they stay in ApiVersions."""
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(topic_name, 1)
        find_coordinator(bootstrap, "g")
        update = call(bootstrap, UPDATE_FEATURES, 1, {"timeout_ms": 5000, "validate_only": False, "feature_updates": [
            {"feature": "share.version", "max_version_level": 0, "upgrade_type": 2}]})
        assert update["error_code"] == ErrorCode.NONE
        refused = heartbeat(bootstrap, "g", str(uuid.uuid4()), 0, [topic_name])
        assert refused["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert [g["error_code"] for g in describe(bootstrap, "g", "h")] == [ErrorCode.UNSUPPORTED_VERSION] * 2
        keys = {api["api_key"] for api in call(bootstrap, API_VERSIONS, 3, {
            "client_software_name": "t", "client_software_version": "1"})["api_keys"]}
        assert {SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE} <= keys
        call(bootstrap, UPDATE_FEATURES, 1, {"timeout_ms": 5000, "validate_only": False, "feature_updates": [
            {"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}]})
        assert heartbeat(bootstrap, "g", str(uuid.uuid4()), 0, [topic_name])["error_code"] == ErrorCode.NONE


@pytest.mark.parametrize(("release", "listed"), [("4.0", False), ("4.1", True), ("4.2", True)])
def test_releases_before_4_2_serve_no_share_groups(release: str, listed: bool, topic_name: str) -> None:
    """4.0 did not have the share APIs; 4.1 had them with share.version at 0 (not announced here); 4.2 serves them."""
    with Broker(kafka_version=release) as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(topic_name, 1)
        find_coordinator(bootstrap, "g")
        versions = call(bootstrap, API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert (SHARE_GROUP_HEARTBEAT in {api["api_key"] for api in versions["api_keys"]}) == listed
        if listed:
            answer = heartbeat(bootstrap, "g", str(uuid.uuid4()), 0, [topic_name])
            assert answer["error_code"] == (ErrorCode.NONE if release == "4.2" else ErrorCode.UNSUPPORTED_VERSION)


def test_confluent_admin_sees_no_consumer_group_in_a_share_group(broker: Broker, topic: str, group: str) -> None:
    """confluent-kafka 2.16 has no share-group calls: its consumer-group listing asks ListGroups for the classic and
    consumer types, which leaves share groups out, and describing a share group id finds no consumer group (Dead,
    from DescribeGroups after ConsumerGroupDescribe's GROUP_ID_NOT_FOUND), as against Kafka."""
    bootstrap = broker.bootstrap_servers
    join(bootstrap, group, [topic])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for types in ({}, {"types": {ConsumerGroupType.CONSUMER, ConsumerGroupType.CLASSIC}}):
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S, **types).result(TIMEOUT_S)
        assert group not in {g.group_id for g in listed.valid} and not listed.errors
    raw = call(bootstrap, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert group in {g["group_id"] for g in raw}
    described = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    assert (described.state, described.members) == (ConsumerGroupState.DEAD, [])


def test_confluent_share_consumer_joins_and_gets_the_partitions(broker: Broker, topic: str, topic_name: str) -> None:
    """confluent-kafka's ShareConsumer heartbeats into the group and is assigned every partition (what it fetches is
    the data path's, not checked here)."""
    group = f"sc-{topic_name}"
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        members: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            consumer.poll(0.2)
            (described,) = describe(broker.bootstrap_servers, group)
            members = described["members"]
            if members and members[0]["assignment"]["topic_partitions"]:
                break
        assert len(members) == 1, members
        assert [(t["topic_name"], t["partitions"]) for t in members[0]["assignment"]["topic_partitions"]] == [
            (topic, [0, 1, 2])]
        assert members[0]["member_epoch"] >= 1
    finally:
        consumer.close()
    (described,) = describe(broker.bootstrap_servers, group)
    assert described["group_state"] == "Empty" and described["members"] == []


def test_acls_as_kafka_checks_them(tmp_path: Path) -> None:
    """READ on the group to heartbeat, DESCRIBE on the topics subscribed (KAFKA-18813), DESCRIBE on the group (which
    READ implies) to describe it; authorized operations are the principal's."""
    read, describe_op = 3, 8
    for broker in acl_broker(tmp_path / "data", ("alice",)):
        topic, group = unique("t"), unique("g")
        with login(broker, ADMIN) as admin:
            assert create_topics(admin, topic)[0]["error_code"] == ErrorCode.NONE
            assert security_call(admin, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})[
                "coordinators"][0]["error_code"] == ErrorCode.NONE
        body = {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "rack_id": None,
                "subscribed_topic_names": [topic]}
        describe_body = {"group_ids": [group], "include_authorized_operations": True}
        with login(broker, "alice") as alice:
            assert security_call(alice, SHARE_GROUP_HEARTBEAT, 1, body)["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
            (refused,) = security_call(alice, SHARE_GROUP_DESCRIBE, 1, describe_body)["groups"]
            assert refused["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
            grant(broker, "alice", GROUP, group, read)
            assert security_call(alice, SHARE_GROUP_HEARTBEAT, 1, body)["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            grant(broker, "alice", TOPIC, topic, describe_op)
            assert security_call(alice, SHARE_GROUP_HEARTBEAT, 1, body)["error_code"] == ErrorCode.NONE
            (described,) = security_call(alice, SHARE_GROUP_DESCRIBE, 1, describe_body)["groups"]  # READ implies DESCRIBE
            assert described["error_code"] == ErrorCode.NONE and len(described["members"]) == 1
            assert described["authorized_operations"] == (1 << read) | (1 << describe_op)


def test_share_groups_follow_their_coordinator_across_nodes(topic_name: str) -> None:
    """With several nodes only the leader of the group's __consumer_offsets partition serves it (NOT_COORDINATOR
    elsewhere); moving that leadership loads the share group, members and epochs, on the new node."""
    with Broker(nodes=3) as broker:
        broker.create_topic(topic_name, 3)
        addresses = broker.node_addresses
        group = f"share-{topic_name}"
        found = find_coordinator(broker.bootstrap_servers, group)
        coordinator = addresses[found["node_id"]]
        other = next(node for node in addresses if node != found["node_id"])
        refused = heartbeat(addresses[other], group, str(uuid.uuid4()), 0, [topic_name])
        assert refused["error_code"] == ErrorCode.NOT_COORDINATOR
        member, _ = join(coordinator, group, [topic_name])
        before = describe(coordinator, group)
        broker.move_coordinator(other, group=group)
        assert find_coordinator(broker.bootstrap_servers, group)["node_id"] == other
        assert heartbeat(coordinator, group, member, 1)["error_code"] == ErrorCode.NOT_COORDINATOR
        assert describe(addresses[other], group) == before
        assert heartbeat(addresses[other], group, member, 1)["error_code"] == ErrorCode.NONE


def test_a_groups_own_session_timeout_and_heartbeat_interval(broker: Broker, topic: str, group: str) -> None:
    """share.session.timeout.ms and share.heartbeat.interval.ms set on the group (IncrementalAlterConfigs) replace
    the broker's from the next heartbeat."""
    bootstrap = broker.bootstrap_servers
    altered = call(bootstrap, 44, 1, {"validate_only": False, "resources": [{
        "resource_type": 32, "resource_name": group, "configs": [
            {"name": "share.session.timeout.ms", "config_operation": 0, "value": "60000"},
            {"name": "share.heartbeat.interval.ms", "config_operation": 0, "value": "7000"},
        ]}]})
    assert altered["responses"][0]["error_code"] == ErrorCode.NONE
    member, answer = join(bootstrap, group, [topic])
    assert answer["heartbeat_interval_ms"] == 7000
    broker.advance(SESSION_MS + 5_000)  # past the broker's session timeout, within the group's
    assert list(described_assignments(bootstrap, group)) == [member]
    broker.advance(10_000)
    assert described_assignments(bootstrap, group) == {}


def test_a_topic_created_after_the_subscription_is_assigned(broker: Broker, topic_name: str, group: str) -> None:
    """A member subscribed to a topic that does not exist yet has nothing; once it exists, the subscribed topics'
    metadata changed, so the next heartbeat bumps the group epoch and assigns its partitions."""
    bootstrap = broker.bootstrap_servers
    member, answer = join(bootstrap, group, [topic_name])
    assert (answer["member_epoch"], answer["assignment"]) == (1, {"topic_partitions": []})
    assert heartbeat(bootstrap, group, member, 1)["assignment"] is None
    broker.create_topic(topic_name, 2)
    answer = heartbeat(bootstrap, group, member, 1)
    assert answer["member_epoch"] == 2 and partitions(answer) == {0, 1}
