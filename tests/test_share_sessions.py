"""Share sessions as Kafka's ShareSessionCache keeps them: epochs, partitions added and forgotten, the limit."""

from __future__ import annotations

import pytest

from minibroker.protocol.errors import ErrorCode
from minibroker.share.sessions import MAX_EPOCH, SessionError, ShareSessions, next_epoch

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
