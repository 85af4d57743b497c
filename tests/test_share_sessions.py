"""Share sessions as Kafka's ShareSessionCache keeps them: epochs, partitions added and forgotten, the limit; and over
the wire with several nodes, each keeping its own sessions as each Kafka broker does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from minibroker.protocol.errors import ErrorCode
from minibroker.share.sessions import MAX_EPOCH, SessionError, ShareSessions, next_epoch
from minibroker.testing import Broker
from tests.clientutil import RawConnection
from tests.test_share_fetch import ACCEPT, Member, acks, acquired, create, nothing_acquired, partition_of, produce
from tests.test_share_groups import DELETE_GROUPS, find_coordinator, heartbeat, join
from tests.test_share_groups import call as group_call

A0, A1, B0 = (b"a" * 16, 0), (b"a" * 16, 1), (b"b" * 16, 0)
CONN = object()


def refused(call, *args) -> ErrorCode:  # type: ignore[no-untyped-def]
    with pytest.raises(SessionError) as caught:
        call(*args)
    return caught.value.error


def test_epochs_count_up_and_wrap_to_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(-1) == -1


def test_a_new_session_then_incremental_fetches() -> None:
    sessions = ShareSessions(10)
    fetching, session = sessions.for_fetch("g", "m", 0, [A0, A1], [], False, CONN)
    assert fetching == [A0, A1] and session is not None and session.epoch == 1
    fetching, _ = sessions.for_fetch("g", "m", 1, [B0], [A1], False, CONN)
    assert fetching == [A0, B0]
    assert refused(sessions.for_fetch, "g", "m", 1, [], [], False, CONN) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    fetching, _ = sessions.for_fetch("g", "m", 2, [], [], True, CONN)  # acknowledgements are fine from epoch 1
    assert fetching == [A0, B0]


def test_a_new_session_replaces_the_members_old_one_and_may_not_acknowledge() -> None:
    sessions = ShareSessions(1)
    sessions.for_fetch("g", "m", 0, [A0], [], False, CONN)
    assert refused(sessions.for_fetch, "g", "m", 0, [A0], [], True, CONN) == ErrorCode.INVALID_REQUEST
    fetching, session = sessions.for_fetch("g", "m", 0, [B0], [], False, CONN)
    assert fetching == [B0] and len(sessions) == 1 and session is not None and session.epoch == 1


def test_the_limit_and_the_final_epoch() -> None:
    sessions = ShareSessions(1)
    sessions.for_fetch("g", "m1", 0, [A0], [], False, CONN)
    assert refused(sessions.for_fetch, "g", "m2", 0, [A0], [], False, CONN) == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert sessions.for_fetch("g", "m1", -1, [], [], True, CONN) == ([], None)  # the caller releases and removes it
    assert sessions.remove("g", "m1") is not None
    sessions.for_fetch("g", "m2", 0, [A0], [], False, CONN)
    assert refused(sessions.for_fetch, "g", "m1", -1, [], [], False, CONN) == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert refused(sessions.for_fetch, "g", "m1", 3, [], [], False, CONN) == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_acknowledge_epochs() -> None:
    sessions = ShareSessions(10)
    assert refused(sessions.for_acknowledge, "g", "m", 1) == ErrorCode.SHARE_SESSION_NOT_FOUND
    sessions.for_fetch("g", "m", 0, [A0], [], False, CONN)
    assert refused(sessions.for_acknowledge, "g", "m", 0) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert refused(sessions.for_acknowledge, "g", "m", 2) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    sessions.for_acknowledge("g", "m", 1)
    sessions.for_acknowledge("g", "m", -1)  # the final epoch leaves the epoch as it is
    sessions.for_acknowledge("g", "m", 2)
    assert sessions.get("g", "m").epoch == 3  # type: ignore[union-attr]


def test_sessions_of_a_connection_and_of_a_group() -> None:
    sessions = ShareSessions(10)
    other = object()
    sessions.for_fetch("g", "m1", 0, [A0], [], False, CONN)
    sessions.for_fetch("g", "m2", 0, [A0], [], False, other)
    sessions.for_fetch("h", "m3", 0, [A0], [], False, CONN)
    assert [s.member_id for s in sessions.of_connection(CONN)] == ["m1", "m3"]
    assert [s.member_id for s in sessions.of_group("g")] == ["m1", "m2"]


def test_a_replaced_or_removed_session_leaves_its_connection() -> None:
    sessions = ShareSessions(10)
    other = object()
    sessions.for_fetch("g", "m1", 0, [A0], [], False, CONN)
    sessions.for_fetch("g", "m1", 0, [A0], [], False, other)  # a new session on another connection replaces it
    assert sessions.of_connection(CONN) == [] and [s.member_id for s in sessions.of_connection(other)] == ["m1"]
    sessions.remove("g", "m1")
    assert sessions.of_connection(other) == [] and len(sessions) == 0


# ---- over the wire: each node keeps its own sessions, as each Kafka broker does ----


@contextmanager
def node_connections(broker: Broker) -> Iterator[dict[int, RawConnection]]:
    """A connection to each node, closed on the way out."""
    with ExitStack() as stack:
        yield {node: stack.enter_context(RawConnection(address)) for node, address in broker.node_addresses.items()}


def spread_topic(broker: Broker, conn: RawConnection, name: str) -> tuple[bytes, dict[int, int]]:
    """A topic of one partition per node: its id and the partition each node leads."""
    topic_id = create(conn, name, len(broker.node_addresses))
    led = {broker.core.placements.of(name, index).leader: index for index in range(len(broker.node_addresses))}
    assert sorted(led) == sorted(broker.node_addresses), led
    return topic_id, led


def one_member(
    conns: dict[int, RawConnection], group: str, topic_id: bytes, member_id: str | None = None,
) -> dict[int, Member]:
    """One member's requests to each node: the same member id (a new one unless given), a share session epoch per
    node."""
    member_id = member_id or str(uuid.uuid4())
    members = {node: Member(conn, group, topic_id) for node, conn in conns.items()}
    for member in members.values():
        member.member_id = member_id
    return members


def test_a_member_has_a_session_on_each_node_with_its_own_epoch(topic_name: str) -> None:
    """The sessions of one member on two nodes: incremental fetches and acknowledgements on each, their epochs counted
    apart, Kafka's session errors per node, and closing one leaves the other (and the records it holds) alone."""
    group = f"g-{topic_name}"
    with Broker(nodes=3, clock="virtual") as broker, node_connections(broker) as conns:
        topic_id, led = spread_topic(broker, conns[1], topic_name)
        a, b, c = led  # three nodes; a leads partition led[a], b leads led[b]
        pa, pb = led[a], led[b]
        member = one_member(conns, group, topic_id)
        assert acquired(member[a].fetch({pa: []}), pa) == []
        opened = member[b].fetch({pa: [], pb: []})  # pa asked of the wrong node: stays in b's session, never read
        assert partition_of(opened, pa)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert acquired(opened, pb) == []
        produce(conns[a], topic_name, 4, partition=pa)
        produce(conns[b], topic_name, 4, partition=pb)
        assert acquired(member[a].fetch({}), pa) == [(0, 3, 1)]  # a's epoch 1
        assert acquired(member[b].fetch({}), pb) == [(0, 3, 1)]  # b's epoch 1

        assert member[a].fetch({}, epoch=1)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH  # a expects 2
        assert member[b].acknowledge([], epoch=0, partition=pb)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert member[c].fetch({}, epoch=2)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert member[c].acknowledge(acks((0, 0, ACCEPT)), epoch=2, partition=pa)["error_code"] == (
            ErrorCode.SHARE_SESSION_NOT_FOUND)
        assert member[c].fetch({}, epoch=-1)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND

        accepted = member[a].acknowledge(acks((0, 1, ACCEPT)), partition=pa)  # a's epoch 2
        assert partition_of(accepted, pa)["error_code"] == ErrorCode.NONE
        accepted = member[b].fetch({pb: acks((0, 1, ACCEPT))})  # b's epoch 2
        assert partition_of(accepted, pb)["acknowledge_error_code"] == ErrorCode.NONE
        assert nothing_acquired(member[a].fetch({}))  # a's epoch 3: a expects 4 now, b 3
        assert member[b].fetch({}, epoch=4)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert member[a].acknowledge([], epoch=3, partition=pa)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH

        assert member[b].acknowledge([], epoch=-1, partition=pb)["error_code"] == ErrorCode.NONE  # b's session closes
        assert member[b].fetch({}, epoch=3)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert acquired(Member(conns[b], group, topic_id).fetch({pb: []}), pb) == [(2, 3, 1)]  # released by the close
        assert acquired(Member(conns[a], group, topic_id).fetch({pa: []}), pa) == []  # still held through a's session
        finishing = member[a].acknowledge(acks((2, 3, ACCEPT)), partition=pa)  # a's epoch 4
        assert partition_of(finishing, pa)["error_code"] == ErrorCode.NONE
        assert member[a].fetch({}, epoch=-1)["error_code"] == ErrorCode.NONE
        assert member[a].fetch({}, epoch=5)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert broker.core.share_partitions.start_offsets(group)[(topic_id, pa)][0] == 4, "every record of pa accepted"


def test_the_session_limit_counts_each_nodes_sessions(topic_name: str) -> None:
    """group.share.max.share.sessions bounds the sessions of each node, as Kafka's bounds each broker's cache."""
    group = f"g-{topic_name}"
    with Broker({"group.share.max.share.sessions": "1"}, nodes=3) as broker, node_connections(broker) as conns:
        topic_id, led = spread_topic(broker, conns[1], topic_name)
        a, b, c = led
        member = one_member(conns, group, topic_id)
        assert partition_of(member[a].fetch({led[a]: []}), led[a])["error_code"] == ErrorCode.NONE
        assert partition_of(member[b].fetch({led[b]: []}), led[b])["error_code"] == ErrorCode.NONE
        another = one_member(conns, group, topic_id)
        assert another[a].fetch({led[a]: []})["error_code"] == ErrorCode.SHARE_SESSION_LIMIT_REACHED
        assert partition_of(another[c].fetch({led[c]: []}), led[c])["error_code"] == ErrorCode.NONE


def test_a_stopped_node_takes_its_sessions_and_locks_with_it(topic_name: str) -> None:
    """A node that stops drops its connections, so its sessions end (as a Kafka broker's go with it); the member's
    sessions on the other nodes go on, the records they hold still held."""
    group = f"g-{topic_name}"
    with Broker(nodes=3, clock="virtual") as broker, node_connections(broker) as conns:
        topic_id, led = spread_topic(broker, conns[1], topic_name)
        a, b, _ = led
        member = one_member(conns, group, topic_id)
        for node in (a, b):
            assert acquired(member[node].fetch({led[node]: []}), led[node]) == []
            produce(conns[node], topic_name, 2, partition=led[node])
            assert acquired(member[node].fetch({}), led[node]) == [(0, 1, 1)]
        broker.stop_node(a)
        broker.start_node(a)
        with RawConnection(broker.node_addresses[a]) as again:
            member[a].conn = again
            assert member[a].fetch({}, epoch=2)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
            assert [r[:2] for r in acquired(Member(again, group, topic_id).fetch({led[a]: []}), led[a])] == [(0, 1)]
        assert nothing_acquired(member[b].fetch({}))  # b's epoch 2
        assert acquired(Member(conns[b], group, topic_id).fetch({led[b]: []}), led[b]) == []


def test_a_member_leaving_keeps_its_sessions_and_a_deleted_group_ends_them_on_every_node(topic_name: str) -> None:
    """Leaving the group is the coordinator's business (Kafka's leaders hear nothing of it): the member's sessions on
    each node still take its acknowledgements; deleting the group then ends its sessions on every node."""
    group = f"g-{topic_name}"
    with Broker(nodes=3, clock="virtual") as broker, node_connections(broker) as conns:
        topic_id, led = spread_topic(broker, conns[1], topic_name)
        coordinator = broker.node_addresses[find_coordinator(broker.bootstrap_servers, group)["node_id"]]
        member_id, _ = join(coordinator, group, [topic_name])
        member = one_member(conns, group, topic_id, member_id)
        for node, index in led.items():
            assert acquired(member[node].fetch({index: []}), index) == []
            produce(conns[node], topic_name, 1, partition=index)
            assert acquired(member[node].fetch({}), index) == [(0, 0, 1)]
        assert heartbeat(coordinator, group, member_id, -1)["error_code"] == ErrorCode.NONE
        for node, index in led.items():
            accepted = member[node].acknowledge(acks((0, 0, ACCEPT)), partition=index)
            assert partition_of(accepted, index)["error_code"] == ErrorCode.NONE
        (deleted,) = group_call(coordinator, DELETE_GROUPS, 2, {"groups_names": [group]})["results"]
        assert deleted["error_code"] == ErrorCode.NONE
        for node in led:
            assert member[node].fetch({})["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
