"""pytest plugin (entry point ``pytest11``): Kafka fixtures backed by an in-process minibroker.

Fixtures: ``kafka_broker`` (session: a running ``minibroker.testing.Broker``), ``kafka_bootstrap`` (its
``host:port``), ``kafka_topic`` (a unique topic name per test) and ``kafka_topic_factory`` (more of them).
``--kafka-bootstrap HOST:PORT`` points the same fixtures at an external broker instead (a real Kafka, or a
minibroker in a container); the external broker is probed once, so a wrong address fails fast.
``--kafka-nodes N`` (or the ini value ``kafka_nodes``; the command line wins) makes the in-process broker a cluster
of N nodes, ``Broker(nodes=N)``, and ``kafka_bootstrap`` every node's address, so clients outlive a stopped node 1.
``--kafka-transcript`` keeps a protocol transcript, and a failing test's report shows the requests it made.

The names all start with ``kafka_`` so they do not clash with a project's own ``broker``/``bootstrap`` fixtures.
Importing this module is cheap: the broker is imported only when a test asks for it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import pytest

if TYPE_CHECKING:
    from minibroker.testing import Broker

BOOTSTRAP_OPTION = "--kafka-bootstrap"
NODES_OPTION = "--kafka-nodes"
TRANSCRIPT_OPTION = "--kafka-transcript"
TRANSCRIPT_POSITION = pytest.StashKey[int]()
NODES_INI = "kafka_nodes"
NODES = pytest.StashKey[int]()
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")
_MAX_PREFIX = 180  # topic names are limited to 249 characters


@dataclass(frozen=True)
class ExternalBroker:
    """The broker named by ``--kafka-bootstrap``: only its address is known."""

    bootstrap_servers: str


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker", "Kafka fixtures (minibroker)")
    group.addoption(
        BOOTSTRAP_OPTION,
        metavar="HOST:PORT",
        default=None,
        help="run the kafka_* fixtures against this broker instead of an in-process minibroker",
    )
    group.addoption(
        NODES_OPTION,
        metavar="N",
        type=int,
        default=None,
        help=f"run the in-process minibroker as a cluster of N nodes (default: the ini value {NODES_INI}, else 1)",
    )
    group.addoption(
        TRANSCRIPT_OPTION, action="store_true", default=False,
        help="keep a protocol transcript of the in-process minibroker and add a failing test's part of it to its report",
    )
    parser.addini(NODES_INI, f"nodes of the in-process minibroker, as {NODES_OPTION}", default="1")


def pytest_configure(config: pytest.Config) -> None:
    """Checks the node count at start-up, so a bad value is a usage error before any test runs."""
    option = config.getoption(NODES_OPTION)
    source, value = (NODES_OPTION, option) if option is not None else (f"{NODES_INI} (ini)", config.getini(NODES_INI))
    try:
        nodes = int(value)
    except ValueError:
        raise pytest.UsageError(f"{source} {value!r}: not a whole number") from None
    if nodes < 1:
        raise pytest.UsageError(f"{source} {value}: a cluster needs at least 1 node")
    # An ini value only sets the in-process default, so --kafka-bootstrap may still override it.
    if option is not None and nodes > 1 and config.getoption(BOOTSTRAP_OPTION):
        raise pytest.UsageError(
            f"{NODES_OPTION} {nodes} cannot be used with {BOOTSTRAP_OPTION}: it sizes the in-process broker, which "
            f"{BOOTSTRAP_OPTION} replaces with an external one"
        )
    config.stash[NODES] = nodes


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Union["Broker", ExternalBroker]]:
    """The session's broker: a ``minibroker.testing.Broker``, or an ``ExternalBroker`` with --kafka-bootstrap."""
    external = request.config.getoption(BOOTSTRAP_OPTION)
    if external:
        from minibroker.probe import ProbeError, probe

        try:
            probe(external.split(",")[0].strip())  # a bootstrap list: its first address
        except ProbeError as exc:
            raise pytest.UsageError(f"{BOOTSTRAP_OPTION} {external}: {exc}") from None
        yield ExternalBroker(external)
        return
    from minibroker.testing import Broker

    with Broker(nodes=request.config.stash[NODES], transcript=request.config.getoption(TRANSCRIPT_OPTION)) as broker:
        yield broker


def _transcribed(item: pytest.Item) -> Broker | None:
    """The test's in-process broker when it keeps a transcript (--kafka-transcript)."""
    broker = getattr(item, "funcargs", {}).get("kafka_broker")
    if broker is None or isinstance(broker, ExternalBroker) or not broker.running:
        return None
    return broker if broker.config.transcript_enabled else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    broker = _transcribed(item)
    if broker is not None:
        item.stash[TRANSCRIPT_POSITION] = broker.transcript_position()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report gets the transcript of the requests made while it ran."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    broker = _transcribed(item) if call.when == "call" and report.failed else None
    if broker is not None and TRANSCRIPT_POSITION in item.stash:
        from minibroker.transcript import timeline

        entries = broker.transcript(item.stash[TRANSCRIPT_POSITION])
        report.sections.append(("minibroker transcript", "\n".join(timeline(entries)) or "(no requests)"))


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Union["Broker", ExternalBroker]) -> str:
    """``host:port`` for the clients' ``bootstrap.servers``; with ``--kafka-nodes N`` above 1 every node's, joined
    with commas, so a client started while node 1 is down still finds the cluster."""
    if isinstance(kafka_broker, ExternalBroker) or len(kafka_broker.node_addresses) == 1:
        return kafka_broker.bootstrap_servers
    return ",".join(kafka_broker.node_addresses.values())


@pytest.fixture
def kafka_topic_factory(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Makes topic names unique to this test run: ``make("orders")`` -> ``orders-test_x-1a2b3c4d``."""
    test = _UNSAFE.sub("-", request.node.name)

    def make(prefix: str = "topic") -> str:
        return f"{prefix}-{test}"[:_MAX_PREFIX] + f"-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def kafka_topic(kafka_topic_factory: Callable[[str], str]) -> str:
    """A topic name no other test uses (created on first use when the broker auto-creates topics)."""
    return kafka_topic_factory("topic")
