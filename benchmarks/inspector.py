"""The web inspector with large data, and its cost to the clients.

Three figures, each printed:

- a topic of ``--partitions`` partitions (10,000): how long the calls its page makes take (the topic list, the topic
  with its first 100 partitions, the cluster), and the page itself in headless Chromium until its partitions show
  (when chromium and chromedriver are installed), medians of 5;
- a partition of ``--gigabytes`` (1 GB of 1 KB records): the records of its start, of its end and from a timestamp in
  its middle, one record in full, and the topic view, medians of 5;
- a producer's throughput with and without the inspector's page open on its topic (a real headless Chromium when
  /usr/bin/chromium exists, else a poller making the page's calls every second), alternating rounds, medians.

The broker of the first two is in-process (``minibroker.testing.Broker``); the third runs the broker as its own
process, as a user runs it, with the producer here. Run from the repository root:
``python benchmarks/inspector.py [--partitions N] [--gigabytes G] [--rounds N] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import cpu_seconds, free_port, produce_all, wait_for_api_versions  # noqa: E402
from minibroker.testing import Broker  # noqa: E402

RECORD_BYTES = 1024
CHROMIUM = Path("/usr/bin/chromium")
PAGE_POLL_S = 1.5  # the page's own interval (app.js POLL_MS)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read()


def median_ms(call: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def report(rows: list[tuple[str, float]]) -> None:
    for name, ms in rows:
        print(f"  {name:<52} {ms:>9.1f} ms")


def wide_topic(partitions: int, browser: Browser | None) -> None:
    with Broker(control=True) as broker:
        started = time.perf_counter()
        broker.create_topic("wide", partitions)
        print(f"a topic of {partitions:,} partitions (created in {time.perf_counter() - started:.1f} s):")
        url = broker.control_url
        rows = [
            ("GET /v1/topics (the topic list)", median_ms(lambda: get(f"{url}/v1/topics?limit=100"))),
            ("GET /v1/topics/wide (first 100 partitions)", median_ms(lambda: get(f"{url}/v1/topics/wide"))),
            ("GET /v1/topics/wide?offset=9900 (a last page)", median_ms(lambda: get(f"{url}/v1/topics/wide?offset=9900"))),
            ("GET /v1/cluster", median_ms(lambda: get(f"{url}/v1/cluster"))),
        ]
        if browser is not None:
            rows.append(("the page /topics/wide, until its 100 partitions show", browser.open_ms(
                f"{url}/topics/wide", "document.querySelectorAll('table.partitions tbody tr').length >= 100")))
        report(rows)


def big_partition(gigabytes: float, browser: Browser | None) -> None:
    count = int(gigabytes * 1e9 / RECORD_BYTES)
    with Broker(control=True) as broker:
        broker.create_topic("big", 1)
        written = produce_all(broker.bootstrap_servers, "big", count, RECORD_BYTES)
        records = f"{broker.control_url}/v1/partitions/big/0/records"
        first = json.loads(get(f"{records}?max=1"))["batches"][0]["records"][0]["timestamp"]
        last = json.loads(get(f"{records}?offset={count - 1}&max=1"))["batches"][0]["records"][0]["timestamp"]
        middle = (first + last) // 2
        size = broker.core.partition("big", 0).size_bytes
        print(f"a partition of {size / 1e9:.2f} GB, {count:,} records of {RECORD_BYTES} bytes "
              f"(written at {written.mb_per_s:.0f} MB/s):")
        report([
            ("GET records from the start (50)", median_ms(lambda: get(f"{records}?max=50&value_bytes=1024"))),
            ("GET records of the end (50)", median_ms(lambda: get(f"{records}?offset={count - 50}&max=50"))),
            ("GET records from a timestamp in the middle (50)", median_ms(lambda: get(f"{records}?timestamp={middle}"
                                                                                       "&max=50"))),
            ("GET one record in full (the middle)", median_ms(lambda: get(f"{records}/{count // 2}"))),
            ("GET /v1/topics/big", median_ms(lambda: get(f"{broker.control_url}/v1/topics/big"))),
        ] + ([] if browser is None else [
            ("the page /topics/big/0, until its first records show", browser.open_ms(
                f"{broker.control_url}/topics/big/0", "document.querySelectorAll('tr[data-offset]').length >= 50")),
        ]))


class Browser:
    """Headless Chromium driven by chromedriver (the browser tests' small WebDriver client), to time page loads."""

    def __init__(self) -> None:
        from tests.webdriver import Session, start_chromedriver

        self.log = tempfile.NamedTemporaryFile(prefix="chromedriver-", suffix=".log")
        self.process, driver_url = start_chromedriver(Path(self.log.name))
        self.session = Session(driver_url)

    def open_ms(self, url: str, ready: str, runs: int = 5) -> float:
        """Median time from asking for ``url`` until the script ``ready`` holds, over ``runs`` fresh loads."""
        times = []
        for _ in range(runs):
            self.session.get("about:blank")
            started = time.perf_counter()
            self.session.get(url)
            deadline = started + 30
            while not self.session.execute(f"return {ready};"):
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"{url}: not ready after 30 s ({ready})")
                time.sleep(0.005)
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    def close(self) -> None:
        from tests.webdriver import stop_process_group

        try:
            self.session.close()
        finally:
            stop_process_group(self.process)
            self.log.close()


class PageOpen:
    """The inspector's page on ``url`` for the duration of a ``with``: Chromium headless, else its calls polled."""

    def __init__(self, control_url: str, topic: str, browser: bool) -> None:
        self.control_url, self.topic, self.browser = control_url, topic, browser
        self.process: subprocess.Popen[bytes] | None = None
        self.profile: str | None = None
        self.stop = threading.Event()
        self.poller: threading.Thread | None = None
        self.cpu_s = 0.0  # the browser's own CPU time (its whole process group), once closed

    @property
    def kind(self) -> str:
        return "headless Chromium" if self.browser else "a poller making the page's calls"

    def __enter__(self) -> PageOpen:
        if self.browser:
            self.profile = tempfile.mkdtemp(prefix="inspector-bench-")
            self.process = subprocess.Popen(
                [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={self.profile}",
                 f"{self.control_url}/topics/{self.topic}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        else:
            self.poller = threading.Thread(target=self._poll, daemon=True)
            self.poller.start()
        return self

    def _poll(self) -> None:
        while not self.stop.wait(PAGE_POLL_S):
            for path in ("/v1/health", f"/v1/topics/{self.topic}", f"/v1/partitions/{self.topic}/0/records?max=50"
                         "&value_bytes=1024"):
                get(self.control_url + path)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.poller is not None:
            self.poller.join()
        if self.process is not None:
            self.cpu_s = cpu_seconds(self.process.pid, whole_group=True)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)


def producer_under_a_page(rounds: int, seconds: float, browser: bool) -> None:
    port, control_port = free_port(), free_port()
    data_dir = tempfile.mkdtemp(prefix="inspector-bench-data-")
    broker = subprocess.Popen(
        [sys.executable, "-m", "minibroker", "--port", str(port), "--control-port", str(control_port),
         "--data-dir", data_dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_api_versions(f"127.0.0.1:{port}", time.perf_counter(), broker)
        bootstrap, control_url = f"127.0.0.1:{port}", f"http://127.0.0.1:{control_port}"
        get(control_url + "/v1/health")
        count = int(seconds * 300_000)  # about ``seconds`` of 100-byte records at this machine's rate
        alone, watched, broker_cpu, page_cpu = [], [], {"alone": 0.0, "watched": 0.0}, 0.0
        kind = PageOpen(control_url, "watched", browser).kind
        for _ in range(rounds):
            before = cpu_seconds(broker.pid)
            alone.append(produce_all(bootstrap, "watched", count, 100).msgs_per_s)
            broker_cpu["alone"] += cpu_seconds(broker.pid) - before
            with PageOpen(control_url, "watched", browser) as page:
                time.sleep(2.0)  # the page loads and starts polling
                before = cpu_seconds(broker.pid)
                watched.append(produce_all(bootstrap, "watched", count, 100).msgs_per_s)
                broker_cpu["watched"] += cpu_seconds(broker.pid) - before
            page_cpu += page.cpu_s
        a, w = statistics.median(alone), statistics.median(watched)
        print(f"a producer (100-byte records, {count:,} a round, {rounds} alternating rounds), page: {kind}:")
        print(f"  {'alone':<52} {a:>12,.0f} msgs/s   broker CPU {broker_cpu['alone'] / rounds:.2f} s a round")
        print(f"  {'with the inspector open on its topic':<52} {w:>12,.0f} msgs/s ({(w / a - 1) * 100:+.1f} %)   "
              f"broker CPU {broker_cpu['watched'] / rounds:.2f} s a round")
        if browser:
            print(f"  the browser's own CPU: {page_cpu / rounds:.2f} s a round (on a machine of "
                  f"{os.cpu_count()} CPUs it competes with the producer and the broker)")
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000, help="partitions of the wide topic (0: skip)")
    parser.add_argument("--gigabytes", type=float, default=1.0, help="size of the big partition (0: skip)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the producer comparison (0: skip)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one producer round, roughly")
    parser.add_argument("--page", choices=("chromium", "poll"), default="chromium" if CHROMIUM.exists() else "poll",
                        help="open the page in headless Chromium (the default when installed) or make its calls")
    args = parser.parse_args()
    browser = Browser() if CHROMIUM.exists() and shutil.which("chromedriver") and (args.partitions or args.gigabytes) \
        else None
    try:
        if args.partitions:
            wide_topic(args.partitions, browser)
        if args.gigabytes:
            big_partition(args.gigabytes, browser)
    finally:
        if browser is not None:
            browser.close()
    if args.rounds:
        producer_under_a_page(args.rounds, args.seconds, args.page == "chromium")
    return 0


if __name__ == "__main__":
    sys.exit(main())
