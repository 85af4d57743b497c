"""The schema registry's cost per call over HTTP: registering a new schema, registering an equal one again, fetching
a schema by id (what a deserializer does) and a subject's latest version, medians and 99th percentiles over
``--count`` calls on one keep-alive connection, as Confluent's clients make them. The broker runs as its own process
(``serve --schema-registry-port``), as a user runs it. Run from the repository root:
``python benchmarks/schema_registry.py [--count N]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import free_port, wait_for_api_versions  # noqa: E402

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def schema(n: int) -> str:
    return json.dumps({"type": "record", "name": f"Event{n}", "namespace": "bench", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}]})


def timed(count: int, call: Callable[[int], None]) -> tuple[float, float]:
    """(median, p99) in ms of ``count`` calls."""
    times = []
    for n in range(count):
        started = time.perf_counter()
        call(n)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    port, registry_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        proc = subprocess.Popen([sys.executable, "-m", "minibroker", "serve", "--port", str(port), "--data-dir", data_dir,
                                 "--schema-registry-port", str(registry_port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            wait_for_api_versions(f"127.0.0.1:{port}", time.perf_counter(), proc)
            connection = http.client.HTTPConnection("127.0.0.1", registry_port, timeout=60)

            def call(method: str, path: str, body: object = None) -> None:
                connection.request(method, path, None if body is None else json.dumps(body),
                                   {"Content-Type": CONTENT_TYPE})
                answer = connection.getresponse()
                answer.read()
                if answer.status != 200:
                    raise RuntimeError(f"{method} {path}: {answer.status}")

            rows = [
                ("register a new schema (POST /subjects/{s}/versions)",
                 timed(args.count, lambda n: call("POST", f"/subjects/s{n}/versions", {"schema": schema(n)}))),
                ("register an equal schema again",
                 timed(args.count, lambda n: call("POST", f"/subjects/s{n}/versions", {"schema": schema(n)}))),
                ("fetch by id (GET /schemas/ids/{id})", timed(args.count, lambda n: call("GET", f"/schemas/ids/{n + 1}"))),
                ("latest version (GET /subjects/{s}/versions/latest)",
                 timed(args.count, lambda n: call("GET", f"/subjects/s{n}/versions/latest"))),
            ]
            connection.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{args.count} calls each, one keep-alive connection:")
    for name, (median, p99) in rows:
        print(f"  {name}: median {median:.3f} ms, p99 {p99:.3f} ms")


if __name__ == "__main__":
    main()
