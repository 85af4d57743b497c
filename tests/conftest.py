"""Shared fixtures: a broker process per test session (and fresh ones where a test needs its own)."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from minibroker.protocol import strict
from tests.asyncutil import quiet_event_loop
from tests.brokerproc import BrokerProcess
from tests.tlsutil import TlsFiles, make_tls_files

# The codec's strict mode for the whole suite: this process and every broker it starts check each response against
# its schema before encoding it (protocol/strict.py); a test during which one did not match fails.
os.environ[strict.STRICT_ENV] = "1"

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


@pytest.fixture(autouse=True)
def strict_codec() -> Iterator[None]:
    """Fails the test if a response encoded in this process or by a broker process it used did not match its
    schema (the broker closes such a connection, and a retrying client could hide it)."""
    before = len(strict.VIOLATIONS)
    yield
    found = strict.VIOLATIONS[before:]
    for proc in list(BrokerProcess.started):
        found += proc.strict_violations()
    assert not found, "responses that do not match their schema:\n" + "\n".join(found)


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
