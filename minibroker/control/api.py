"""The control API (``/v1/...``): the operations tests use to make the broker misbehave, over HTTP/JSON.

Each route calls the same broker operation a Python test calls through ``minibroker.testing.Broker`` (stop a
node, start it, add one, move a leader), so every language drives the broker the same way. Routes live in one
table; a path that matches no route is a 404, a known path with another method a 405.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from minibroker import __version__
from minibroker.server.http import API_PREFIX, Answer, HttpError, HttpRequest, start_http_server

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.cluster.clock import VirtualClock
    from minibroker.storage.snapshots import SnapshotInfo

log = logging.getLogger(__name__)

MAX_RECORDS = 1000  # records in one answer of /v1/partitions/T/P/records: pages keep a 1 GB partition cheap to look at
RouteHandler = Callable[["Broker", HttpRequest, list[str]], Awaitable[Answer]]
ROUTES: list[tuple[str, tuple[str, ...], RouteHandler]] = []


def route(method: str, path: str) -> Callable[[RouteHandler], RouteHandler]:
    """Register a handler for ``method`` and ``path``, whose ``{name}`` segments are passed in order."""

    def register(handler: RouteHandler) -> RouteHandler:
        ROUTES.append((method, tuple(segment for segment in path.split("/") if segment), handler))
        return handler

    return register


def match(segments: list[str], pattern: tuple[str, ...]) -> list[str] | None:
    if len(segments) != len(pattern):
        return None
    params = []
    for segment, expected in zip(segments, pattern):
        if expected.startswith("{"):
            params.append(segment)
        elif segment != expected:
            return None
    return params


async def dispatch(broker: Broker, request: HttpRequest) -> Answer:
    if broker.config.control_read_only and request.method != "GET" and request.path.startswith(API_PREFIX):
        raise HttpError(403, f"{request.method} {request.path}: the control listener is read-only (control.read.only)")
    allowed = []
    for method, pattern, handler in ROUTES:
        params = match(request.segments, pattern)
        if params is None:
            continue
        if method == request.method:
            return await handler(broker, request, params)
        allowed.append(method)
    if allowed:
        raise HttpError(405, f"{request.method} {request.path}: use {' or '.join(allowed)}")
    raise HttpError(404, f"no such control path: {request.path}")


def all_routes() -> list[tuple[str, tuple[str, ...], RouteHandler]]:
    """Every route: this module's, the inspector's API and its pages (they register on import)."""
    from minibroker.control import inspect_api, inspector_pages  # noqa: F401

    return ROUTES


async def start_control_server(broker: Broker) -> asyncio.base_events.Server:
    all_routes()
    config = broker.config
    return await start_http_server(
        config.control_host, config.control_port, config.control_token, lambda request: dispatch(broker, request),
    )


# ---- helpers ----


def node_id(broker: Broker, text: str) -> int:
    """The node a path names; 404 for one the broker does not have."""
    try:
        node = int(text)
    except ValueError:
        raise HttpError(404, f"no node {text!r}: nodes are numbers") from None
    if node not in broker.node_ids:
        raise HttpError(404, f"no node {node}: the nodes are {broker.node_ids}")
    return node


def field(body: dict[str, Any], name: str, kind: type, default: Any = None) -> Any:
    """A body field of the given JSON type (400 when it has another; ``default`` when absent, if given)."""
    if name not in body:
        if default is None:
            raise HttpError(400, f"the body needs {name!r}")
        return default
    value = body[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HttpError(400, f"{name!r} must be a JSON {kind.__name__}, not {json_type(value)}")
    return value


def json_type(value: Any) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null"
    )


def nodes_view(broker: Broker) -> list[dict[str, Any]]:
    return [
        {
            "id": node,
            "running": node in broker.live_nodes,
            "rack": broker.racks.get(node),
            "listeners": [
                {"name": lis.name, "address": "%s:%d" % lis.advertised, "security_protocol": lis.protocol.name}
                for lis in broker.listeners if lis.node_id == node
            ],
        }
        for node in broker.node_ids
    ]


# ---- routes ----


@route("GET", "/v1/health")
async def health(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The broker's status: version, cluster id, uptime, whether the listener is read-only, the nodes and the
    registry's URL."""
    return 200, {
        "status": "ok",
        "version": __version__,
        "cluster_id": broker.logs.cluster_id,
        "uptime_ms": int((time.monotonic() - broker.started_at) * 1000),
        "read_only": broker.config.control_read_only,
        "nodes": nodes_view(broker),
        "schema_registry_url": broker.schema_registry_url,
    }


@route("GET", "/v1/openapi.json")
async def openapi(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """This API described as an OpenAPI 3.1 document, made from the routes the broker serves."""
    from minibroker.control.openapi import openapi_document

    return 200, openapi_document(all_routes())


@route("GET", "/v1/nodes")
async def list_nodes(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Every node with its listeners (name, address advertised) and whether it runs."""
    return 200, {"nodes": nodes_view(broker)}


@route("POST", "/v1/nodes")
async def add_node(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Add a node on the next ports of each listener (201 with its id); it leads what is created from now on."""
    try:
        node = await broker.add_node()
    except OSError as exc:
        raise HttpError(409, f"the new node's listeners cannot bind: {exc}") from None
    return 201, {"id": node, "nodes": nodes_view(broker)}


@route("POST", "/v1/nodes/{id}/stop")
async def stop_node(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Stop a node: ``{"clean": false}`` is a crash, else a controlled shutdown; 409 for the last running node."""
    node = node_id(broker, params[0])
    clean = field(request.json(), "clean", bool, default=True)
    if node not in broker.live_nodes:
        raise HttpError(409, f"node {node} is not running")
    if len(broker.live_nodes) == 1:
        raise HttpError(409, "the last running node cannot be stopped")
    await broker.stop_node(node, clean)
    return 200, {"id": node, "running": False, "clean": clean}


@route("POST", "/v1/nodes/{id}/start")
async def start_node(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Start a stopped node on its ports again; the partitions it replicates that have no leader get it back."""
    node = node_id(broker, params[0])
    if node in broker.live_nodes:
        raise HttpError(409, f"node {node} is running")
    await broker.start_node(node)
    return 200, {"id": node, "running": True}


@route("POST", "/v1/nodes/{id}/listeners/{name}")
async def advertise_listener(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The address a node's listener gives clients, changed at run time (``{"advertised": "host:port"}``): a
    container's mapped port is known only after it started."""
    from minibroker.config.listeners import parse_endpoint
    from minibroker.config.settings import ConfigError

    node = node_id(broker, params[0])
    text = field(request.json(), "advertised", str)
    try:
        _, host, port = parse_endpoint(text, "advertised")
    except ConfigError:
        raise HttpError(400, f"'advertised' must be HOST:PORT, not {text!r}") from None
    if not host or not 0 < port < 65536:
        raise HttpError(400, f"'advertised' has no host or no valid port: {text!r}")
    try:
        broker.advertise(node, params[1].upper(), host, port)
    except LookupError as exc:
        raise HttpError(404, str(exc)) from None
    return 200, {"nodes": nodes_view(broker)}


@route("POST", "/v1/partitions/{topic}/{partition}/leader")
async def move_leader(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"node": N}``: the partition's leader moves to node N (one of its replicas), with a new leader epoch."""
    topic, partition_text = params
    if broker.topic(topic) is None:
        raise HttpError(404, f"no topic {topic!r}")
    try:
        partition = int(partition_text)
    except ValueError:
        raise HttpError(404, f"no partition {partition_text!r} of {topic!r}") from None
    if broker.partition(topic, partition) is None:
        raise HttpError(404, f"no partition {partition} of {topic!r}")
    node = field(request.json(), "node", int)
    if node not in broker.node_ids:
        raise HttpError(404, f"no node {node}: the nodes are {broker.node_ids}")
    try:
        epoch = broker.move_leader(topic, partition, node)
    except ValueError as exc:
        raise HttpError(409, str(exc)) from None
    return 200, {"topic": topic, "partition": partition, "leader": node, "leader_epoch": epoch}


@route("POST", "/v1/coordinators")
async def move_coordinator(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"group": "g", "node": 2}`` or ``{"transactional_id": "t", "node": 2}``: the coordinator moves there."""
    body = request.json()
    keys = {key: field(body, key, str) for key in ("group", "transactional_id") if key in body}
    if len(keys) != 1:
        raise HttpError(400, "name one group or one transactional_id")
    node = field(body, "node", int)
    if node not in broker.node_ids:
        raise HttpError(404, f"no node {node}: the nodes are {broker.node_ids}")
    try:
        topic, partition = broker.coordinator_partition(**keys)
        epoch = broker.move_coordinator(node, **keys)
    except LookupError as exc:
        raise HttpError(404, str(exc.args[0])) from None
    except ValueError as exc:
        raise HttpError(409, str(exc)) from None
    return 200, {**keys, "topic": topic, "partition": partition, "coordinator": node, "leader_epoch": epoch}


@route("POST", "/v1/faults")
async def add_fault(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Inject a fault (``{"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}``; actions error, delay,
    disconnect, stall, throttle); 201 with the fault and its id."""
    from minibroker.control.faults import FaultSpecError

    try:
        fault = broker.add_fault(request.json())
    except FaultSpecError as exc:
        raise HttpError(400, str(exc)) from None
    return 201, fault.view()


@route("GET", "/v1/faults")
async def list_faults(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Every injected fault with its hits."""
    faults = broker.faults.faults.values() if broker.faults is not None else []
    return 200, {"faults": [fault.view() for fault in faults]}


@route("DELETE", "/v1/faults")
async def clear_faults(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Clear every fault (a stalled request is released)."""
    return 200, {"cleared": broker.faults.clear() if broker.faults is not None else 0}


@route("DELETE", "/v1/faults/{id}")
async def clear_fault(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Clear one fault by id."""
    known = broker.faults.faults if broker.faults is not None else {}
    if not params[0].isdigit() or int(params[0]) not in known:
        raise HttpError(404, f"no fault {params[0]!r}")
    return 200, {"cleared": broker.faults.clear(int(params[0]))}


@route("GET", "/v1/transcript")
async def transcript(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The transcript's entries after number ``since`` (query, default 0) and the next entry's number; 409 without a
    transcript."""
    if broker.transcript is None:
        raise HttpError(409, "no transcript is kept: start the broker with transcript.enabled=true")
    since = request.query.get("since", ["0"])[0]
    if not since.isdigit():
        raise HttpError(400, f"since must be an entry number, not {since!r}")
    return 200, {"entries": broker.transcript.since(int(since)), "next": broker.transcript.next_seq}


def virtual_clock(broker: Broker) -> VirtualClock:
    from minibroker.cluster.clock import VirtualClock

    if not isinstance(broker.clock, VirtualClock):
        raise HttpError(409, "the broker runs on the system clock: start it with clock=virtual (--clock virtual)")
    return broker.clock


@route("GET", "/v1/clock")
async def get_clock(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The broker's time in ms and whether the clock is virtual."""
    from minibroker.cluster.clock import VirtualClock

    return 200, {"now_ms": broker.clock(), "virtual": isinstance(broker.clock, VirtualClock)}


@route("POST", "/v1/clock/advance")
async def advance_clock(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"ms": N}``: the virtual clock moves N ms on, running what falls due in time order; 409 on the system clock."""
    clock = virtual_clock(broker)
    ms = field(request.json(), "ms", int)
    if ms < 0:
        raise HttpError(400, "the clock does not go back: 'ms' must not be negative")
    ran = clock.advance(ms)
    return 200, {"now_ms": clock.now_ms, "actions_run": ran}


@route("POST", "/v1/clock/set")
async def set_clock(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"time": MS}``: the virtual clock jumps to that time (never back), running what falls due."""
    clock = virtual_clock(broker)
    target = field(request.json(), "time", int)
    if target < clock.now_ms:
        raise HttpError(400, f"the clock does not go back: {target} is before {clock.now_ms}")
    ran = clock.set(target)
    return 200, {"now_ms": clock.now_ms, "actions_run": ran}


@route("POST", "/v1/reset")
async def reset(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Delete every topic and forget every group, transaction, group and dynamic broker config, fault and transcript
    entry."""
    started = time.monotonic()
    deleted = await broker.reset()
    return 200, {"topics_deleted": deleted, "elapsed_ms": round((time.monotonic() - started) * 1000, 3)}


def snapshot_view(info: SnapshotInfo, started: float | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {"name": info.name, "files": info.files, "bytes": info.bytes}
    if started is not None:
        view["elapsed_ms"] = round((time.monotonic() - started) * 1000, 3)
    return view


def known_snapshot(broker: Broker, name: str) -> None:
    from minibroker.storage.snapshots import SnapshotError

    try:
        broker.snapshots.get(name)
    except SnapshotError as exc:
        raise HttpError(404, str(exc)) from None


@route("POST", "/v1/snapshots")
async def take_snapshot(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"name": "seeded"}``: save every topic, group offset and transaction under that name (201)."""
    from minibroker.storage.snapshots import SnapshotError

    started = time.monotonic()
    try:
        info = await broker.snapshot(field(request.json(), "name", str))
    except SnapshotError as exc:
        raise HttpError(400, str(exc)) from None
    return 201, snapshot_view(info, started)


@route("GET", "/v1/snapshots")
async def list_snapshots(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The snapshots kept, with their files and bytes."""
    return 200, {"snapshots": [snapshot_view(snapshot.info) for snapshot in broker.snapshots.snapshots.values()]}


@route("POST", "/v1/snapshots/{name}/restore")
async def restore_snapshot(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Put a snapshot's topics, offsets and transactions back, forgetting what came after."""
    known_snapshot(broker, params[0])
    started = time.monotonic()
    return 200, snapshot_view(await broker.restore(params[0]), started)


@route("DELETE", "/v1/snapshots/{name}")
async def delete_snapshot(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Drop a snapshot."""
    known_snapshot(broker, params[0])
    broker.snapshots.delete(params[0])
    return 200, {"deleted": params[0]}


# ---- observation: what a test asserts on, from any language (minibroker.control.observe) ----


def query_int(request: HttpRequest, name: str, default: int) -> int:
    value = request.query.get(name, [str(default)])[0]
    if not value.lstrip("-").isdigit():
        raise HttpError(400, f"{name} must be a number, not {value!r}")
    return int(value)


def observed(look: Callable[[], Any]) -> Answer:
    """An observation's answer: 404 for what does not exist, 409 for a group without a coordinator."""
    from minibroker.control.observe import NoCoordinator

    try:
        return 200, look()
    except LookupError as exc:
        raise HttpError(404, str(exc.args[0])) from None
    except NoCoordinator as exc:
        raise HttpError(409, str(exc)) from None


@route("GET", "/v1/partitions/{topic}/{partition}/records")
async def partition_records(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A partition's offsets and a page of its batches and records (query ``offset``, ``max`` up to 1000,
    ``timestamp``, ``value_bytes``)."""
    from minibroker.control.observe import partition_records

    offset, limit = query_int(request, "offset", 0), min(query_int(request, "max", 100), MAX_RECORDS)
    timestamp = query_int(request, "timestamp", -1)
    value_bytes = query_int(request, "value_bytes", -1)
    return observed(lambda: partition_records(
        broker, params[0], params[1], offset, limit, timestamp=None if timestamp < 0 else timestamp,
        value_bytes=None if value_bytes < 0 else value_bytes,
    ))


@route("GET", "/v1/groups/{group}")
async def group_view(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A group as its coordinator describes it (classic, consumer or share), with its committed offsets."""
    from minibroker.control.observe import group_view

    return observed(lambda: group_view(broker, params[0]))


@route("GET", "/v1/transactions/{id}")
async def transaction_view(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A transactional id's state, producer id and epoch, partitions and history."""
    from minibroker.control.observe import transaction_view

    return observed(lambda: transaction_view(broker, params[0]))


@route("POST", "/v1/wait")
async def wait_for(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Wait up to ``timeout_ms`` (default 10 s) for ``{"group_stable": id}`` or ``{"high_watermark": {"topic",
    "partition", "at_least"}}``: 200 once it holds, 408 when the time is up."""
    from minibroker.control.observe import wait_for

    body = request.json()
    timeout_ms = field(body, "timeout_ms", int, default=10_000)
    try:
        if "group_stable" in body:
            what = await wait_for(broker, timeout_ms, group_stable=field(body, "group_stable", str))
        elif "high_watermark" in body:
            target = field(body, "high_watermark", dict)
            mark = (field(target, "topic", str), field(target, "partition", int), field(target, "at_least", int))
            what = await wait_for(broker, timeout_ms, high_watermark=mark)
        else:
            raise HttpError(400, "wait for group_stable or high_watermark")
    except TimeoutError as exc:
        raise HttpError(408, str(exc)) from None
    except LookupError as exc:
        raise HttpError(404, str(exc.args[0])) from None
    return 200, {"waited_for": what}
