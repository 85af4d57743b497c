"""pytest plugin (entry point ``pytest11``): Kafka fixtures backed by an in-process minibroker.

Fixtures: ``kafka_broker`` (session: a running ``minibroker.testing.Broker``), ``kafka_bootstrap`` (its
``host:port``), ``kafka_topic`` (a unique topic name per test) and ``kafka_topic_factory`` (more of them).
``--kafka-bootstrap HOST:PORT`` points the same fixtures at an external broker instead (a real Kafka, or a
minibroker in a container); the external broker is probed once, so a wrong address fails fast.
``--kafka-nodes N`` (or the ini value ``kafka_nodes``; the command line wins) makes the in-process broker a cluster
of N nodes, ``Broker(nodes=N)``, and ``kafka_bootstrap`` every node's address, so clients outlive a stopped node 1.
``--kafka-transcript`` keeps a protocol transcript, and a failing test's report shows the requests it made.
``--kafka-version X.Y`` makes the in-process brokers serve the API versions of that Apache Kafka release.
``kafka_schema_registry_url`` is the URL of the broker's schema registry (Confluent's REST API). ``kafka_control`` is a
``ControlClient`` of the broker's control listener (faults, clock, nodes, observation); with
``--kafka-bootstrap`` it needs ``--kafka-control URL``. The faults a test injects and the nodes it stops do not
outlive it. ``@pytest.mark.minibroker(nodes=..., config=..., topics=..., clock=...)`` gives a test a broker of its
own: for that test the fixtures above are that broker's (see ``minibroker.pytest_marker``).

The names all start with ``kafka_`` so they do not clash with a project's own ``broker``/``bootstrap`` fixtures.
Importing this module is cheap: the broker is imported only when a test asks for it.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import pytest

from minibroker.pytest_marker import MARKER, MARKER_HELP, MarkedBroker, MarkerError

if TYPE_CHECKING:
    from minibroker.control_client import ControlClient
    from minibroker.testing import Broker

BOOTSTRAP_OPTION = "--kafka-bootstrap"
NODES_OPTION = "--kafka-nodes"
TRANSCRIPT_OPTION = "--kafka-transcript"
CONTROL_OPTION = "--kafka-control"
VERSION_OPTION = "--kafka-version"
TRANSCRIPT_POSITION = pytest.StashKey[int]()
NODES_INI = "kafka_nodes"
NODES = pytest.StashKey[int]()
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")
_MAX_PREFIX = 180  # topic names are limited to 249 characters


@dataclass(frozen=True)
class ExternalBroker:
    """The broker named by ``--kafka-bootstrap``: its address, and its control listener's if given."""

    bootstrap_servers: str
    control_url: str | None = None


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
    group.addoption(
        CONTROL_OPTION, metavar="URL", default=None,
        help=f"the control listener of the {BOOTSTRAP_OPTION} broker, for kafka_control (token: "
        "$MINIBROKER_CONTROL_TOKEN)",
    )
    group.addoption(
        VERSION_OPTION, metavar="X.Y", default=None,
        help="in-process brokers serve the API versions of this Apache Kafka release (the setting kafka.version)",
    )
    parser.addini(NODES_INI, f"nodes of the in-process minibroker, as {NODES_OPTION}", default="1")


def pytest_configure(config: pytest.Config) -> None:
    """Checks the node count at start-up, so a bad value is a usage error before any test runs."""
    config.addinivalue_line("markers", MARKER_HELP)
    if config.getoption(CONTROL_OPTION) and not config.getoption(BOOTSTRAP_OPTION):
        raise pytest.UsageError(f"{CONTROL_OPTION} names the control listener of the {BOOTSTRAP_OPTION} broker: give "
                                f"both (the in-process broker has its own)")
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
    version = config.getoption(VERSION_OPTION)
    if version:
        from minibroker.config.settings import ConfigError
        from minibroker.config.releases import resolve

        try:
            resolve(version)
        except ConfigError as exc:
            raise pytest.UsageError(f"{VERSION_OPTION} {version}: {exc}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A marked test's ``kafka_broker`` is a parameter of its own: pytest makes it for the test alone (function
    scope) and stops it after the test, while other tests keep the session's broker."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    try:
        spec = MarkedBroker.from_marker(marker.args, marker.kwargs)
    except MarkerError as exc:
        pytest.fail(f"{metafunc.definition.nodeid}: {exc}", pytrace=False)
    if "kafka_broker" not in metafunc.fixturenames:
        pytest.fail(f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER} gives a broker to a test that uses "
                    "kafka_broker, kafka_bootstrap or kafka_control; this one uses none of them", pytrace=False)
    metafunc.parametrize("kafka_broker", [spec], indirect=True, scope="function", ids=[MARKER])


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Union["Broker", ExternalBroker]]:
    """The test's broker: its own with ``@pytest.mark.minibroker``, else the session's (a
    ``minibroker.testing.Broker``, or an ``ExternalBroker`` with --kafka-bootstrap)."""
    spec: MarkedBroker | None = getattr(request, "param", None)
    if spec is None:
        yield request.getfixturevalue("_kafka_session_broker")
        return
    with spec.running(request.config.getoption(TRANSCRIPT_OPTION), base_settings(request.config)) as broker:
        yield broker


@pytest.fixture(scope="session")
def _kafka_session_broker(request: pytest.FixtureRequest) -> Iterator[Union["Broker", ExternalBroker]]:
    """The broker every unmarked test shares, started once."""
    external = request.config.getoption(BOOTSTRAP_OPTION)
    if external:
        from minibroker.commands.probe import ProbeError, probe

        try:
            probe(external.split(",")[0].strip())  # a bootstrap list: its first address
        except ProbeError as exc:
            raise pytest.UsageError(f"{BOOTSTRAP_OPTION} {external}: {exc}") from None
        yield ExternalBroker(external, request.config.getoption(CONTROL_OPTION))
        return
    from minibroker.testing import Broker

    with Broker(base_settings(request.config), nodes=request.config.stash[NODES], control=True,
                transcript=request.config.getoption(TRANSCRIPT_OPTION)) as broker:
        yield broker


def base_settings(config: pytest.Config) -> dict[str, str]:
    """Settings every in-process broker of the run gets (a marker's config may override them)."""
    version = config.getoption(VERSION_OPTION)
    return {"kafka.version": version} if version else {}


@pytest.fixture
def kafka_control(kafka_broker: Union["Broker", ExternalBroker]) -> Iterator[ControlClient]:
    """The control API of the test's broker, as a ``minibroker.control_client.ControlClient``. Afterwards the
    faults are cleared and stopped nodes started, so the next test meets the broker as this one did."""
    from minibroker.control_client import ControlClient

    if kafka_broker.control_url is None:
        pytest.skip(f"kafka_control needs the control listener of the {BOOTSTRAP_OPTION} broker: {CONTROL_OPTION} URL")
    control = ControlClient(kafka_broker.control_url, os.environ.get("MINIBROKER_CONTROL_TOKEN"))
    yield control
    control.clear_faults()
    for node in control.health()["nodes"]:
        if not node["running"]:
            control.start_node(node["id"])


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
        from minibroker.control.transcript import timeline

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
def kafka_schema_registry_url(kafka_broker: Union["Broker", ExternalBroker]) -> str:
    """The URL of the broker's schema registry (Confluent's REST API; started on first use), for confluent-kafka's
    ``SchemaRegistryClient({"url": ...})``. Subjects are not cleared between tests: name them per test."""
    if isinstance(kafka_broker, ExternalBroker):
        pytest.skip(f"kafka_schema_registry_url serves the in-process broker's registry, not the {BOOTSTRAP_OPTION} one")
    return kafka_broker.start_schema_registry()


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
