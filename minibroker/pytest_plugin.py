"""pytest plugin (entry point ``pytest11``): Kafka fixtures backed by an in-process minibroker.

Fixtures: ``kafka_broker`` (session: a running ``minibroker.testing.Broker``), ``kafka_bootstrap`` (its
``host:port``), ``kafka_topic`` (a unique topic name per test) and ``kafka_topic_factory`` (more of them).
``--kafka-bootstrap HOST:PORT`` points the same fixtures at an external broker instead (a real Kafka, or a
minibroker in a container); the external broker is probed once, so a wrong address fails fast.

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

    with Broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Union["Broker", ExternalBroker]) -> str:
    """``host:port`` for the clients' ``bootstrap.servers``."""
    return kafka_broker.bootstrap_servers


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
