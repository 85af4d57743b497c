"""A consumer group member as a process of its own, for tests that kill it with SIGKILL.

    python -m tests.group_member {kafka-python|aiokafka|confluent} BOOTSTRAP GROUP TOPIC SESSION_MS

It subscribes to TOPIC in GROUP with the given session timeout, prints ``assigned 0,1`` whenever its
assignment changes, and polls until it is killed.
"""

from __future__ import annotations

import asyncio
import sys

from tests.grouputil import HEARTBEAT_MS


def report(assignment: set[int], last: list[set[int]]) -> None:
    if assignment != last[0]:
        last[0] = assignment
        print("assigned", ",".join(str(p) for p in sorted(assignment)), flush=True)


def run_kafka_python(bootstrap: str, group: str, topic: str, session_ms: int) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, enable_auto_commit=False,
    )
    last = [set()]
    while True:
        consumer.poll(100)
        report({tp.partition for tp in consumer.assignment()}, last)


def run_confluent(bootstrap: str, group: str, topic: str, session_ms: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": HEARTBEAT_MS, "enable.auto.commit": False,
    })
    consumer.subscribe([topic])
    last = [set()]
    while True:
        consumer.poll(0.1)
        report({tp.partition for tp in consumer.assignment()}, last)


async def run_aiokafka(bootstrap: str, group: str, topic: str, session_ms: int) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=session_ms,
        heartbeat_interval_ms=HEARTBEAT_MS, enable_auto_commit=False,
    )
    await consumer.start()
    last = [set()]
    while True:
        await consumer.getmany(timeout_ms=100)
        report({tp.partition for tp in consumer.assignment()}, last)


def main() -> None:
    client, bootstrap, group, topic, session = sys.argv[1:6]
    if client == "kafka-python":
        run_kafka_python(bootstrap, group, topic, int(session))
    elif client == "confluent":
        run_confluent(bootstrap, group, topic, int(session))
    elif client == "aiokafka":
        asyncio.run(run_aiokafka(bootstrap, group, topic, int(session)))
    else:
        raise SystemExit(f"unknown client {client}")


if __name__ == "__main__":
    main()
