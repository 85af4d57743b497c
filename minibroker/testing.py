"""In-process brokers for test suites: ``with Broker() as b:`` or ``async with Broker() as b:``.

The synchronous form runs the asyncio broker on its own event loop in a background thread, so blocking
clients (confluent-kafka, kafka-python) can use it from plain test code; the asynchronous form runs it
on the caller's loop, next to aiokafka. Either way the broker binds an ephemeral port and, unless a
``data_dir`` is given, a temporary directory that is removed on exit. Settings are Kafka's names, either
with underscores as keyword arguments (``Broker(num_partitions=3)``) or as a mapping
(``Broker({"num.partitions": 3})``). The environment (``MINIBROKER_*``) is ignored, so tests are hermetic.

Imports of the broker itself are deferred to ``start``, so importing this module costs next to nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from minibroker.broker import Broker as BrokerCore
    from minibroker.cluster.clock import VirtualClock
    from minibroker.config.settings import BrokerConfig
    from minibroker.control.transcript import Transcript

T = TypeVar("T")

__all__ = ["Broker"]

STOP_TIMEOUT_S = 30.0


class Broker:
    """A minibroker for one test, one module or one session; see the module docstring for the two modes."""

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        /,
        *,
        data_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        control: bool = False,
        schema_registry: bool = False,
        transcript: bool = False,
        **kwargs: Any,
    ) -> None:
        self._settings = kafka_settings(settings or {}, kwargs)
        if control:  # a control listener on a free loopback port, kept across restarts
            self._settings.setdefault("control.port", "0")
        if schema_registry:  # a schema registry on a free loopback port, kept across restarts
            self._settings.setdefault("schema.registry.port", "0")
        if transcript:
            self._settings.setdefault("transcript.enabled", "true")
        log_dirs = self._settings.pop("log.dirs", None)
        listeners = self._settings.pop("listeners", None)
        if listeners is not None:
            from minibroker.config.settings import parse_listener

            host, port = parse_listener(listeners)
        data_dir = data_dir if data_dir is not None else log_dirs
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self._temp_dir: Path | None = None
        self._host = host
        self._port = port  # 0 until the first start, then the bound port, so restarts keep the address
        self._core: BrokerCore | None = None
        self._config: BrokerConfig | None = None
        self._mode: str | None = None  # "thread" or "async" while running
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stopped: concurrent.futures.Future[None] | None = None

    # ---- what tests use ----

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` as clients should be given it (the advertised address)."""
        core = self._running_core()
        return f"{core.advertised_host}:{core.advertised_port}"

    @property
    def control_url(self) -> str:
        """``http://host:port`` of the control listener (``Broker(control=True)``)."""
        address = self._running_core().control_address
        if address is None:
            raise RuntimeError("no control listener: use Broker(control=True) or the setting control.port")
        return "http://%s:%d" % address

    def start_schema_registry(self) -> str:
        """Serve a schema registry from the running broker (if it does not yet) and return its URL; it stays on
        across restarts, on the same port."""
        core = self._running_core()
        self._on_loop(core.start_schema_registry(0))
        assert core.schema_registry is not None and core.schema_registry.address is not None
        self._settings["schema.registry.port"] = str(core.schema_registry.address[1])
        return self.schema_registry_url

    @property
    def schema_registry_url(self) -> str:
        """``http://host:port`` of the schema registry (``Broker(schema_registry=True)``), for Confluent's clients."""
        url = self._running_core().schema_registry_url
        if url is None:
            raise RuntimeError("no schema registry: use Broker(schema_registry=True) or the setting schema.registry.port")
        return url

    @property
    def node_addresses(self) -> dict[int, str]:
        """Every node's ``host:port`` (first listener, advertised) by node id; join them for a bootstrap list that
        outlives any one node (``nodes=N``)."""
        addresses: dict[int, str] = {}
        for listener in self._running_core().listeners:
            addresses.setdefault(listener.node_id, "%s:%d" % listener.advertised)
        return addresses

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port)."""
        core = self._running_core()
        return core.host, core.port

    @property
    def data_dir(self) -> Path:
        return Path(self._running_config().data_dir)

    @property
    def config(self) -> BrokerConfig:
        return self._running_config()

    @property
    def core(self) -> BrokerCore:
        """The underlying ``minibroker.broker.Broker`` (only touch it from the broker's own loop)."""
        return self._running_core()

    @property
    def running(self) -> bool:
        return self._mode is not None

    # ---- synchronous mode: a thread with its own loop ----

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Broker:
        """Start in a background thread; returns once the broker accepts connections."""
        config = self._prepare()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stopped = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._thread_main, args=(config, ready), name="minibroker", daemon=True)
        self._mode = "thread"
        self._thread.start()
        try:
            ready.result()
        except BaseException:
            self._thread.join()
            self._forget()
            self._remove_temp_dir()
            raise
        return self

    def stop(self) -> None:
        """Stop (flushing every log) and remove the temporary data directory, if one was made."""
        try:
            if self._mode == "thread":
                self._stop_thread()
            elif self._mode == "async":
                raise RuntimeError("this Broker runs on an asyncio loop: use `await broker.astop()`")
        finally:
            if self._mode is None:
                self._remove_temp_dir()

    def restart(self) -> Broker:
        """Stop and start again on the same port and data, so clients can reconnect to the same address."""
        if self._mode != "thread":
            raise RuntimeError("restart() needs a running `with Broker()`; use `await broker.arestart()` in async code")
        self._stop_thread()
        return self.start()

    # ---- nodes of a cluster (nodes=N): the operations minibroker.broker.Broker offers, from the test ----

    def stop_node(self, node_id: int, clean: bool = True) -> None:
        """Stop one node (``clean=False``: a crash): its listeners close, its leaders move to live replicas."""
        self._on_loop(self._running_core().stop_node(node_id, clean))

    def start_node(self, node_id: int) -> None:
        self._on_loop(self._running_core().start_node(node_id))

    def add_node(self) -> int:
        """Add a node to the cluster (on the next ports); returns its id. New topics may be placed on it."""
        return self._on_loop(self._running_core().add_node())

    def advertise(self, node_id: int, listener: str, address: str) -> None:
        """Give clients ``address`` (``host:port``) for the node's listener from now on (as behind a port mapping);
        ``ValueError`` for an address that is not one."""
        from minibroker.config.listeners import parse_endpoint

        _, host, port = parse_endpoint(address, "advertised")
        self._on_loop(self._call(self._running_core().advertise, node_id, listener.upper(), host, port))

    def move_leader(self, topic: str, partition: int, node_id: int) -> int:
        """Make ``node_id`` the partition's leader; returns its new leader epoch."""
        return self._on_loop(self._call(self._running_core().move_leader, topic, partition, node_id))

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Mapping[str, Any] | None = None) -> None:
        """Create a topic as CreateTopics would (``config``: its settings, e.g. ``{"cleanup.policy": "compact"}``);
        ``ValueError`` naming Kafka's error when the broker refuses it."""
        self._on_loop(self.acreate_topic(name, partitions, replication_factor, config))

    async def acreate_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                            config: Mapping[str, Any] | None = None) -> None:
        overrides = {key: _as_text(value) for key, value in (config or {}).items()}
        error, message = await self._running_core().create_topic(name, partitions, overrides,
                                                                  replication_factor=replication_factor)
        if error:
            raise ValueError(f"topic {name!r}: {error.name}: {message}")

    def move_coordinator(self, node_id: int, *, group: str | None = None, transactional_id: str | None = None) -> int:
        """Move the coordinator of ``group`` or ``transactional_id`` to ``node_id`` (its internal partition's leader
        moves); returns the new leader epoch."""
        return self._on_loop(self._call(lambda: self._running_core().move_coordinator(
            node_id, group=group, transactional_id=transactional_id)))

    def records(self, topic: str, partition: int, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A partition's offsets and batches with their records (GET /v1/partitions/T/P/records)."""
        from minibroker.control.observe import partition_records

        return self._on_loop(self._call(partition_records, self._running_core(), topic, partition, offset, limit))

    def group(self, group_id: str) -> dict[str, Any]:
        """A group as its coordinator describes it, with its committed offsets (GET /v1/groups/G)."""
        from minibroker.control.observe import group_view

        return self._on_loop(self._call(group_view, self._running_core(), group_id))

    def transaction(self, transactional_id: str) -> dict[str, Any]:
        """A transactional id's state, producer and partitions (GET /v1/transactions/ID)."""
        from minibroker.control.observe import transaction_view

        return self._on_loop(self._call(transaction_view, self._running_core(), transactional_id))

    def wait_for(self, *, group_stable: str | None = None, high_watermark: tuple[str, int, int] | None = None,
                 timeout_ms: int = 10_000) -> str:
        """Wait for a group to be Stable or a high watermark to reach a number (POST /v1/wait); TimeoutError."""
        from minibroker.control.observe import wait_for

        return self._on_loop(wait_for(self._running_core(), timeout_ms, group_stable=group_stable,
                                      high_watermark=high_watermark))

    def reset(self) -> int:
        """Forget every topic, group and transaction (and faults, transcript): a fresh broker for the next test, in
        milliseconds. Returns how many topics were deleted."""
        return self._on_loop(self._running_core().reset())

    async def areset(self) -> int:
        return await self._running_core().reset()

    def snapshot(self, name: str) -> dict[str, Any]:
        """Save every topic, group and transaction as ``name`` (POST /v1/snapshots); ``restore(name)`` brings them
        back. Snapshots last while the broker runs."""
        return self._on_loop(self.asnapshot(name))

    def restore(self, name: str) -> dict[str, Any]:
        """Put the broker back to snapshot ``name`` (POST /v1/snapshots/NAME/restore): what was made since is gone."""
        return self._on_loop(self.arestore(name))

    async def asnapshot(self, name: str) -> dict[str, Any]:
        return asdict(await self._running_core().snapshot(name))

    async def arestore(self, name: str) -> dict[str, Any]:
        return asdict(await self._running_core().restore(name))

    def advance(self, ms: int) -> int:
        """Move the virtual clock (``Broker(clock="virtual")``) forward, running the timeouts that fall due; returns
        the new time."""
        return self._on_loop(self.aadvance(ms))

    def set_time(self, time_ms: int) -> int:
        """Move the virtual clock to ``time_ms`` (not backwards)."""
        return self._on_loop(self.aset_time(time_ms))

    async def aadvance(self, ms: int) -> int:
        clock = self._virtual_clock()
        clock.advance(ms)
        return clock.now_ms

    async def aset_time(self, time_ms: int) -> int:
        clock = self._virtual_clock()
        clock.set(time_ms)
        return clock.now_ms

    def _virtual_clock(self) -> VirtualClock:
        from minibroker.cluster.clock import VirtualClock

        clock = self._running_core().clock
        if not isinstance(clock, VirtualClock):
            raise RuntimeError('the broker runs on the system clock: use Broker(clock="virtual")')
        return clock

    def add_fault(self, api: str | int | None = None, **spec: Any) -> dict[str, Any]:
        """Inject a fault, as POST /v1/faults (``add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", count=3)``);
        returns its description with its ``id``."""
        return self._on_loop(self._call(lambda: self._running_core().add_fault({"api": api, **spec}).view()))

    def faults(self) -> list[dict[str, Any]]:
        """The injected faults with their hit counts."""
        return self._on_loop(self._call(self._fault_views))

    def clear_faults(self, fault_id: int | None = None) -> int:
        """Remove one fault or every fault (stalled requests are answered); returns how many were removed."""
        return self._on_loop(self._call(self._clear_faults, fault_id))

    async def aadd_fault(self, api: str | int | None = None, **spec: Any) -> dict[str, Any]:
        return self._running_core().add_fault({"api": api, **spec}).view()

    async def afaults(self) -> list[dict[str, Any]]:
        return self._fault_views()

    async def aclear_faults(self, fault_id: int | None = None) -> int:
        return self._clear_faults(fault_id)

    def transcript(self, since: int = 0) -> list[dict[str, Any]]:
        """The transcript's entries after entry ``since`` (``Broker(transcript=True)``)."""
        return self._on_loop(self._call(lambda: self._transcript().since(since)))

    def transcript_position(self) -> int:
        """The number of the newest transcript entry (0: none yet), for ``transcript(since=...)`` later."""
        return self._on_loop(self._call(lambda: self._transcript().next_seq - 1))

    async def atranscript(self, since: int = 0) -> list[dict[str, Any]]:
        return self._transcript().since(since)

    def _transcript(self) -> Transcript:
        transcript = self._running_core().transcript
        if transcript is None:
            raise RuntimeError("no transcript is kept: use Broker(transcript=True) or the setting transcript.enabled")
        return transcript

    def _fault_views(self) -> list[dict[str, Any]]:
        faults = self._running_core().faults
        return [] if faults is None else [fault.view() for fault in faults.faults.values()]

    def _clear_faults(self, fault_id: int | None) -> int:
        faults = self._running_core().faults
        return 0 if faults is None else faults.clear(fault_id)

    async def astop_node(self, node_id: int, clean: bool = True) -> None:
        await self._running_core().stop_node(node_id, clean)

    async def astart_node(self, node_id: int) -> None:
        await self._running_core().start_node(node_id)

    async def aadd_node(self) -> int:
        return await self._running_core().add_node()

    def _on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the broker's loop (its own thread) and wait for its result."""
        if self._mode != "thread" or self._loop is None:
            coroutine.close()
            raise RuntimeError("this needs a running `with Broker()`; in async code use the a-prefixed methods")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    @staticmethod
    async def _call(function: Callable[..., T], *args: Any) -> T:
        return function(*args)

    def _thread_main(self, config: BrokerConfig, ready: concurrent.futures.Future[None]) -> None:
        try:
            asyncio.run(self._serve_until_stopped(config, ready))
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif self._stopped is not None and not self._stopped.done():
                self._stopped.set_exception(exc)
        else:
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)

    async def _serve_until_stopped(self, config: BrokerConfig, ready: concurrent.futures.Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        core = await self._start_core(config)
        ready.set_result(None)
        await self._stop_requested.wait()
        await core.stop()

    def _stop_thread(self) -> None:
        assert self._loop is not None and self._stop_requested is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop_requested.set)
        self._thread.join(STOP_TIMEOUT_S)
        stopped = self._stopped
        self._forget()
        if stopped is not None:
            stopped.result(timeout=0)

    # ---- asynchronous mode: the caller's loop ----

    async def __aenter__(self) -> Broker:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()

    async def astart(self) -> Broker:
        """Start on the running loop; returns once the broker accepts connections."""
        config = self._prepare()
        self._mode = "async"
        try:
            await self._start_core(config)
        except BaseException:
            self._forget()
            self._remove_temp_dir()
            raise
        return self

    async def astop(self) -> None:
        try:
            if self._mode == "async":
                core = self._core
                self._forget()
                assert core is not None
                await core.stop()
            elif self._mode == "thread":
                raise RuntimeError("this Broker runs in its own thread: use `broker.stop()`")
        finally:
            if self._mode is None:
                self._remove_temp_dir()

    async def arestart(self) -> Broker:
        """The async form of ``restart``: same port, same data."""
        if self._mode != "async":
            raise RuntimeError("arestart() needs a running `async with Broker()`; use `broker.restart()` otherwise")
        core = self._core
        self._forget()
        assert core is not None
        await core.stop()
        return await self.astart()

    # ---- shared ----

    def _prepare(self) -> BrokerConfig:
        """The configuration of the next start: same port and data directory as the previous run."""
        if self._mode is not None:
            raise RuntimeError("this Broker is already running")
        from minibroker.config.settings import build_config

        data_dir = self._given_data_dir
        if data_dir is None:
            if self._temp_dir is None:
                self._temp_dir = Path(tempfile.mkdtemp(prefix="minibroker-"))
            data_dir = self._temp_dir
        base = {"listeners": f"PLAINTEXT://{self._host}:{self._port}", "log.dirs": str(data_dir)}
        return build_config(base, self._settings)

    async def _start_core(self, config: BrokerConfig) -> BrokerCore:
        from minibroker.broker import Broker as BrokerCore

        core = BrokerCore(config)
        await core.start()
        self._core, self._config = core, config
        self._port = core.port
        if core.control_address is not None:
            self._settings["control.port"] = str(core.control_address[1])
        if core.schema_registry is not None and core.schema_registry.address is not None:
            self._settings["schema.registry.port"] = str(core.schema_registry.address[1])
        return core

    def _forget(self) -> None:
        self._mode = None
        self._core = None
        self._thread = None
        self._loop = None
        self._stop_requested = None
        self._stopped = None

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def _running_core(self) -> BrokerCore:
        if self._core is None:
            raise RuntimeError("the broker is not running: use `with Broker() as b` or `async with Broker() as b`")
        return self._core

    def _running_config(self) -> BrokerConfig:
        self._running_core()
        assert self._config is not None
        return self._config

    def __repr__(self) -> str:
        state = f"{self.bootstrap_servers} ({self._mode})" if self._core is not None else "stopped"
        return f"<minibroker.testing.Broker {state}>"


def kafka_settings(settings: Mapping[str, Any], kwargs: Mapping[str, Any]) -> dict[str, str]:
    """Settings as Kafka-named strings: ``num_partitions=3`` and ``{"num.partitions": 3}`` both become
    ``{"num.partitions": "3"}`` (a keyword's underscores are the dots of a Kafka name). Names are checked by
    ``build_config``."""
    out = {name: _as_text(value) for name, value in settings.items()}
    out.update((name.replace("_", "."), _as_text(value)) for name, value in kwargs.items())
    return out


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
