"""Client quotas over the wire (DescribeClientQuotas, AlterClientQuotas) as Kafka answers them: every entity type
and its default, filters (exact, default, any; strict), Kafka's INVALID_REQUEST refusals, validate-only, removal;
quotas survive a restart and are forgotten by a reset; the authorizer guards both APIs (DESCRIBE_CONFIGS and
ALTER_CONFIGS on the cluster). The installed confluent-kafka and kafka-python have no client-quota admin calls,
so requests are made with the project's codecs over a raw connection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from minibroker.acls.operations import ALTER_CONFIGS, DESCRIBE_CONFIGS
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import Broker
from tests.aclutil import CLUSTER, acl_broker, grant, login
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_control import call as control_call
from tests.test_security import call

DESCRIBE, ALTER = 48, 49
EXACT, DEFAULT, ANY = 0, 1, 2


def alter(conn: RawConnection, entries: list[tuple[dict[str, str | None], dict[str, float | None]]],
          validate_only: bool = False, version: int = 1) -> list[tuple[int, str | None]]:
    """Each entry: entity (type -> name, None the default) and ops (key -> value, None removes)."""
    body = {"validate_only": validate_only, "entries": [{
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
        "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops.items()],
    } for entity, ops in entries]}
    answer = call(conn, ALTER, version, body)
    return [(entry["error_code"], entry["error_message"]) for entry in answer["entries"]]


def describe(conn: RawConnection, components: list[tuple[str, int, str | None]], strict: bool = False,
             version: int = 1) -> dict[str, Any]:
    return call(conn, DESCRIBE, version, {"strict": strict, "components": [
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components]})


def found(answer: dict[str, Any]) -> dict[frozenset, dict[str, float]]:
    assert answer["error_code"] == 0, answer
    return {frozenset((e["entity_type"], e["entity_name"]) for e in entry["entity"]):
            {v["key"]: v["value"] for v in entry["values"]} for entry in answer["entries"]}


@pytest.fixture
def quota_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data")
    try:
        yield proc.start()
    finally:
        proc.stop()


def entity(**names: str | None) -> frozenset:
    return frozenset((t.replace("_", "-"), n) for t, n in names.items())


def test_every_entity_type_and_default_is_set_described_and_removed(quota_broker: BrokerProcess) -> None:
    with RawConnection(quota_broker.bootstrap) as conn:
        assert found(describe(conn, [])) == {}
        results = alter(conn, [
            ({"user": "alice"}, {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}),
            ({"user": None}, {"request_percentage": 50.0}),
            ({"client-id": "app"}, {"producer_byte_rate": 4096.0}),
            ({"client-id": None}, {"consumer_byte_rate": 8192.0}),
            ({"user": "alice", "client-id": "app"}, {"controller_mutation_rate": 2.5}),
            ({"user": None, "client-id": None}, {"producer_byte_rate": 100.0}),
            ({"ip": "127.0.0.1"}, {"connection_creation_rate": 10.0}),
            ({"ip": None}, {"connection_creation_rate": 20.0}),
        ], version=0)
        assert results == [(0, None)] * 8
        everything = found(describe(conn, []))
        assert everything == {
            entity(user="alice"): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
            entity(user=None): {"request_percentage": 50.0},
            entity(client_id="app"): {"producer_byte_rate": 4096.0},
            entity(client_id=None): {"consumer_byte_rate": 8192.0},
            entity(user="alice", client_id="app"): {"controller_mutation_rate": 2.5},
            entity(user=None, client_id=None): {"producer_byte_rate": 100.0},
            entity(ip="127.0.0.1"): {"connection_creation_rate": 10.0},
            entity(ip=None): {"connection_creation_rate": 20.0},
        }
        assert set(found(describe(conn, [("user", EXACT, "alice")]))) == {
            entity(user="alice"), entity(user="alice", client_id="app")}
        assert set(found(describe(conn, [("user", EXACT, "alice")], strict=True))) == {entity(user="alice")}
        assert set(found(describe(conn, [("user", DEFAULT, None)], version=0))) == {
            entity(user=None), entity(user=None, client_id=None)}
        assert set(found(describe(conn, [("client-id", ANY, None)], strict=True))) == {
            entity(client_id="app"), entity(client_id=None)}
        assert set(found(describe(conn, [("user", ANY, None), ("client-id", ANY, None)]))) == {
            entity(user="alice", client_id="app"), entity(user=None, client_id=None)}
        assert set(found(describe(conn, [("ip", ANY, None)]))) == {entity(ip="127.0.0.1"), entity(ip=None)}

        assert alter(conn, [({"user": "alice"}, {"producer_byte_rate": None}),
                            ({"ip": None}, {"connection_creation_rate": None})]) == [(0, None)] * 2
        after = found(describe(conn, []))
        assert after[entity(user="alice")] == {"consumer_byte_rate": 2048.0}
        assert entity(ip=None) not in after  # an entity without quotas is gone


def test_validate_only_changes_nothing(quota_broker: BrokerProcess) -> None:
    with RawConnection(quota_broker.bootstrap) as conn:
        assert alter(conn, [({"user": "bob"}, {"producer_byte_rate": 10.0})], validate_only=True) == [(0, None)]
        assert alter(conn, [({"user": "bob"}, {"producer_byte_rate": 1.5})], validate_only=True)[0][0] == (
            ErrorCode.INVALID_REQUEST)
        assert found(describe(conn, [])) == {}


@pytest.mark.parametrize(("entry", "message"), [
    (({}, {"producer_byte_rate": 1.0}), "Invalid empty client quota entity"),
    (({"group": "g"}, {"producer_byte_rate": 1.0}), "Unhandled client quota entity type: group"),
    (({"user": ""}, {"producer_byte_rate": 1.0}), "Empty user not supported"),
    (({"client-id": ""}, {"producer_byte_rate": 1.0}), "Empty client-id not supported"),
    (({"user": "u"}, {"no_such_quota": 1.0}), "Invalid configuration key no_such_quota"),
    (({"user": "u"}, {"connection_creation_rate": 1.0}), "Invalid configuration key connection_creation_rate"),
    (({"ip": "127.0.0.1"}, {"producer_byte_rate": 1.0}), "Invalid configuration key producer_byte_rate"),
    (({"ip": "no such host.invalid"}, {"connection_creation_rate": 1.0}),
     "no such host.invalid is not a valid IP or resolvable host."),
    (({"ip": "127.0.0.1", "user": "u"}, {"connection_creation_rate": 1.0}),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (({"user": "u"}, {"producer_byte_rate": 0.0}), "Quota producer_byte_rate must be greater than 0"),
    (({"user": "u"}, {"producer_byte_rate": 10.5}), "producer_byte_rate cannot be a fractional value."),
    (({"user": "u"}, {"producer_byte_rate": 1e19}), "Proposed value for producer_byte_rate is too large for a LONG."),
    (({"ip": None}, {"connection_creation_rate": 3e9}),
     "Proposed value for connection_creation_rate is too large for an INT."),
])
def test_kafka_refusals(quota_broker: BrokerProcess, entry: tuple, message: str) -> None:
    with RawConnection(quota_broker.bootstrap) as conn:
        good = ({"client-id": "fine"}, {"request_percentage": 12.5})
        assert alter(conn, [entry, good]) == [(ErrorCode.INVALID_REQUEST, message), (0, None)]
        assert found(describe(conn, [])) == {entity(client_id="fine"): {"request_percentage": 12.5}}


def test_describe_refusals(quota_broker: BrokerProcess) -> None:
    with RawConnection(quota_broker.bootstrap) as conn:
        for components, code in [
            ([("user", ANY, None), ("user", EXACT, "a")], ErrorCode.INVALID_REQUEST),
            ([("", ANY, None)], ErrorCode.INVALID_REQUEST),
            ([("ip", ANY, None), ("user", ANY, None)], ErrorCode.INVALID_REQUEST),
            ([("group", ANY, None)], ErrorCode.UNSUPPORTED_VERSION),
            ([("user", EXACT, None)], ErrorCode.INVALID_REQUEST),
            ([("user", DEFAULT, "a")], ErrorCode.INVALID_REQUEST),
            ([("user", ANY, "a")], ErrorCode.INVALID_REQUEST),
            ([("user", 7, None)], ErrorCode.INVALID_REQUEST),
        ]:
            answer = describe(conn, components)
            assert (answer["error_code"], answer["entries"]) == (code, None), components
            assert answer["error_message"]


def test_quotas_survive_a_restart(quota_broker: BrokerProcess) -> None:
    with RawConnection(quota_broker.bootstrap) as conn:
        assert alter(conn, [({"user": "carol", "client-id": None}, {"producer_byte_rate": 5000.0})]) == [(0, None)]
    stored = json.loads((quota_broker.data_dir / "client-quotas.json").read_text())
    assert stored["entities"][0]["quotas"] == {"producer_byte_rate": 5000.0}
    quota_broker.restart()
    with RawConnection(quota_broker.bootstrap) as conn:
        assert found(describe(conn, [])) == {entity(user="carol", client_id=None): {"producer_byte_rate": 5000.0}}


def test_a_reset_forgets_quotas_and_a_restore_brings_them_back() -> None:
    """Like broker configs, quotas are the cluster's state: reset and snapshots treat them alike."""
    with Broker(control=True) as broker, RawConnection(broker.bootstrap_servers) as conn:
        assert alter(conn, [({"client-id": "kept"}, {"consumer_byte_rate": 300.0})]) == [(0, None)]
        assert control_call(f"{broker.control_url}/v1/snapshots", "POST", {"name": "with"})[0] == 201
        assert control_call(f"{broker.control_url}/v1/reset", "POST")[0] == 200
        assert found(describe(conn, [])) == {}
        assert control_call(f"{broker.control_url}/v1/snapshots/with/restore", "POST")[0] == 200
        assert found(describe(conn, [])) == {entity(client_id="kept"): {"consumer_byte_rate": 300.0}}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from acl_broker(tmp_path_factory.mktemp("quota-acl") / "data", ["viewer", "editor", "nobody"])


def test_the_authorizer_guards_both_apis(secured: BrokerProcess) -> None:
    entry = ({"user": "x"}, {"producer_byte_rate": 1000.0})
    with login(secured, "nobody") as conn:
        answer = describe(conn, [])
        assert (answer["error_code"], answer["error_message"], answer["entries"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", None)
        [(code, message)] = alter(conn, [entry])
        assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and message.endswith("is not authorized.")
    grant(secured, "viewer", CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)
    grant(secured, "editor", CLUSTER, "kafka-cluster", ALTER_CONFIGS)
    with login(secured, "editor") as conn:
        assert alter(conn, [entry]) == [(0, None)]
        assert found(describe(conn, []))  # ALTER_CONFIGS implies DESCRIBE_CONFIGS, as in Kafka
    with login(secured, "viewer") as conn:
        assert found(describe(conn, [])) == {entity(user="x"): {"producer_byte_rate": 1000.0}}
        assert alter(conn, [entry])[0][0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_the_broker_names_the_quota_file_as_the_store_does() -> None:
    from minibroker.broker import QUOTAS_FILE
    from minibroker.quotas.store import FILE_NAME

    assert QUOTAS_FILE == FILE_NAME


def test_an_unreadable_quota_file_stops_start_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "client-quotas.json").write_text('{"version": 1, "entities": [{"entity": 5, "quotas": {}}]}')
    proc = BrokerProcess(data)
    try:
        with pytest.raises(RuntimeError, match="client-quotas.json: malformed client quotas"):
            proc.start()
    finally:
        proc.stop()
