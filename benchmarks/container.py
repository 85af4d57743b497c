"""The container image: its size, and how long a container takes from `podman run` to the first ApiVersions answer
through its published port, beside the same broker started on the host (the installation running this script).

Beside each, its floor, a bare asyncio process that answers only ApiVersions (benchmarks/startup.py's): on the host,
and in a container of the image (`--entrypoint python`), which is what the engine itself costs (namespaces, the
network, the port forwarding, its own start). Samples alternate, so all four see the same machine. The container is
started as the docs start it (`run --rm -p HOST:9092`, the image's default command) and removed after each sample.

    python benchmarks/container.py [--runs N] [--image NAME]

Without --image it builds docker/Dockerfile as the tests do (tests/containerutil.py: podman with ulimits this machine
allows, the Dockerfile's base image or its Debian stand-in).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))

from benchmarks.common import free_port, wait_for_api_versions  # noqa: E402
from benchmarks.startup import ASYNCIO_FLOOR_CODE, asyncio_floor_once, fresh_process_once  # noqa: E402
from tests.containerutil import DOCKERFILE, Engine, find_engine  # noqa: E402


def container_once(engine: Engine, image: str, *command: str, entrypoint: str | None = None) -> float:
    """`podman run -d --rm -p 127.0.0.1:PORT:9092 IMAGE [COMMAND]` to the first ApiVersions answer on PORT."""
    port = free_port()
    args = [engine.executable, "run", "-d", "--rm", "-p", f"127.0.0.1:{port}:9092"]
    args += ["--entrypoint", entrypoint] if entrypoint else []
    started = time.perf_counter()
    container = subprocess.run([*args, image, *command], env=engine.env, capture_output=True, text=True, check=True)
    try:
        return wait_for_api_versions(f"127.0.0.1:{port}", started)
    finally:
        engine.run("rm", "--force", "--time", "0", container.stdout.strip().splitlines()[-1])


def report(name: str, samples: list[float]) -> float:
    ms = sorted(sample * 1000 for sample in samples)
    print(f"{name:<58} median {statistics.median(ms):7.1f} ms  min {ms[0]:7.1f}  max {ms[-1]:7.1f}  (n={len(ms)})")
    return statistics.median(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description="Image size and container start-up to the first ApiVersions answer.")
    parser.add_argument("--runs", type=int, default=10, help="samples per figure (default 10)")
    parser.add_argument("--image", help="an image already built (default: build docker/Dockerfile)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        try:
            engine = find_engine(Path(workdir))
        except BaseException as exc:  # pytest's skip outside pytest: say why and stop
            sys.exit(f"no container engine: {exc}")
        try:
            measure(engine, args.image, args.runs)
        finally:
            engine.cleanup()


def measure(engine: Engine, image: str | None, runs: int) -> None:
    if image is None:
        image = engine.image_name()
        engine.build(DOCKERFILE, image, engine.base_image())
    size_mb = int(engine.run("image", "inspect", "--format", "{{.Size}}", image).stdout) / 1e6
    print(f"{'image ' + image:<58} {size_mb:7.1f} MB")
    host_env = {**os.environ, "MINIBROKER_LOG_LEVEL": "WARNING"}
    floor_code = ASYNCIO_FLOOR_CODE.replace('"127.0.0.1"', '"0.0.0.0"')
    container_once(engine, image)  # the first run of an image pays for its layers' set-up once
    host_floor, host, container_floor, container = [], [], [], []
    for _ in range(runs):
        host_floor.append(asyncio_floor_once(host_env))
        host.append(fresh_process_once(host_env, 1))
        container_floor.append(container_once(engine, image, "-c", floor_code, "9092", entrypoint="python"))
        container.append(container_once(engine, image))
    floor_ms = report("host: bare asyncio process -> first ApiVersions", host_floor)
    host_ms = report("host: fresh `minibroker` -> first ApiVersions", host)
    engine_ms = report("container: bare asyncio process -> first ApiVersions", container_floor)
    image_ms = report("container: `run -p ... image` -> first ApiVersions", container)
    print(f"{'the container adds to the host process':<58} {image_ms - host_ms:7.1f} ms "
          f"(the engine alone adds {engine_ms - floor_ms:.1f} ms to the floor)")

if __name__ == "__main__":
    main()
