"""``reset()`` between tests on one broker: how long it takes, and whether any test sees an earlier test's data.

One in-process ``minibroker.testing.Broker`` (``--nodes N``) serves ``--tests`` tests in a row, each doing what an
application's test does with confluent-kafka, with the same names every time: create the topic, produce a few
records, commit a transaction of a few more, then read them in a consumer group (subscribe, read committed) and
commit. Each test checks that it sees only its own data: no committed offset for the group before it reads, its
records alone starting at offset 0, a high watermark of its own records and marker, and a transactional id at
producer epoch 0 (a transaction left over would fence it to a higher epoch). Any leftover stops the run with an
error naming the test. After each test its clients are closed and ``broker.reset()`` is timed, as a fixture that
resets a session's broker would call it. Run from the repository root: ``python benchmarks/reset.py [--tests N]
[--nodes N] [-c KEY=VALUE]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import confluent_kafka  # noqa: E402
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from benchmarks.common import percentile  # noqa: E402
from minibroker.testing import Broker  # noqa: E402

TOPIC, GROUP, TRANSACTIONAL_ID = "orders", "orders-app", "orders-writer"
PLAIN, IN_TRANSACTION = 3, 2
# The plain records, the transaction's, and its commit marker: a fresh partition's high watermark after a test.
HIGH_WATERMARK = PLAIN + IN_TRANSACTION + 1
# Topics a test leaves for reset() to delete: its own (the internal topics are emptied, not deleted).
TOPICS_LEFT = 1
TIMEOUT_S = 30.0


class Leftover(AssertionError):
    """A test saw data an earlier test left: reset() did not give it a fresh broker."""


def produce(bootstrap: str, run: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    try:
        for index in range(PLAIN):
            producer.produce(TOPIC, f"{run}:plain:{index}".encode(), partition=0)
        if producer.flush(TIMEOUT_S):
            raise TimeoutError(f"test {run}: plain records left undelivered")
    finally:
        producer.close()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID})
    try:
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        for index in range(IN_TRANSACTION):
            producer.produce(TOPIC, f"{run}:txn:{index}".encode(), partition=0)
        producer.commit_transaction(TIMEOUT_S)
    finally:
        producer.close()


def consume_and_commit(bootstrap: str, run: int) -> list[tuple[int, str]]:
    """The test's records as (offset, value), read in GROUP from its committed offset (none: the start)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "isolation.level": "read_committed",
    })
    partition = TopicPartition(TOPIC, 0)
    try:
        [before] = consumer.committed([partition], timeout=TIMEOUT_S)
        if before.offset != OFFSET_INVALID:
            raise Leftover(f"test {run}: group {GROUP} already has offset {before.offset} committed")
        consumer.subscribe([TOPIC])
        seen: list[tuple[int, str]] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(seen) < PLAIN + IN_TRANSACTION:
            if time.monotonic() > deadline:
                raise TimeoutError(f"test {run}: read {len(seen)} records in {TIMEOUT_S} s: {seen}")
            message = consumer.poll(0.05)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            seen.append((message.offset(), message.value().decode()))
            consumer.commit(message=message, asynchronous=False)
        # The last Fetch answer's offsets: a ListOffsets request would queue behind the consumer's long poll.
        low, high = consumer.get_watermark_offsets(partition, cached=True)
        if (low, high) != (0, HIGH_WATERMARK):
            raise Leftover(f"test {run}: offsets {low}-{high}, not 0-{HIGH_WATERMARK}")
        [after] = consumer.committed([partition], timeout=TIMEOUT_S)
        if after.offset != seen[-1][0] + 1:
            raise RuntimeError(f"test {run}: committed {after.offset}, not {seen[-1][0] + 1}")
        return seen
    finally:
        consumer.close()


def one_test(broker: Broker, bootstrap: str, run: int) -> None:
    """What one test does and checks; raises Leftover if it meets an earlier test's data."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(TOPIC, 1)])[TOPIC].result(TIMEOUT_S)
    except KafkaException as exc:
        raise Leftover(f"test {run}: creating {TOPIC}: {exc}") from None
    produce(bootstrap, run)
    seen = consume_and_commit(bootstrap, run)
    expected = [f"{run}:plain:{i}" for i in range(PLAIN)] + [f"{run}:txn:{i}" for i in range(IN_TRANSACTION)]
    if seen != list(zip(range(PLAIN + IN_TRANSACTION), expected)):
        raise Leftover(f"test {run}: read {seen}, expected its own {expected} from offset 0")
    epoch = broker.transaction(TRANSACTIONAL_ID)["producer_epoch"]
    if epoch != 0:
        raise Leftover(f"test {run}: {TRANSACTIONAL_ID} is at producer epoch {epoch}: an earlier one survived")


def summary(name: str, seconds: list[float]) -> str:
    ordered = sorted(seconds)
    ms = [statistics.median(ordered) * 1000, percentile(ordered, 0.9) * 1000, ordered[-1] * 1000]
    return f"{name:<16} {ms[0]:>9.1f} {ms[1]:>9.1f} {ms[2]:>9.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="broker setting")
    args = parser.parse_args(argv)
    settings = dict(setting.split("=", 1) for setting in args.settings)
    resets: list[float] = []
    tests: list[float] = []
    with Broker(settings, nodes=args.nodes) as broker:
        bootstrap = ",".join(broker.node_addresses.values())
        for run in range(args.tests):
            started = time.perf_counter()
            one_test(broker, bootstrap, run)
            tests.append(time.perf_counter() - started)
            started = time.perf_counter()
            deleted = broker.reset()
            resets.append(time.perf_counter() - started)
            if deleted != TOPICS_LEFT:
                raise RuntimeError(f"reset() after test {run} deleted {deleted} topics, not {TOPICS_LEFT}")
    print(f"{args.tests} tests on one broker, --nodes {args.nodes}{''.join(f' -c {s}' for s in args.settings)}; "
          f"confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}")
    print(f"{'':<16} {'median':>9} {'p90':>9} {'max':>9}   (ms)")
    print(summary("reset()", resets))
    print(summary("test", tests))
    print(f"every test saw only its own records, offsets and transactional id ({args.tests} of {args.tests})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
