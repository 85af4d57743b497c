"""Produce throughput with the authorizer off, on with a few ACLs, and on with 1,000 ACLs.

Three broker processes (PLAINTEXT, free ports, temporary data directories) run side by side: one without
``authorizer.class.name``, two with the standard authorizer. The producer connects as User:ANONYMOUS, which is not a
super user, so every Produce and Metadata request goes through the ACL checks. Its ACLs are a PREFIXED ALLOW of
WRITE on ``bench-`` (topic names of the runs) and CREATE on the cluster (to create them); the 1,000-ACL broker has
998 more, for other principals, topics and prefixes (half LITERAL, half PREFIXED), so a decision looks through an
index as large as the issue's acceptance asks. The ACL file is written into each data directory before its broker
starts.

Each round produces ``--messages`` records of ``--size`` bytes to a new topic of each broker, in an order that rotates
between rounds; the table gives the median msgs/s of each configuration and the median of the per-round ratios to
"off", with the middle half of those ratios (the spread between rounds). Small batches (``batch.size`` 16 KiB,
Kafka's default) make many requests, each one checked. Last, the cost of one check in-process (WRITE on a topic,
with each broker's ACLs), remembered and decided afresh.

    python benchmarks/authorization.py                    # 7 rounds of 200,000 x 100 B
    python benchmarks/authorization.py --rounds 3 --messages 50000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402

from benchmarks.common import create_topic, high_watermark  # noqa: E402
from minibroker.acls import store  # noqa: E402
from minibroker.acls.model import ALLOW, DENY, LITERAL, PREFIXED, Acl  # noqa: E402
from minibroker.acls.operations import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, READ, TOPIC, WRITE  # noqa: E402
from tests.brokerproc import BrokerProcess  # noqa: E402

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
PRODUCER = {"linger.ms": 5, "batch.size": 16384, "acks": "all", "delivery.report.only.error": True}
NEEDED = [
    Acl(TOPIC, "bench-", PREFIXED, ANONYMOUS, "*", WRITE, ALLOW),
    Acl(CLUSTER, CLUSTER_NAME, LITERAL, ANONYMOUS, "*", CREATE, ALLOW),
]


def other_acls(count: int) -> list[Acl]:
    """ACLs that do not concern the producer: other users, topics and prefixes, allows and denies."""
    acls = []
    for i in range(count):
        pattern = LITERAL if i % 2 == 0 else PREFIXED
        name = f"team{i % 37}-topic-{i}" if pattern == LITERAL else f"team{i % 37}-{i}-"
        operation = (READ, WRITE, DESCRIBE)[i % 3]
        acls.append(Acl(TOPIC, name, pattern, f"User:user{i % 50}", "*", operation, DENY if i % 10 == 0 else ALLOW))
    return acls


def produce(bootstrap: str, topic: str, count: int, size: int) -> float:
    """msgs/s of ``count`` records, from the first produce() to the end of flush()."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 4, **PRODUCER})
    errors: list[str] = []
    payload = bytes(size)
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload, partition=0, on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
                break
            except BufferError:
                producer.poll(0.005)
        producer.poll(0)
    remaining = producer.flush(60)
    seconds = time.perf_counter() - start
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")
    return count / seconds


def check_costs(acls: list[Acl], checks: int = 200_000) -> tuple[float, float]:
    """Microseconds per Produce check (WRITE on a topic) in-process with these ACLs: remembered, and decided afresh."""
    from minibroker.acls.authorizer import Authorizer

    authorizer = Authorizer(frozenset(), False, acls)
    authorize = authorizer.authorize
    start = time.perf_counter()
    for _ in range(checks):
        authorize(ANONYMOUS, "127.0.0.1", WRITE, TOPIC, "bench-1")
    remembered = (time.perf_counter() - start) / checks * 1e6
    decide = authorizer._decide  # the work behind a decision that is not remembered yet
    start = time.perf_counter()
    for _ in range(checks):
        decide(ANONYMOUS, "127.0.0.1", WRITE, TOPIC, "bench-1")
    return remembered, (time.perf_counter() - start) / checks * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    configs = {
        "off": (None, []),
        "on, 2 ACLs": (STANDARD, NEEDED),
        "on, 1,000 ACLs": (STANDARD, NEEDED + other_acls(998)),
    }
    rates: dict[str, list[float]] = {name: [] for name in configs}
    brokers: dict[str, BrokerProcess] = {}
    with tempfile.TemporaryDirectory(prefix="minibroker-authz-") as tmp:
        try:
            for index, (name, (authorizer, acls)) in enumerate(configs.items()):
                data = Path(tmp) / f"data{index}"
                data.mkdir()
                settings = ["listeners=PLAINTEXT://127.0.0.1:0"]
                if authorizer:
                    store.save(data, acls)
                    settings.append(f"authorizer.class.name={authorizer}")
                brokers[name] = BrokerProcess(data, *settings).start()
            names = list(configs)
            for round_index in range(args.rounds):
                order = names[round_index % len(names):] + names[:round_index % len(names)]
                for name in order:
                    topic = f"bench-{round_index}"
                    create_topic(brokers[name].bootstrap, topic)
                    rates[name].append(produce(brokers[name].bootstrap, topic, args.messages, args.size))
                    if high_watermark(brokers[name].bootstrap, topic) != args.messages:
                        raise RuntimeError(f"{name}: high watermark is not {args.messages}")
                print(f"round {round_index + 1}: " + ", ".join(f"{n} {rates[n][-1]:,.0f}" for n in names), flush=True)
        finally:
            for broker in brokers.values():
                broker.stop()
    print(f"\n{args.rounds} rounds of {args.messages:,} x {args.size} B, batch.size 16 KiB, acks=all")
    print(f"{'configuration':<16} {'median msgs/s':>14} {'median ratio to off':>20} {'middle half of ratios':>22}")
    for name in names:
        ratios = [rate / off for rate, off in zip(rates[name], rates["off"])]
        low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
        print(f"{name:<16} {statistics.median(rates[name]):>14,.0f} {statistics.median(ratios):>20.3f} "
              f"{f'{low:.3f}-{high:.3f}':>22}")
    for name, (authorizer, acls) in configs.items():
        if authorizer:
            remembered, decided = check_costs(acls)
            print(f"{name}: a check costs {remembered:.2f} us remembered, {decided:.2f} us decided afresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
