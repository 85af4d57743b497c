"""Shared fixtures: a broker process per test session (and fresh ones where a test needs its own)."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.asyncutil import quiet_event_loop
from tests.brokerproc import BrokerProcess
from tests.tlsutil import TlsFiles, make_tls_files

SUMMARY_LINES = pytest.StashKey[list[str]]()
# Apache Kafka's message JSON: CI has it at ../shared beside the checkout; MINIBROKER_SPEC_DIR points elsewhere.
# A clone with neither skips the tests that compare with it.
SPEC_DIR = Path(os.environ.get("MINIBROKER_SPEC_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "kafka-protocol")
needs_kafka_spec = pytest.mark.skipif(
    not (SPEC_DIR / "messages").is_dir(),
    reason=f"Kafka's message JSON is not at {SPEC_DIR} (set MINIBROKER_SPEC_DIR to a kafka-protocol folder)",
)


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """pytest-asyncio's hook: every async test's loop logs unretrieved client errors quietly."""
    return {"quiet": quiet_event_loop}


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A test CA with server and client certificates, for the module's TLS brokers and clients."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("session") / "data").start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for restarts and crash scenarios."""
    proc = BrokerProcess(tmp_path / "data")
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def bootstrap(broker: BrokerProcess) -> str:
    return broker.bootstrap


@pytest.fixture
def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def summary_line(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Lines a test wants in the run's closing summary (figures such as the fuzz inputs tried)."""
    return request.config.stash.setdefault(SUMMARY_LINES, []).append


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(SUMMARY_LINES, [])
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
