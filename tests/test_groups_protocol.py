"""Group API versions no real client in this suite sends, checked with hand-made requests: FindCoordinator
v0 and batched v4, JoinGroup v0 (no rebalance timeout) and v9, LeaveGroup v0's single error, OffsetFetch
v1 and v8, OffsetCommit to an unknown topic, OffsetDelete and DescribeGroups details."""

from __future__ import annotations

from typing import Any

from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from tests.clientutil import RawConnection, confluent_create_topic
from tests.groupfakes import subscription

FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, LEAVE_GROUP = 10, 11, 14, 13
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, OFFSET_DELETE = 8, 9, 15, 47


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    _, response = decode_response(api_key, version, conn.request(api_key, version, body))
    return response


def join(conn: RawConnection, version: int, group: str, member_id: str = "") -> dict[str, Any]:
    return call(conn, JOIN_GROUP, version, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 5000, "member_id": member_id,
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": subscription("t")}],
    })


def test_find_coordinator_single_and_batched(broker) -> None:
    host, port = broker.bootstrap.rsplit(":", 1)
    with RawConnection(broker.bootstrap) as conn:
        v0 = call(conn, FIND_COORDINATOR, 0, {"key": "some-group"})
        assert (v0["error_code"], v0["node_id"], v0["host"], v0["port"]) == (ErrorCode.NONE, 1, host, int(port))
        v4 = call(conn, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
        assert [(c["key"], c["error_code"], c["port"]) for c in v4["coordinators"]] == [
            ("a", ErrorCode.NONE, int(port)), ("b", ErrorCode.NONE, int(port))
        ]
        txn = call(conn, FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["tx"]})
        assert txn["coordinators"][0]["error_code"] == ErrorCode.NONE
        bad = call(conn, FIND_COORDINATOR, 3, {"key": "x", "key_type": 5})
        assert (bad["error_code"], bad["node_id"]) == (ErrorCode.INVALID_REQUEST, -1)


def test_join_group_v0_and_v9(broker, topic_name: str) -> None:
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        v0 = join(conn, 0, f"{topic_name}-v0")  # v0: no member id round trip, no rebalance timeout
        assert (v0["error_code"], v0["generation_id"], v0["protocol_name"]) == (ErrorCode.NONE, 1, "range")
        assert v0["leader"] == v0["member_id"]
        first = join(conn, 9, f"{topic_name}-v9")
        assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["protocol_name"] is None
        joined = join(conn, 9, f"{topic_name}-v9", first["member_id"])
        assert (joined["error_code"], joined["protocol_type"], joined["skip_assignment"]) == (ErrorCode.NONE, "consumer", False)


def test_leave_group_v0_reports_the_member_error(broker, topic_name: str) -> None:
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        member = join(conn, 0, topic_name)["member_id"]
        assert call(conn, LEAVE_GROUP, 0, {"group_id": topic_name, "member_id": "ghost"})["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        assert call(conn, LEAVE_GROUP, 0, {"group_id": topic_name, "member_id": member})["error_code"] == ErrorCode.NONE


def test_offsets_through_old_and_new_versions(broker, topic_name: str) -> None:
    confluent_create_topic(broker.bootstrap, topic_name, 2)
    group = f"g-{topic_name}"
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        committed = call(conn, OFFSET_COMMIT, 2, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [
                {"name": topic_name, "partitions": [{"partition_index": 1, "committed_offset": 7, "committed_metadata": "m"}]},
                {"name": "no-such-topic", "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]},
            ],
        })
        assert [[p["error_code"] for p in t["partitions"]] for t in committed["topics"]] == [
            [ErrorCode.NONE], [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        ]
        v1 = call(conn, OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": topic_name, "partition_indexes": [0, 1]}]})
        assert [(p["partition_index"], p["committed_offset"], p["metadata"]) for p in v1["topics"][0]["partitions"]] == [
            (0, -1, ""), (1, 7, "m")
        ]
        v8 = call(conn, OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}, {"group_id": "nobody", "topics": None}]})
        assert [(g["group_id"], len(g["topics"])) for g in v8["groups"]] == [(group, 1), ("nobody", 0)]

        deleted = call(conn, OFFSET_DELETE, 0, {"group_id": group, "topics": [{"name": topic_name, "partitions": [{"partition_index": 1}]}]})
        assert deleted["error_code"] == ErrorCode.NONE
        after = call(conn, OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}]})
        assert after["groups"][0]["topics"] == []


def test_describe_groups_with_authorized_operations(broker, topic_name: str) -> None:
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        joined = join(conn, 0, topic_name)
        call(conn, SYNC_GROUP, 0, {
            "group_id": topic_name, "generation_id": 1, "member_id": joined["member_id"],
            "assignments": [{"member_id": joined["member_id"], "assignment": b"A"}],
        })
        [group] = call(conn, DESCRIBE_GROUPS, 5, {"groups": [topic_name], "include_authorized_operations": True})["groups"]
        assert (group["group_state"], group["protocol_data"], group["authorized_operations"]) == ("Stable", "range", 3400)
        [member] = group["members"]
        assert (member["member_assignment"], member["member_metadata"]) == (b"A", subscription("t"))
        assert member["client_host"].startswith("/127.0.0.1")
