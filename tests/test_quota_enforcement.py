"""Client quotas enforced as Kafka enforces them, seen by real clients: a confluent-kafka producer over its
``producer_byte_rate`` gets ``throttle_time_ms`` (its statistics report the throttle) and, its connection muted for
that time, its throughput settles on the quota; a client no quota names is never throttled. The quota window is
the broker's clock: on a virtual clock a throttled connection stays muted until the test advances it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from minibroker.protocol.frames import decode_response, encode_request
from minibroker.protocol.records import build_batch
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection, confluent_create_topic
from tests.test_client_quotas import alter

QUOTA = 100 * 1024  # bytes per second
# Kafka's Rate pads a young window to all but one of its samples: a client starting at full speed is let through
# quota x (samples - 1) seconds' worth at once, and the bytes of that burst leave the window together, letting the
# next burst through (with Kafka's 11 samples, 1 MB every 11 s). Two samples of 1 s damp that within a few seconds.
WINDOW_SETTINGS = ("quota.window.num=2", "quota.window.size.seconds=1")
WARM_UP_S, MEASURED_S = 4.0, 10.0
VALUE = b"q" * 4096


@pytest.fixture
def quota_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", *WINDOW_SETTINGS)
    try:
        yield proc.start()
    finally:
        proc.stop()


def run_producer(bootstrap: str, topic: str, client_id: str, seconds: float, measured_from: float,
                 count: int = 0) -> tuple[int, int]:
    """Produce as fast as the broker lets for ``seconds`` (or ``count`` messages, all delivered); the payload bytes
    acknowledged between ``measured_from`` and ``seconds``, and the largest throttle time (ms) the client's
    statistics reported."""
    throttles: list[int] = []
    acked: list[int] = [0]
    start = time.monotonic()

    def stats(text: str) -> None:
        for broker in json.loads(text)["brokers"].values():
            throttles.append(broker["throttle"]["max"])

    failures: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:  # the messages still queued at the end are purged
            if err.code() not in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                failures.append(err)
        elif time.monotonic() - start < seconds and time.monotonic() - start >= measured_from:
            acked[0] += len(msg.value())

    producer = Producer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "statistics.interval.ms": 500, "stats_cb": stats,
        "batch.size": 16384, "linger.ms": 5, "max.in.flight": 5, "queue.buffering.max.messages": 200,
        "compression.type": "none",
    })
    try:
        sent = 0
        while (count and sent < count) or (not count and time.monotonic() - start < seconds):
            try:
                producer.produce(topic, VALUE, on_delivery=delivered)
                sent += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        if count:
            assert producer.flush(60) == 0
        producer.purge()
        producer.flush(10)
        producer.poll(1.0)  # the last statistics
    finally:
        del producer
    assert not failures
    return acked[0], max(throttles, default=0)


def test_a_producer_over_its_byte_rate_is_throttled_to_it(
    quota_broker: BrokerProcess, summary_line: Callable[[str], None],
) -> None:
    confluent_create_topic(quota_broker.bootstrap, "limited", partitions=1)
    with RawConnection(quota_broker.bootstrap) as conn:
        assert alter(conn, [({"client-id": "throttled"}, {"producer_byte_rate": float(QUOTA)})]) == [(0, None)]
    acked, throttle_ms = run_producer(quota_broker.bootstrap, "limited", "throttled", WARM_UP_S + MEASURED_S, WARM_UP_S)
    assert throttle_ms > 0
    rate = acked / MEASURED_S
    summary_line(f"producer_byte_rate {QUOTA} B/s: {rate:.0f} B/s acknowledged over {MEASURED_S:.0f} s "
                 f"({rate / QUOTA:.1%}), largest throttle reported {throttle_ms} ms")
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, f"{rate:.0f} B/s against a quota of {QUOTA}"

    acked, throttle_ms = run_producer(quota_broker.bootstrap, "limited", "free", 2.0, 0.0)
    assert throttle_ms == 0 and acked > 0


def test_a_consumer_over_its_byte_rate_is_throttled_to_it(
    quota_broker: BrokerProcess, summary_line: Callable[[str], None],
) -> None:
    confluent_create_topic(quota_broker.bootstrap, "to-read", partitions=1)
    total = int(QUOTA * (WARM_UP_S + MEASURED_S) * 1.5)
    run_producer(quota_broker.bootstrap, "to-read", "filler", 0.0, 0.0, count=total // len(VALUE))
    with RawConnection(quota_broker.bootstrap) as conn:
        assert alter(conn, [({"client-id": "slow-reader"}, {"consumer_byte_rate": float(QUOTA)})]) == [(0, None)]
    throttles: list[int] = []

    def stats(text: str) -> None:
        for broker in json.loads(text)["brokers"].values():
            throttles.append(broker["throttle"]["max"])

    consumer = Consumer({
        "bootstrap.servers": quota_broker.bootstrap, "client.id": "slow-reader", "group.id": "quota-readers",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "statistics.interval.ms": 500,
        "stats_cb": stats, "max.partition.fetch.bytes": 16384,
    })
    read = 0
    try:
        consumer.subscribe(["to-read"])
        start = None
        while start is None or time.monotonic() - start < WARM_UP_S + MEASURED_S:
            msg = consumer.poll(0.1)
            if msg is None or msg.error() is not None:
                continue
            if start is None:
                start = time.monotonic()
            elif time.monotonic() - start >= WARM_UP_S:
                read += len(msg.value())
        consumer.poll(1.0)  # the last statistics
    finally:
        consumer.close()
    assert read < total - QUOTA  # the quota, not the data, ended the reading
    assert max(throttles, default=0) > 0
    rate = read / MEASURED_S
    summary_line(f"consumer_byte_rate {QUOTA} B/s: {rate:.0f} B/s consumed over {MEASURED_S:.0f} s ({rate / QUOTA:.1%})")
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, f"{rate:.0f} B/s against a quota of {QUOTA}"


def test_on_a_virtual_clock_a_throttled_client_waits_for_the_clock() -> None:
    """A Produce over quota is answered with its throttle time; the next request is served only once the test
    advances the broker's clock past it."""
    with Broker(clock="virtual", control=True) as broker:
        confluent_create_topic(broker.bootstrap_servers, "virtual-limited", partitions=1)
        with RawConnection(broker.bootstrap_servers) as conn:
            assert alter(conn, [({"client-id": "raw-test"}, {"producer_byte_rate": 1024.0})]) == [(0, None)]
            answer = produce(conn, "virtual-limited", 20_000)
            throttle_ms = answer["throttle_time_ms"]
            assert throttle_ms > 0
            conn.send(encode_request(18, 3, 2, "raw-test", {"client_software_name": "t", "client_software_version": "1"}))
            conn.sock.settimeout(1.0)
            with pytest.raises(TimeoutError):
                conn.recv_frame()  # muted: the clock has not moved
            broker.advance(throttle_ms)
            conn.sock.settimeout(5.0)
            assert conn.recv_frame()


def test_each_node_of_a_cluster_enforces_quotas_on_its_own() -> None:
    """With ``nodes=2`` the quota holds per node, as per Kafka broker: what a client sends one node does not count on
    the other."""
    from tests.test_cluster import metadata

    with Broker(nodes=2, clock="virtual") as broker:
        confluent_create_topic(broker.bootstrap_servers, "per-node", partitions=2)
        leaders = {p["leader_id"]: p["partition_index"]
                   for p in metadata(broker.bootstrap_servers, ["per-node"])["topics"][0]["partitions"]}
        assert set(leaders) == {1, 2}
        addresses = broker.node_addresses
        with RawConnection(addresses[1]) as conn:
            assert alter(conn, [({"client-id": "raw-test"}, {"producer_byte_rate": 1024.0})]) == [(0, None)]
        # Kafka's window is 10 s at first: 1024 B/s lets 10 KiB through before the first throttle
        with RawConnection(addresses[1]) as one, RawConnection(addresses[2]) as two:
            assert produce(one, "per-node", 6000, leaders[1])["throttle_time_ms"] == 0
            assert produce(two, "per-node", 6000, leaders[2])["throttle_time_ms"] == 0
            assert produce(one, "per-node", 6000, leaders[1])["throttle_time_ms"] > 0


def produce(conn: RawConnection, topic: str, size: int, partition: int = 0) -> dict[str, Any]:
    batch = build_batch([(None, b"x" * size)])
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    [response] = [decode_response(0, 9, conn.request(0, 9, body))[1]]
    assert response["responses"][0]["partition_responses"][0]["error_code"] == 0, response
    return response


def test_request_percentage_throttles_every_request_and_old_versions_wait_for_their_answer() -> None:
    """``request_percentage`` of the default user (the anonymous user meets it): a Produce v5 earns throttle time
    for its handler's time and, before KIP-219 the client not waiting by itself, is answered only once that time
    has passed on the broker's clock."""
    with Broker(clock="virtual") as broker:
        confluent_create_topic(broker.bootstrap_servers, "timed", partitions=1)
        with RawConnection(broker.bootstrap_servers) as conn:
            assert alter(conn, [({"user": None}, {"request_percentage": 0.0001})]) == [(0, None)]
            conn.send(encode_request(0, 5, 7, "raw-test", {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
                                                           "topic_data": [{"name": "timed", "partition_data": [
                                                               {"index": 0, "records": build_batch([(None, b"v")])}]}]}))
            conn.sock.settimeout(1.0)
            with pytest.raises(TimeoutError):
                conn.recv_frame()  # held back: the clock has not moved
            broker.advance(100_000_000)  # past any throttle so small a quota earns (a day of virtual time)
            conn.sock.settimeout(5.0)
            _, answer = decode_response(0, 5, conn.recv_frame())
            assert answer["throttle_time_ms"] > 0
            assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_quotas_resolve_in_kafkas_order() -> None:
    from minibroker.quotas.enforce import QuotaManager
    from minibroker.quotas.store import QuotaStore

    store = QuotaStore()
    manager = QuotaManager(store, "producer_byte_rate", 11, 1000)
    order = [
        ({"user": "u", "client-id": "c"}, ("u", "c")), ({"user": "u", "client-id": None}, ("u", "c")),
        ({"user": "u"}, ("u", "")), ({"user": None, "client-id": "c"}, ("u", "c")),
        ({"user": None, "client-id": None}, ("u", "c")), ({"user": None}, ("u", "")),
        ({"client-id": "c"}, ("", "c")), ({"client-id": None}, ("", "c")),
    ]
    entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                "ops": [{"key": "producer_byte_rate", "value": float(rank + 1), "remove": False}]}
               for rank, (entity, _) in enumerate(order)]
    assert all(code == 0 for _, code, _ in store.alter(entries, False))
    for rank, (entity, tags) in enumerate(order):
        assert manager.resolve("u", "c") == (tags, float(rank + 1))
        store.alter([{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                      "ops": [{"key": "producer_byte_rate", "value": 0.0, "remove": True}]}], False)
    assert manager.resolve("u", "c") is None
    assert manager.resolve("other", "c") is None


def test_a_user_quota_follows_the_login(tmp_path: Path) -> None:
    """A quota on a user entity meets the clients logged in as that user (the principal's name), whatever their
    client id; another user is not throttled."""
    from tests.test_security import raw_login

    proc = BrokerProcess(tmp_path / "data", "listeners=SASL_PLAINTEXT://127.0.0.1:0",
                         "sasl.users=alice:Alice-pw-1,bob:Bob-pw-1")
    try:
        proc.start()
        address = f"127.0.0.1:{proc.listener_ports['SASL_PLAINTEXT']}"
        connections = {user: RawConnection(address) for user in ("alice", "bob")}
        try:
            for user, conn in connections.items():
                assert raw_login(conn, "PLAIN", user, f"{user.title()}-pw-1")["error_code"] == 0
            assert alter(connections["alice"], [({"user": "alice"}, {"producer_byte_rate": 1024.0})]) == [(0, None)]
            call_create_topic(connections["bob"], "users")
            throttles = {user: [produce(conn, "users", 8000)["throttle_time_ms"] for _ in range(2)]
                         for user, conn in connections.items()}
        finally:
            for conn in connections.values():
                conn.close()
    finally:
        proc.stop()
    assert throttles["alice"][0] == 0 and throttles["alice"][1] > 0  # 16 KB over a 10 s window of 1 KiB/s
    assert throttles["bob"] == [0, 0]


def call_create_topic(conn: RawConnection, name: str) -> None:
    from tests.test_security import call

    body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    [topic] = call(conn, 19, 7, body)["topics"]
    assert topic["error_code"] == 0, topic


def test_connections_over_an_ip_quota_are_closed_unserved_after_their_throttle_time() -> None:
    """``connection_creation_rate`` of the default IP: Kafka's window of 10 s at first lets 10 connections a second
    through; the next is not served and is closed once the broker's clock has passed its throttle time."""
    with Broker(clock="virtual") as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            assert alter(conn, [({"ip": None}, {"connection_creation_rate": 1.0})]) == [(0, None)]
        api_versions = encode_request(18, 3, 1, "raw-test", {"client_software_name": "t", "client_software_version": "1"})
        served = [RawConnection(broker.bootstrap_servers) for _ in range(10)]
        try:
            for conn in served:
                conn.send(api_versions)
                assert conn.recv_frame()
            with RawConnection(broker.bootstrap_servers) as refused:
                refused.send(api_versions)
                refused.sock.settimeout(1.0)
                with pytest.raises(TimeoutError):
                    refused.recv_frame()
                broker.advance(2_000)
                assert refused.closed_by_peer(within=5.0)
        finally:
            for conn in served:
                conn.close()
