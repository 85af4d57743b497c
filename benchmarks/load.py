"""Load and back-pressure figures: a producer's throughput alone and while many abusive connections are open
(idle ones, slow senders trickling requests a byte at a time, deaf clients that never read), and the
broker's resident memory before, at its peak and after.

    python benchmarks/load.py                         # 1000 idle, 50 slow, 10 deaf, 100,000 records
    python benchmarks/load.py --idle 5000 --deaf 50   # the broker raises its own open file limit

The broker runs as a child process (free port, temporary data directory) and is always stopped.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.brokerproc import BrokerProcess  # noqa: E402
from tests.clientutil import confluent_create_topic  # noqa: E402
from tests.loadutil import Abuse, fill_fetched_topic, raise_open_file_limit, rss_bytes, timed_produce  # noqa: E402

MIB = 2**20


def peak_rss_bytes(pid: int) -> int:
    """VmHWM: the highest resident set size the process ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--idle", type=int, default=1000, help="idle connections (default 1000)")
    parser.add_argument("--slow", type=int, default=50, help="slow senders (default 50)")
    parser.add_argument("--deaf", type=int, default=10, help="clients that never read (default 10)")
    parser.add_argument("--messages", type=int, default=100_000, help="records per producer run (default 100,000)")
    parser.add_argument("--size", type=int, default=100, help="record size in bytes (default 100)")
    parser.add_argument("--hold", type=float, default=3.0, help="seconds to keep the abuse going after producing")
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="broker setting")
    args = parser.parse_args()
    raise_open_file_limit(args.idle + args.slow + args.deaf + 200)
    with tempfile.TemporaryDirectory(prefix="minibroker-load-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", *args.settings)
        try:
            broker.start()
            pid = broker.proc.pid
            confluent_create_topic(broker.bootstrap, "big", partitions=1)
            confluent_create_topic(broker.bootstrap, "normal", partitions=1)
            fill_fetched_topic(broker.bootstrap, "big")
            alone = timed_produce(broker.bootstrap, "normal", args.messages, args.size)
            before = rss_bytes(pid)
            opened = time.monotonic()
            with Abuse(broker.bootstrap, "big", idle=args.idle, slow=args.slow, deaf=args.deaf) as abuse:
                open_s = time.monotonic() - opened
                during = timed_produce(broker.bootstrap, "normal", args.messages, args.size)
                sampled = rss_bytes(pid)
                end = time.monotonic() + args.hold
                while time.monotonic() < end:
                    time.sleep(0.1)
                    sampled = max(sampled, rss_bytes(pid))
                still_open = abuse.still_open()
                answers, deaf_bytes = abuse.slow_answers, abuse.deaf_bytes_sent
            time.sleep(0.5)
            after = rss_bytes(pid)
            total = args.idle + args.slow + args.deaf
            print(f"connections        {total} ({args.idle} idle, {args.slow} slow, {args.deaf} deaf), opened in {open_s:.2f} s")
            print(f"producer alone     {args.messages / alone:,.0f} records/s ({args.messages} x {args.size} B, acks=all)")
            print(f"producer + abuse   {args.messages / during:,.0f} records/s")
            print(f"broker RSS         {before / MIB:.1f} MiB before, {sampled / MIB:.1f} MiB peak sampled during the abuse, "
                  f"{after / MIB:.1f} MiB after; lifetime peak (VmHWM) {peak_rss_bytes(pid) / MIB:.1f} MiB")
            print(f"slow senders       {answers} answers; deaf clients sent {deaf_bytes / MIB:.1f} MiB of requests in all "
                  "(socket buffers included) before the broker stopped reading them")
            print(f"idle connections   {still_open} of {args.idle} still open")
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
