"""Start-up figures: a fresh ``minibroker`` process and the in-process ``minibroker.testing.Broker``, each timed
until its first ApiVersions answer.

The fresh process is the ``minibroker`` command that ``pip install`` puts beside the interpreter (what users start;
``python -m minibroker`` is timed beside it: runpy adds its imports). It gets a free port chosen up front and is probed every 5 ms (a refused connection is retried),
so the figure is what a harness waiting for the port sees: interpreter start, imports, opening the data
directory, binding. It is measured twice: with a bytecode cache (as an installed package, whose .pyc files
pip writes, or a normal checkout has) and without one (PYTHONDONTWRITEBYTECODE=1 and no cache: every module
is compiled on each start). Beside it, in the same run and alternating with it, the floor of any Python broker: a
bare asyncio process that answers only ApiVersions (interpreter, asyncio, one listening socket); the ratio of the
two medians is the start-up figure the README gives (issue 28). ``--nodes N`` times a cluster in one process (node k on the port + k - 1) instead of
one broker. Run with the interpreter of the installation to measure (a regular ``pip install .`` into a fresh venv
is what users start; an editable install adds its import hook to every process, the floor's too):
``python benchmarks/startup.py [--runs N] [--nodes N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # after site-packages: a regular install of minibroker is the one measured
NEUTRAL_CWD = tempfile.gettempdir()  # not the checkout, whose minibroker/ would shadow an installed one

from benchmarks.common import free_port, wait_for_api_versions  # noqa: E402


# The installation's ``minibroker`` command (a pip console script beside the interpreter), else ``python -m``.
_SCRIPT = Path(sys.executable).with_name("minibroker")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "minibroker"]
MODULE = [sys.executable, "-m", "minibroker"]


def fresh_process_once(env: dict[str, str], nodes: int, launcher: list[str] = COMMAND) -> float:
    port = free_port(nodes)
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryFile("w+") as output:
        args = [*launcher, "serve", "--port", str(port), "--data-dir", data_dir, "--nodes", str(nodes)]
        started = time.perf_counter()
        proc = subprocess.Popen(args, cwd=NEUTRAL_CWD, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            return wait_for_api_versions(f"127.0.0.1:{port}", started, proc)
        except RuntimeError as exc:
            output.seek(0)
            raise RuntimeError(f"{exc}:\n{output.read()[-2000:]}") from None
        finally:
            proc.terminate()
            proc.wait(10)


# The floor: asyncio.start_server answering every frame with a fixed ApiVersions v3 body (error 0, one API key: 18 v0-4).
ASYNCIO_FLOOR_CODE = """
import asyncio, struct, sys

BODY = struct.pack(">hBhhhBiB", 0, 2, 18, 0, 4, 0, 0, 0)

async def answer(reader, writer):
    try:
        while True:
            frame = await reader.readexactly(int.from_bytes(await reader.readexactly(4), "big"))
            writer.write((len(BODY) + 4).to_bytes(4, "big") + frame[4:8] + BODY)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(answer, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()

asyncio.run(main())
"""


def asyncio_floor_once(env: dict[str, str]) -> float:
    """Exec to first ApiVersions answer of the floor process, probed as the broker is."""
    port = free_port(1)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", ASYNCIO_FLOOR_CODE, str(port)], env=env)
    try:
        return wait_for_api_versions(f"127.0.0.1:{port}", started, proc)
    finally:
        proc.terminate()
        proc.wait(10)


def import_time(env: dict[str, str]) -> float:
    """Seconds a fresh interpreter spends importing the broker and the CLI (without starting anything)."""
    code = "import time; t = time.perf_counter(); import minibroker.broker, minibroker.commands.cli; print(time.perf_counter() - t)"
    result = subprocess.run([sys.executable, "-c", code], cwd=NEUTRAL_CWD, env=env, check=True, capture_output=True, text=True)
    return float(result.stdout)


def interpreter_floor(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - started


FIRST_BROKER_CODE = """
import asyncio, time
from minibroker.commands.probe import probe
started = time.perf_counter()
from minibroker.testing import Broker
with Broker(nodes={nodes}) as broker:
    probe(broker.bootstrap_servers)
    print(time.perf_counter() - started)
"""


def first_in_process_broker(env: dict[str, str], nodes: int) -> float:
    """The first ``with Broker()`` of a process that already has asyncio (as a test session does): imports included."""
    args = [sys.executable, "-c", FIRST_BROKER_CODE.format(nodes=nodes)]
    return float(subprocess.run(args, cwd=NEUTRAL_CWD, env=env, check=True, capture_output=True, text=True).stdout)


def in_process_sync_once(nodes: int) -> float:
    from minibroker.testing import Broker

    started = time.perf_counter()
    with Broker(nodes=nodes) as broker:
        return wait_for_api_versions(broker.bootstrap_servers, started)


async def in_process_async_once(nodes: int) -> float:
    """``async with Broker()`` and one ApiVersions round trip on the same loop."""
    from minibroker.protocol.frames import decode_response, encode_request

    from minibroker.commands.probe import API_VERSIONS_KEY, PROBE_API_VERSION
    from minibroker.testing import Broker

    body = {"client_software_name": "startup-benchmark", "client_software_version": "1"}
    started = time.perf_counter()
    async with Broker(nodes=nodes) as broker:
        reader, writer = await asyncio.open_connection(*broker.address)
        try:
            writer.write(encode_request(API_VERSIONS_KEY, PROBE_API_VERSION, 1, "startup-benchmark", body))
            size = int.from_bytes(await reader.readexactly(4), "big")
            decode_response(API_VERSIONS_KEY, PROBE_API_VERSION, await reader.readexactly(size))
            return time.perf_counter() - started
        finally:
            writer.close()
            await writer.wait_closed()


def report(name: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    print(f"{name:<56} median {statistics.median(ms):7.1f} ms  min {ms[0]:7.1f}  max {ms[-1]:7.1f}  (n={len(ms)})")


def main() -> None:
    parser = argparse.ArgumentParser(description="Time minibroker start-up to the first ApiVersions answer.")
    parser.add_argument("--runs", type=int, default=10, help="samples per figure (default 10)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes of the broker (default 1)")
    args = parser.parse_args()
    runs, nodes = args.runs, args.nodes
    base = {**os.environ, "MINIBROKER_LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryDirectory() as cache:
        cached = {**base, "PYTHONPYCACHEPREFIX": cache}
        cached.pop("PYTHONDONTWRITEBYTECODE", None)
        uncached = {**base, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(dir=cache)}
        fresh_process_once(cached, nodes)  # fills the bytecode cache
        report("python -c pass (interpreter floor)", [interpreter_floor(cached) for _ in range(runs)])
        report("import broker + CLI, bytecode cache", [import_time(cached) for _ in range(runs)])
        floor, broker, module = [], [], []
        for _ in range(runs):  # alternating, so all see the same machine
            floor.append(asyncio_floor_once(cached))
            broker.append(fresh_process_once(cached, nodes))
            module.append(fresh_process_once(cached, nodes, MODULE))
        report("bare asyncio process -> first ApiVersions (floor)", floor)
        report(f"fresh `{Path(COMMAND[-1]).name}` -> first ApiVersions, bytecode cache", broker)
        print(f"{'fresh process / asyncio floor':<56} {statistics.median(broker) / statistics.median(floor):.2f}x")
        report("fresh `python -m minibroker` -> first ApiVersions", module)
        print(f"{'python -m / asyncio floor':<56} {statistics.median(module) / statistics.median(floor):.2f}x")
        report("import broker + CLI, no bytecode cache", [import_time(uncached) for _ in range(runs)])
        report("fresh process -> first ApiVersions, no bytecode cache", [fresh_process_once(uncached, nodes) for _ in range(runs)])
        report("first in-process Broker incl. imports, bytecode cache", [first_in_process_broker(cached, nodes) for _ in range(runs)])
    in_process_sync_once(nodes)  # the one-off imports, so the figures below are what each further broker costs
    report("in-process `with Broker()` -> first ApiVersions", [in_process_sync_once(nodes) for _ in range(runs)])
    async_samples = [asyncio.run(in_process_async_once(nodes)) for _ in range(runs)]
    report("in-process `async with Broker()` -> first ApiVersions", async_samples)


if __name__ == "__main__":
    main()
