"""A client that repeats what the broker refuses (an old protocol version, a wrong password, TLS on a plaintext port)
is logged once per problem and client, then counted: one line per interval of the broker's clock gives the repeats,
and a client that stopped is forgotten. Driven over TCP by a real old client and by raw frames, on the virtual clock."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
from kafka import KafkaConsumer
from minibroker.protocol.frames import encode_request

from minibroker.cluster.clock import wall_clock_ms
from minibroker.server.repeated_logs import REPEAT_INTERVAL_MS, RepeatedLogs
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import Deadline, RawConnection
from tests.grouputil import wait_until
from tests.test_security import ALICE, ALICE_PASSWORD, WRONG_PASSWORD, raw_login

PRODUCE, LIST_OFFSETS, JOIN_GROUP = 0, 2, 11
# Requests at versions Kafka 4 removed: (API key, version, body)
OLD_LIST_OFFSETS = (LIST_OFFSETS, 0, {"replica_id": -1, "topics": []})
OLD_PRODUCE = (PRODUCE, 2, {"acks": 1, "timeout_ms": 1000, "topic_data": []})
PORT = re.compile(r"(closing 127\.0\.0\.1):\d+")


def refused(bootstrap: str, client_id: str, request: tuple[int, int, dict] = OLD_LIST_OFFSETS) -> None:
    """One old request from ``client_id``, on a connection of its own, which the broker closes."""
    api_key, version, body = request
    with RawConnection(bootstrap) as conn:
        conn.send(encode_request(api_key, version, 1, client_id, body))
        assert conn.closed_by_peer()


def lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    """The minibroker lines with ``text``, the connections' ports taken out."""
    return [PORT.sub(r"\1:PORT", record.getMessage()) for record in caplog.records
            if record.name.startswith("minibroker") and text in record.getMessage()]


def test_a_pinned_old_client_retrying_is_one_line_then_a_count_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python pinned to 0.10.1 retries JoinGroup v1, which Kafka 4.0 removed, as long as it polls: the first
    refusal is logged, the others are counted and summed up once the interval of the broker's clock ends."""
    caplog.set_level(logging.WARNING, logger="minibroker")
    refusal = "API key 11 version 1 is outside the supported 2-9"
    with Broker(kafka_version="4.0", clock="virtual", num_partitions=1) as broker:
        consumer = KafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id="old", client_id="old-app",
                                 api_version=(0, 10, 1))

        def joins_refused() -> int:
            consumer.poll(timeout_ms=50)  # it sends JoinGroup again while it polls
            return broker.core.request_counts[JOIN_GROUP]

        try:
            wait_until(lambda: joins_refused() >= 4, "JoinGroup v1 refused a few times")
        finally:
            consumer.close()
        wait_until(lambda: not broker.core.connections, "the old client's connections closed")
        joins = broker.core.request_counts[JOIN_GROUP]
        first = f"closing 127.0.0.1:PORT: {refusal} (client 'old-app')"
        assert lines(caplog, refusal) == [first]
        broker.advance(REPEAT_INTERVAL_MS - 1)
        assert lines(caplog, refusal) == [first], "the interval is not over"
        broker.advance(1)
        assert lines(caplog, refusal) == [
            first, f"closing 127.0.0.1: {refusal} (client 'old-app') [{joins - 1} more times in the last 60 s]"
        ]


def test_repeats_are_counted_per_client_and_version_and_forgotten_after_a_quiet_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="minibroker")
    outside = "outside the supported"
    with Broker(clock="virtual") as broker:
        for client_id in ("old-app", "old-app", "other-app", "old-app"):
            refused(broker.bootstrap_servers, client_id)
        assert lines(caplog, outside) == [
            "closing 127.0.0.1:PORT: API key 2 version 0 is outside the supported 1-11 (client 'old-app')",
            "closing 127.0.0.1:PORT: API key 2 version 0 is outside the supported 1-11 (client 'other-app')",
        ]
        caplog.clear()
        broker.advance(REPEAT_INTERVAL_MS)
        assert lines(caplog, outside) == [
            "closing 127.0.0.1: API key 2 version 0 is outside the supported 1-11 (client 'old-app') "
            "[2 more times in the last 60 s]"
        ], "other-app did not repeat: no line for it"
        caplog.clear()
        for _ in range(3):
            refused(broker.bootstrap_servers, "old-app")
        broker.advance(REPEAT_INTERVAL_MS)
        assert lines(caplog, outside) == [
            "closing 127.0.0.1: API key 2 version 0 is outside the supported 1-11 (client 'old-app') "
            "[3 more times in the last 60 s]"
        ], "a client that goes on: one line per interval"
        caplog.clear()
        broker.advance(REPEAT_INTERVAL_MS)
        assert lines(caplog, outside) == [], "a quiet interval: nothing to say"
        refused(broker.bootstrap_servers, "old-app")
        assert lines(caplog, outside) == [
            "closing 127.0.0.1:PORT: API key 2 version 0 is outside the supported 1-11 (client 'old-app')",
        ], "forgotten after its quiet interval, the client's next refusal is logged in full"
        refused(broker.bootstrap_servers, "old-app", OLD_PRODUCE)
        assert lines(caplog, outside)[1:] == [
            "closing 127.0.0.1:PORT: API key 0 version 2 is outside the supported 3-13 (client 'old-app')",
        ], "another API version is another problem"


def test_garbage_on_a_plaintext_port_and_the_count_left_at_shutdown(caplog: pytest.LogCaptureFixture) -> None:
    """An HTTP client on the Kafka port (a frame size no broker accepts), three times: one line, and the two repeats
    are counted in a line when the broker stops before the interval ends."""
    caplog.set_level(logging.WARNING, logger="minibroker")
    with Broker(clock="virtual") as broker:
        for _ in range(3):
            with RawConnection(broker.bootstrap_servers) as conn:
                conn.send(b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n")
                assert conn.closed_by_peer()
        assert lines(caplog, "frame size") == [
            "closing 127.0.0.1:PORT: frame size 1195725856 outside 0..104857600"
        ]
    assert lines(caplog, "frame size")[1:] == [
        "closing 127.0.0.1: frame size 1195725856 outside 0..104857600 [2 more times in the last 1 s]"
    ]


def test_a_wrong_password_retried_is_one_line_and_a_count(tmp_path) -> None:
    """Over a SASL listener of a broker process: three logins with a wrong password, one line; the two repeats are
    counted in the line the broker logs when it stops."""
    broker = BrokerProcess(tmp_path / "data", "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                           f"sasl.users={ALICE}:{ALICE_PASSWORD}")
    try:
        broker.start()
        for _ in range(3):
            with RawConnection(broker.bootstrap) as conn:
                assert raw_login(conn, "PLAIN", ALICE, WRONG_PASSWORD)["error_code"] != 0
    finally:
        broker.stop()
    failures = [PORT.sub(r"\1:PORT", line.split(": ", 1)[1]) for line in broker.log_text().splitlines()
                if "authentication on listener" in line]
    assert len(failures) == 2, failures
    assert failures[0].startswith("closing 127.0.0.1:PORT: SASL PLAIN authentication on listener SASL_PLAINTEXT failed")
    assert failures[1].startswith("closing 127.0.0.1: SASL PLAIN authentication on listener SASL_PLAINTEXT failed")
    assert re.search(r" \[2 more times in the last \d+ s\]$", failures[1])


async def test_on_the_system_clock_the_interval_is_the_loops(caplog: pytest.LogCaptureFixture) -> None:
    """Without a virtual clock the interval's end is scheduled on the running loop."""
    logger = logging.getLogger("minibroker.test")
    repeated = RepeatedLogs(wall_clock_ms, interval_ms=20)
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        for port in (1000, 1001, 1002):
            repeated.warning(logger, "closing %s: %s", f"10.0.0.1:{port}", "a problem")
        deadline = Deadline(5)
        while len(caplog.records) < 2 and deadline.left():
            await asyncio.sleep(0.01)
    assert [record.getMessage() for record in caplog.records] == [
        "closing 10.0.0.1:1000: a problem", "closing 10.0.0.1: a problem [2 more times in the last 1 s]"
    ]
    repeated.flush()
