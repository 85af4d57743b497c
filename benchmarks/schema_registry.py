"""The schema registry's cost per call over HTTP, for each schema type (AVRO, JSON, PROTOBUF): registering a new
schema, registering an equal one again, fetching a schema by id (what a deserializer does) and a subject's latest
version, medians and 99th percentiles over ``--count`` calls on one keep-alive connection, as Confluent's clients make
them. The first registration of each type is timed apart: it loads that type's modules (JSON's loads jsonschema), a
cost paid once per process. The broker runs as its own process (``serve --schema-registry-port``), as a user runs it.
Run from the repository root: ``python benchmarks/schema_registry.py [--count N] [--types AVRO,JSON,PROTOBUF]``.
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


def avro(n: int) -> str:
    return json.dumps({"type": "record", "name": f"Event{n}", "namespace": "bench", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}]})


def json_schema(n: int) -> str:
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": f"Event{n}", "type": "object",
                       "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                      "tags": {"type": "array", "items": {"type": "string"}}},
                       "required": ["id"]})


def protobuf(n: int) -> str:
    return (f'syntax = "proto3";\npackage bench;\n\nmessage Event{n} {{\n  int64 id = 1;\n  string name = 2;\n'
            '  repeated string tags = 3;\n}\n')


SCHEMAS: dict[str, Callable[[int], str]] = {"AVRO": avro, "JSON": json_schema, "PROTOBUF": protobuf}


def timed(count: int, call: Callable[[int], None]) -> tuple[float, float]:
    """(median, p99) in ms of ``count`` calls."""
    times = []
    for n in range(count):
        started = time.perf_counter()
        call(n)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def once(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--types", default=",".join(SCHEMAS), help="the schema types, comma-separated")
    args = parser.parse_args()
    types = [name.strip().upper() for name in args.types.split(",")]
    port, registry_port = free_port(), free_port()
    rows: list[tuple[str, tuple[float, float] | float]] = []
    with tempfile.TemporaryDirectory() as data_dir:
        proc = subprocess.Popen([sys.executable, "-m", "minibroker", "serve", "--port", str(port),
                                 "--data-dir", data_dir, "--schema-registry-port", str(registry_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_api_versions(f"127.0.0.1:{port}", time.perf_counter(), proc)
            connection = http.client.HTTPConnection("127.0.0.1", registry_port, timeout=60)

            def call(method: str, path: str, body: object = None) -> object:
                connection.request(method, path, None if body is None else json.dumps(body),
                                   {"Content-Type": CONTENT_TYPE})
                answer = connection.getresponse()
                data = answer.read()
                if answer.status != 200:
                    raise RuntimeError(f"{method} {path}: {answer.status} {data[:200]!r}")
                return json.loads(data)

            call("PUT", "/config", {"compatibility": "BACKWARD"})  # creates _schemas: not part of any figure
            for schema_type in types:
                text = SCHEMAS[schema_type]

                def register(n: int) -> int:
                    body = {"schema": text(n), "schemaType": schema_type}
                    answer = call("POST", f"/subjects/{schema_type}-{n}/versions", body)
                    assert isinstance(answer, dict)
                    return int(answer["id"])

                first = once(lambda: register(args.count))
                rows.append((f"{schema_type} first registration (loads the type's modules)", first))
                ids: dict[int, int] = {}
                rows += [
                    (f"{schema_type} register a new schema (POST /subjects/{{s}}/versions)",
                     timed(args.count, lambda n: ids.__setitem__(n, register(n)))),
                    (f"{schema_type} register an equal schema again", timed(args.count, register)),
                    (f"{schema_type} fetch by id (GET /schemas/ids/{{id}})",
                     timed(args.count, lambda n: call("GET", f"/schemas/ids/{ids[n]}"))),
                    (f"{schema_type} latest version (GET /subjects/{{s}}/versions/latest)",
                     timed(args.count, lambda n: call("GET", f"/subjects/{schema_type}-{n}/versions/latest"))),
                ]
            connection.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{args.count} calls each, one keep-alive connection:")
    for name, figures in rows:
        if isinstance(figures, float):
            print(f"  {name}: {figures:.3f} ms")
        else:
            print(f"  {name}: median {figures[0]:.3f} ms, p99 {figures[1]:.3f} ms")


if __name__ == "__main__":
    main()
