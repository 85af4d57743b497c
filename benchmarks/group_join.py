"""How long a new group member waits for its first record, with the classic and the consumer group protocol.

A topic of 6 partitions holds one record in each (so librdkafka's first Fetch, sent as soon as one partition's
start offset is known, finds data instead of waiting ``fetch.wait.max.ms``). Each run starts a confluent-kafka consumer in a new group,
subscribes and polls until the first record arrives; the figure is subscribe to first record. Then a second member
joins the group and the time until the two members' assignments cover the topic is the rebalance. The broker is
``minibroker.testing.Broker`` in this process (its own thread and event loop); the consumer protocol's
heartbeat interval is set to 500 ms (``group.consumer.heartbeat.interval.ms``; Kafka's default is 5 s), which
bounds how soon the first member hears of the second. Run from the repository root:
``python benchmarks/group_join.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer  # noqa: E402

from benchmarks.common import create_topic  # noqa: E402
from minibroker.testing import Broker  # noqa: E402

PARTITIONS = 6
HEARTBEAT_INTERVAL_MS = 500
DEADLINE_S = 30.0
PROTOCOLS = {
    "classic": {"group.protocol": "classic", "heartbeat.interval.ms": 100},
    "consumer": {"group.protocol": "consumer"},
}


def member(bootstrap: str, group: str, topic: str, protocol: str) -> Consumer:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, **PROTOCOLS[protocol],
    })
    consumer.subscribe([topic])
    return consumer


def first_record_and_rebalance(bootstrap: str, topic: str, protocol: str) -> tuple[float, float]:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    first = member(bootstrap, group, topic, protocol)
    second: Consumer | None = None
    try:
        while True:
            message = first.poll(0.005)
            if message is not None and message.error() is None:
                break
            if time.monotonic() - started > DEADLINE_S:
                raise TimeoutError(f"{protocol}: no record after {DEADLINE_S} s")
        to_first_record = time.monotonic() - started
        joined = time.monotonic()
        second = member(bootstrap, group, topic, protocol)
        while True:
            first.poll(0.005)
            second.poll(0.005)
            owned = [{tp.partition for tp in c.assignment()} for c in (first, second)]
            if all(owned) and sorted(p for o in owned for p in o) == list(range(PARTITIONS)):
                return to_first_record, time.monotonic() - joined
            if time.monotonic() - joined > DEADLINE_S:
                raise TimeoutError(f"{protocol}: no rebalance after {DEADLINE_S} s")
    finally:
        first.close()
        if second is not None:
            second.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="broker setting, e.g. -c group.initial.rebalance.delay.ms=0 (repeatable)")
    args = parser.parse_args(argv)
    settings = {"group.consumer.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS}
    settings.update(setting.split("=", 1) for setting in args.settings)
    with Broker(settings) as broker:
        bootstrap = broker.bootstrap_servers
        topic = "group-join"
        create_topic(bootstrap, topic, PARTITIONS)
        producer = Producer({"bootstrap.servers": bootstrap})
        for partition in range(PARTITIONS):
            producer.produce(topic, b"x", partition=partition)
        if producer.flush(DEADLINE_S):
            raise TimeoutError("records left undelivered")
        print(f"{'protocol':<10} {'first record (ms)':>18} {'second member, rebalanced (ms)':>31}   medians of {args.runs}")
        for protocol in PROTOCOLS:
            runs = [first_record_and_rebalance(bootstrap, topic, protocol) for _ in range(args.runs)]
            first = statistics.median(r[0] for r in runs) * 1000
            rebalance = statistics.median(r[1] for r in runs) * 1000
            print(f"{protocol:<10} {first:>18.0f} {rebalance:>31.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
