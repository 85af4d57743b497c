"""How minibroker's costs grow: many partitions, many idle connections, a large log.

Three tables, each from fresh broker processes (``python -m minibroker serve``, temporary data directories):

1. Partitions: for each count (default 100, 1,000, 5,000) one topic with that many partitions: the time
   CreateTopics takes, the round trip of a Metadata request for that topic and for all topics, a produce of
   ``--spread-messages`` records of 100 B spread evenly over all partitions (confluent-kafka, acks=all), the
   restart time and the broker's RSS. minibroker keeps one descriptor open per segment (its .log; index files
   are open only while written), so 10,000 partitions need about 10,000 open files: the harness raises the
   broker's limit when it may; past the limit CreateTopics is refused whole with KAFKA_STORAGE_ERROR.
2. Idle connections: the broker's RSS and an ApiVersions round trip with 0 and ``--connections`` (default 1,000)
   open, idle Kafka connections (each has sent one ApiVersions request), and the broker's CPU while they idle.
3. A large log: 1 KB records in one partition (segments of ``--segment-mb``, default 256 MB), grown to each
   size of ``--log-gb`` (default 1 and 10 GB), with the start-up time (exec to the first ApiVersions answer)
   and idle RSS after a clean restart at each size, compared with an empty data directory, and after
   ``kill -9`` of a broker that had just appended ``--tail-mb`` more (recovery reads the unflushed tail).

    python benchmarks/scale.py                 # everything, about 4-6 minutes (10 GB of disk)
    python benchmarks/scale.py --quick         # 1,000 partitions, 200 connections, 0.2 GB
    python benchmarks/scale.py --only partitions,connections
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402
from minibroker.protocol.frames import encode_request  # noqa: E402

from benchmarks.common import PRODUCER_SETTINGS, TIMEOUT_S, create_topic, produce_all  # noqa: E402  (needs the repository root on the path)
from benchmarks.compare import Minibroker, start_broker  # noqa: E402

_SIZE = struct.Struct(">i")
SECTIONS = ("partitions", "connections", "log")


# ---- raw requests: one round trip, timed on the client ----


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError(f"connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def round_trip(sock: socket.socket, request: bytes) -> tuple[float, int]:
    """(seconds, answer bytes) for one request on an open connection."""
    started = time.perf_counter()
    sock.sendall(request)
    (size,) = _SIZE.unpack(_recv_exactly(sock, 4))
    _recv_exactly(sock, size)
    return time.perf_counter() - started, size


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def api_versions_request(correlation_id: int = 1) -> bytes:
    body = {"client_software_name": "scale-benchmark", "client_software_version": "1"}
    return encode_request(18, 3, correlation_id, "scale-benchmark", body)


def metadata_request(topic: str | None) -> bytes:
    topics = None if topic is None else [{"name": topic, "topic_id": bytes(16)}]
    body = {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return encode_request(3, 12, 7, "scale-benchmark", body)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["| " + " | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|")
    for row in rows:
        lines.append("| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |")
    return "\n".join(lines)


# ---- 1. partitions ----


def produce_spread(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    """Seconds to produce ``count`` records of 100 B round-robin over ``partitions`` partitions (acks=all)."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS, "acks": "all", "log_level": 4})
    payload = bytes(100)
    errors: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            errors.append(str(err))

    try:
        producer.list_topics(topic, timeout=TIMEOUT_S)  # metadata first: time the produce, not the lookup
        started = time.perf_counter()
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, payload, partition=i % partitions, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.005)
            producer.poll(0)
        remaining = producer.flush(TIMEOUT_S * 5)
        seconds = time.perf_counter() - started
    finally:
        producer.purge()
        producer.close()
    if remaining or errors:
        raise RuntimeError(f"spread produce: {remaining} undelivered, errors {errors[:3]}")
    return seconds


def partitions_section(args: argparse.Namespace, tmp: Path) -> str:
    rows = []
    for count in args.partitions:
        # minibroker holds a descriptor per segment (its .log) and one per index being written: give the child
        # enough, as Kafka's documentation tells its users to (this needs the privilege to raise the hard limit).
        open_files = 3 * count + 4096
        workdir = tmp / f"partitions-{count}"
        running, _ = start_broker(Minibroker([]), workdir, open_files)
        try:
            bootstrap = running.bootstrap
            base_rss = running.rss()
            cpu = running.cpu()
            started = time.perf_counter()
            create_topic(bootstrap, "wide", partitions=count, timeout_s=max(TIMEOUT_S, min(count * 0.02, 300)))
            create_s = time.perf_counter() - started
            create_cpu = running.cpu() - cpu
            with connect(bootstrap) as sock:
                round_trip(sock, api_versions_request())
                one = [round_trip(sock, metadata_request("wide")) for _ in range(args.samples)]
                every = [round_trip(sock, metadata_request(None)) for _ in range(args.samples)]
            rss_created = running.rss()
            spread_s = produce_spread(bootstrap, "wide", count, args.spread_messages)
            rss_produced = running.rss()
        finally:
            running.stop()
        restart, restart_rss = restart_samples(workdir, [], 1, open_files)
        rows.append([
            f"{count:,}",
            f"{create_s:,.2f} s ({create_cpu:,.2f} s CPU)",
            f"{median_ms([s for s, _ in one]):,.1f} ms ({one[0][1] / 1000:,.0f} kB)",
            f"{median_ms([s for s, _ in every]):,.1f} ms",
            f"{args.spread_messages / spread_s:,.0f}",
            f"{median_ms(restart):,.0f} ms",
            f"{base_rss:,.1f} / {rss_created:,.1f} / {rss_produced:,.1f} / {restart_rss[0]:,.1f}",
        ])
        print(f"partitions {count:,}: {rows[-1][1:]}", flush=True)
    header = ["partitions", "CreateTopics", "Metadata (that topic), answer size", "Metadata (all topics)",
              f"produce {args.spread_messages:,} x 100 B spread, msgs/s", "restart to first ApiVersions",
              "RSS MB: empty / created / after produce / restarted"]
    return table(header, rows)


# ---- 2. idle connections ----


def connections_section(args: argparse.Namespace, tmp: Path) -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.connections + 256
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    running, _ = start_broker(Minibroker([]), tmp / "connections")
    rows = []
    socks: list[socket.socket] = []
    try:
        bootstrap = running.bootstrap

        def sample(label: str) -> None:
            with connect(bootstrap) as sock:
                times = [round_trip(sock, api_versions_request(i))[0] for i in range(args.samples * 10)]
            cpu = running.cpu()
            time.sleep(args.idle_seconds)
            idle_cpu = (running.cpu() - cpu) / args.idle_seconds * 100
            rows.append([label, f"{running.rss():,.1f}", f"{median_ms(times):,.2f} ms",
                         f"{sorted(times)[int(len(times) * 0.99) - 1] * 1000:,.2f} ms", f"{idle_cpu:,.1f} %"])
            print(f"connections {label}: {rows[-1][1:]}", flush=True)

        sample("0")
        started = time.perf_counter()
        request = api_versions_request()
        for _ in range(args.connections):
            sock = connect(bootstrap)
            socks.append(sock)
            sock.sendall(request)
        for sock in socks:
            (size,) = _SIZE.unpack(_recv_exactly(sock, 4))
            _recv_exactly(sock, size)
        opened = time.perf_counter() - started
        sample(f"{args.connections:,} (opened and answered in {opened:,.2f} s)")
    finally:
        for sock in socks:
            sock.close()
        running.stop()
    header = ["idle connections", "broker RSS MB", "ApiVersions p50", "ApiVersions p99",
              f"broker CPU while idle ({args.idle_seconds:g} s)"]
    return table(header, rows)


# ---- 3. a large log ----


def fill_log(bootstrap: str, topic: str, gigabytes: float) -> tuple[int, float]:
    count = int(gigabytes * 1e9 / 1000)
    seconds = produce_all(bootstrap, topic, count, 1000, acks="1").seconds
    return count, seconds


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def restart_samples(
    workdir: Path, settings: list[str], rounds: int, open_files: int | None = None
) -> tuple[list[float], list[float]]:
    """Start-up seconds and idle RSS over ``rounds`` clean restarts of the broker on ``workdir/data``."""
    startups, rss = [], []
    for _ in range(rounds):
        running, startup = start_broker(Minibroker(settings), workdir, open_files)
        time.sleep(0.5)
        startups.append(startup)
        rss.append(running.rss())
        running.stop()
    return startups, rss


def log_section(args: argparse.Namespace, tmp: Path) -> str:
    settings = [f"log.segment.bytes={args.segment_mb * 1024 * 1024}"]
    rows = []
    empty = tmp / "log-empty"
    start_broker(Minibroker(settings), empty)[0].stop()  # the same files a first start creates
    startups, rss = restart_samples(empty, settings, args.rounds)
    rows.append(["empty data directory", "0", f"{median_ms(startups):,.0f} ms", f"{statistics.median(rss):,.1f}"])
    print(f"log: {rows[-1]}", flush=True)

    big = tmp / "log-big"
    count = 0
    for target_gb in args.log_gb:  # one log grown size by size: a clean restart measured at each
        running, _ = start_broker(Minibroker(settings), big)
        try:
            if count == 0:
                create_topic(running.bootstrap, "big")
            added, seconds = fill_log(running.bootstrap, "big", target_gb - count * 1000 / 1e9)
            count += added
            print(f"log: produced {added:,} x 1 KB in {seconds:,.1f} s", flush=True)
        finally:
            running.stop()
        size_gb = dir_size(big / "data") / 1e9
        segments = len(list((big / "data" / "big-0").glob("*.log")))
        startups, rss = restart_samples(big, settings, args.rounds)
        rows.append([f"{size_gb:,.2f} GB, {segments} segments, clean restart", f"{count:,}",
                     f"{median_ms(startups):,.0f} ms", f"{statistics.median(rss):,.1f}"])
        print(f"log: {rows[-1]}", flush=True)

    # Unclean: append a tail, kill -9 before any flush, restart: recovery reads the unflushed tail only.
    running, _ = start_broker(Minibroker(settings), big)
    try:
        produce_all(running.bootstrap, "big", int(args.tail_mb * 1000), 1000, acks="1")
    finally:
        os.killpg(running.proc.pid, signal.SIGKILL)
        running.proc.wait()
    running, startup = start_broker(Minibroker(settings), big)
    time.sleep(0.5)
    rows.append([f"after kill -9 with {args.tail_mb:g} MB unflushed", f"{count + int(args.tail_mb * 1000):,}",
                 f"{startup * 1000:,.0f} ms", f"{running.rss():,.1f}"])
    running.stop()
    print(f"log: {rows[-1]}", flush=True)
    header = ["data directory", "records", f"start-up (median of {args.rounds})", "idle RSS MB"]
    return table(header, rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 partitions, 200 connections, a 0.2 GB log")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)}")
    parser.add_argument("--partitions", help="comma list of partition counts (default 100,1000,10000)")
    parser.add_argument("--spread-messages", type=int, help="records of the spread produce (default 100,000)")
    parser.add_argument("--connections", type=int, help="idle connections (default 1,000)")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="how long the broker's idle CPU is measured")
    parser.add_argument("--log-gb", help="comma list of sizes the large log is grown to (default 1,10 GB)")
    parser.add_argument("--segment-mb", type=int, default=256, help="segment size of the large log (default 256 MB)")
    parser.add_argument("--tail-mb", type=float, default=100.0, help="unflushed tail before kill -9 (default 100 MB)")
    parser.add_argument("--rounds", type=int, default=3, help="restarts per start-up figure (default 3)")
    parser.add_argument("--samples", type=int, default=5, help="round trips per latency figure (default 5)")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    if set(args.only) - set(SECTIONS):
        parser.error(f"--only takes {', '.join(SECTIONS)}")
    args.partitions = [int(p) for p in (args.partitions or ("1000" if args.quick else "100,1000,10000")).split(",")]
    args.spread_messages = args.spread_messages or (20_000 if args.quick else 100_000)
    args.connections = args.connections or (200 if args.quick else 1000)
    args.log_gb = sorted(float(gb) for gb in (args.log_gb or ("0.2" if args.quick else "1,10")).split(","))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from benchmarks.compare import machine_line

    print(f"machine: {machine_line()}", flush=True)
    outputs = []
    with tempfile.TemporaryDirectory(prefix="minibroker-scale-", dir=os.environ.get("SCALE_TMPDIR")) as tmp:
        for section in args.only:
            started = time.monotonic()
            text = {"partitions": partitions_section, "connections": connections_section, "log": log_section}[section](
                args, Path(tmp)
            )
            outputs.append(f"{section} ({time.monotonic() - started:,.0f} s):\n\n{text}")
    print()
    print("\n\n".join(outputs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
