"""Produce/consume throughput and end-to-end latency of a local minibroker, measured with confluent-kafka.

Starts a broker on a free port with a temporary data directory, then:
1. produces --messages records of --size bytes to a 1-partition topic (linger.ms=5, batch.size=1000000, acks=all)
   and checks that the high watermark equals the count;
2. consumes them all back from offset 0 with an assigned partition (no consumer group);
3. runs a paced producer (--rate records/s for --latency-seconds, send time in the payload) while a consumer
   reads concurrently, and reports end-to-end latency percentiles.
The broker is stopped at the end, whatever happens.

    python benchmarks/throughput.py                 # 1,000,000 messages
    python benchmarks/throughput.py --messages 100000 --latency-seconds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402  (needs the repository root on the path)
    STAMP,
    consume_all,
    create_topic,
    high_watermark,
    measure_latency,
    percentile,
    produce_all,
)
from tests.brokerproc import BrokerProcess  # noqa: E402

# The latency consumer's fetch.wait.max.ms here (compare.py uses the client's default).
LATENCY_CONSUMER = {"fetch.wait.max.ms": 100}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="records for the throughput runs (default 1,000,000)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes per record (default 100)")
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="duration of the paced latency run (default 10)")
    parser.add_argument("--rate", type=int, default=1000, help="records per second in the latency run (default 1000)")
    parser.add_argument("--latency-linger-ms", type=int, default=0, help="linger.ms of the paced producer (default 0)")
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="broker setting")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.size < STAMP.size or args.rate < 1 or args.latency_seconds <= 0:
        parser.error(f"need --messages >= 1, --size >= {STAMP.size}, --rate >= 1 and --latency-seconds > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", *args.settings)
        try:
            broker.start()
            print(f"broker on {broker.bootstrap}, {args.messages:,} messages of {args.size} bytes", flush=True)
            create_topic(broker.bootstrap, "throughput")
            produced = produce_all(broker.bootstrap, "throughput", args.messages, args.size)
            watermark = high_watermark(broker.bootstrap, "throughput")
            if watermark != args.messages:
                raise RuntimeError(f"high watermark {watermark}, expected {args.messages}")
            consumed = consume_all(broker.bootstrap, "throughput", args.messages)
            create_topic(broker.bootstrap, "latency")
            latencies = sorted(
                measure_latency(
                    broker.bootstrap, "latency", args.latency_seconds, args.rate, args.size, args.latency_linger_ms,
                    LATENCY_CONSUMER,
                )
            )
        finally:
            broker.stop()

    print()
    print(f"{'phase':<10} {'messages':>12} {'seconds':>9} {'MB/s':>10} {'msgs/s':>12}")
    print(produced.row())
    print(consumed.row())
    print(f"high watermark {watermark:,} (= messages produced)")
    print()
    print(f"end-to-end latency, {len(latencies):,} records at {args.rate}/s, linger.ms={args.latency_linger_ms}:")
    print(f"  p50 {percentile(latencies, 0.50):.2f} ms   p99 {percentile(latencies, 0.99):.2f} ms   "
          f"max {latencies[-1]:.2f} ms   mean {statistics.fmean(latencies):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
