"""An idempotent acks=all producer that keeps sending numbered records while a test restarts, kills or reshapes
the broker, and records every acknowledgement, so the test can check that each one is stored once and in order."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import Producer

from tests.clientutil import TIMEOUT_S


class NumberedProducer:
    """Record n goes to partition n % ``partitions``; ``acked``: partition -> [(offset, n)] in acknowledgement order.
    The producer thread starts with ``start``; ``pace_s`` is how long each loop serves delivery reports."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, pace_s: float = 0.001) -> None:
        self.topic = topic
        self.partitions = partitions
        self.pace_s = pace_s
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
            "message.timeout.ms": 120_000, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20, "retry.backoff.max.ms": 200,
        })
        self.sent = 0
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="numbered-producer", daemon=True)

    def start(self) -> NumberedProducer:
        self.thread.start()
        return self

    def _report(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.partition()].append((msg.offset(), int(msg.value())))

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.producer.produce(
                    self.topic, str(self.sent).encode(), partition=self.sent % self.partitions, on_delivery=self._report,
                )
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(self.pace_s)

    def finish(self, flush_timeout_s: float = TIMEOUT_S) -> None:
        """Stop sending and wait for every acknowledgement (a failed assertion if some never come)."""
        self.stopping.set()
        self.thread.join(TIMEOUT_S)
        assert self.producer.flush(flush_timeout_s) == 0, f"records still unacknowledged after {flush_timeout_s} s"

    def close(self) -> None:
        """Stop (if still sending) and drop whatever is unsent; safe to call after ``finish``."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(TIMEOUT_S)
        self.producer.purge()
        self.producer.close()
