"""Load and back-pressure: a thousand connections at once, slow senders and clients that never read, while a
normal producer keeps working; the broker's memory stays bounded and idle connections are closed."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Iterator

import pytest
from minibroker.protocol.frames import encode_request

from minibroker.server.limits import raise_open_file_limit
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import Deadline, RawConnection, confluent_create_topic
from tests.loadutil import Abuse, fill_fetched_topic, rss_bytes, timed_produce
from tests.loadutil import raise_open_file_limit as raise_test_process_limit

IDLE, SLOW, DEAF = 940, 50, 10  # 1000 connections besides the producer's
RECORDS = 20_000
MAX_RSS_GROWTH = 100 * 1024 * 1024  # generous: about 15 MiB is typical
MAX_BYTES_READ_FROM_A_DEAF_CLIENT = 16 * 1024 * 1024  # socket buffers on both sides, at most a few MiB each
API_VERSIONS = 18


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[BrokerProcess]:
    raise_test_process_limit(IDLE + SLOW + DEAF + 200)
    proc = BrokerProcess(tmp_path / "data")
    try:
        proc.start()
        confluent_create_topic(proc.bootstrap, "big", partitions=1)
        confluent_create_topic(proc.bootstrap, "normal", partitions=1)
        fill_fetched_topic(proc.bootstrap, "big")
        yield proc
    finally:
        proc.stop()


def settled(read, interval: float = 0.5, within: float = 15.0) -> int:
    """Wait until ``read()`` stops changing for ``interval`` seconds; its value then (fails if it never does)."""
    deadline = Deadline(within)
    last = read()
    while deadline.left():
        time.sleep(interval)
        now = read()
        if now == last:
            return now
        last = now
    raise AssertionError(f"still changing after {within}s: {last}")


def test_thousand_connections_slow_and_deaf_clients(loaded: BrokerProcess) -> None:
    pid = loaded.proc.pid
    before = rss_bytes(pid)
    peak = before
    with Abuse(loaded.bootstrap, "big", idle=IDLE, slow=SLOW, deaf=DEAF) as abuse:
        seconds = timed_produce(loaded.bootstrap, "normal", RECORDS)
        peak = max(peak, rss_bytes(pid))
        read_from_deaf = settled(lambda: abuse.deaf_bytes_sent)
        peak = max(peak, rss_bytes(pid))
        answers = abuse.slow_answers
        deadline = Deadline(10)
        while abuse.slow_answers < answers + SLOW and deadline.left():
            time.sleep(0.05)
        assert abuse.slow_answers >= answers + SLOW, "slow senders stopped getting answers"
        assert abuse.still_open() == IDLE, "idle connections were dropped"
        assert 0 < read_from_deaf < DEAF * MAX_BYTES_READ_FROM_A_DEAF_CLIENT, "the broker kept reading from deaf clients"
        peak = max(peak, rss_bytes(pid))
    print(
        f"\n{IDLE + SLOW + DEAF} abusive connections: broker RSS {before / 2**20:.0f} MiB -> peak {peak / 2**20:.0f} MiB, "
        f"producer {RECORDS / seconds:,.0f} records/s during the abuse"
    )
    assert peak - before < MAX_RSS_GROWTH, f"broker RSS grew by {(peak - before) / 2**20:.0f} MiB"
    assert timed_produce(loaded.bootstrap, "normal", 100) > 0  # and it still serves once they are gone


def test_idle_connections_are_closed() -> None:
    with Broker(connections_max_idle_ms=300) as broker:
        with RawConnection(broker.bootstrap_servers) as idle, RawConnection(broker.bootstrap_servers) as busy:
            start = time.monotonic()
            while time.monotonic() - start < 1.0:
                busy.send(encode_request(API_VERSIONS, 0, 1, "busy", {}))
                busy.recv_frame()
                time.sleep(0.1)
            assert idle.closed_by_peer(within=0.1), "idle for 1 s with connections.max.idle.ms=300"
            busy.send(encode_request(API_VERSIONS, 0, 2, "busy", {}))
            assert busy.recv_frame(), "a connection with traffic every 100 ms was closed"



@pytest.mark.parametrize("hard,wanted_warning", [(20000, False), (2048, True)])
def test_open_file_limit_is_raised_to_the_hard_limit(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, hard: int, wanted_warning: bool
) -> None:
    limits = {"now": (1024, hard)}
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", lambda _kind, value: limits.update(now=value))
    assert raise_open_file_limit() == hard and limits["now"] == (hard, hard)
    assert ("fewer than 4096 connections" in caplog.text) == wanted_warning
