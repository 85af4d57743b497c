"""Injected faults: the misbehaviour a test asks for (control API ``/v1/faults``), which requests it matches, and
how often.

A fault matches requests by API (name or key), optionally a version range, topic, partition, node and client id,
and is limited to its next ``count`` matches and/or a seeded ``probability``. Its action: answer with an error
(per partition where the API asks a partition's leader, through the same check as a real leader change; otherwise a
schema-built error answer, per element where the response has elements), delay the answer, close the connection,
never answer until the fault is cleared, or set ``throttle_time_ms``. Every match is logged and counted.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from minibroker.control.transcript import TopicNames, named_partitions, walk
from minibroker.handlers.registry import Handler
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.messages import KAFKA_APIS, REQUESTS

log = logging.getLogger(__name__)

ACTIONS = ("error", "delay", "disconnect", "stall", "throttle")
API_KEYS = {name: key for key, (name, _) in KAFKA_APIS.items() if key in REQUESTS}


class FaultSpecError(ValueError):
    """A fault that cannot be made, or could never match: the message names the problem."""


@dataclass
class Fault:
    id: int
    api_key: int
    action: str
    error: ErrorCode = ErrorCode.NONE
    versions: tuple[int, int] = (0, 0x7FFF)
    topic: str | None = None
    partition: int | None = None
    node: int | None = None
    client_id: str | None = None
    count: int | None = None  # matches left (None: every match)
    probability: float = 1.0
    seed: int | None = None
    delay_ms: int = 0
    jitter_ms: int = 0
    throttle_ms: int = 0
    hits: int = 0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    cleared: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def matches(
        self, api_key: int, version: int, node: int, client_id: str | None, partitions: dict[str, list[int]],
    ) -> bool:
        """``partitions``: what the request names, topic -> partitions (only needed for a fault naming a topic)."""
        return (
            api_key == self.api_key
            and self.versions[0] <= version <= self.versions[1]
            and (self.node is None or node == self.node)
            and (self.client_id is None or client_id == self.client_id)
            and (self.topic is None or self.topic in partitions)
            and (self.partition is None or self.partition in partitions.get(self.topic or "", ()))
            and self.count != 0
        )

    def covers(self, topic: str, partition: int) -> bool:
        """Whether a partition of a matched request gets this fault's error."""
        return (self.topic is None or topic == self.topic) and (self.partition is None or partition == self.partition)

    def delay_s(self) -> float:
        return (self.delay_ms + (self.rng.uniform(0, self.jitter_ms) if self.jitter_ms else 0)) / 1000

    def view(self) -> dict[str, Any]:
        name = KAFKA_APIS[self.api_key][0]
        return {
            "id": self.id, "api": name, "api_key": self.api_key, "action": self.action,
            "error": self.error.name if self.action == "error" else None, "versions": list(self.versions),
            "topic": self.topic, "partition": self.partition, "node": self.node, "client_id": self.client_id,
            "count": self.count, "probability": self.probability, "seed": self.seed, "delay_ms": self.delay_ms,
            "jitter_ms": self.jitter_ms, "throttle_ms": self.throttle_ms, "hits": self.hits,
        }


class Faults:
    """The active faults of a broker, in the order they were made (the first that matches a request acts)."""

    def __init__(self) -> None:
        self.faults: dict[int, Fault] = {}
        self._next_id = 1

    def add(self, spec: dict[str, Any], nodes: list[int], apis: dict[int, Handler]) -> Fault:
        """``apis``: the broker's API table, so a fault names only APIs and versions the broker serves."""
        fault = parse_fault(spec, self._next_id, nodes, apis)
        self._next_id += 1
        self.faults[fault.id] = fault
        log.info("fault %d added: %s", fault.id, {k: v for k, v in fault.view().items() if v is not None})
        return fault

    def clear(self, fault_id: int | None = None) -> int:
        """Remove one fault (or all); stalled requests they hold are released. Returns how many were removed."""
        removed = [self.faults.pop(fault_id)] if fault_id in self.faults else []
        if fault_id is None:
            removed, self.faults = list(self.faults.values()), {}
        for fault in removed:
            fault.cleared.set()
            log.info("fault %d cleared after %d hit(s)", fault.id, fault.hits)
        return len(removed)

    def match(
        self, api_key: int, version: int, node: int, client_id: str | None, body: dict[str, Any],
        names: TopicNames | None = None,
    ) -> Fault | None:
        """The fault that acts on this request, counted; None for most requests. ``names`` names the topics a request
        gives by id, so a fault naming a topic meets Fetch v13+ and Produce v13 too."""
        partitions = None
        for fault in self.faults.values():
            if fault.topic is not None and partitions is None:
                partitions = named_partitions(walk(body, names))
            if fault.matches(api_key, version, node, client_id, partitions or {}) and fault.rng.random() < fault.probability:
                fault.hits += 1
                if fault.count is not None:
                    fault.count -= 1
                log.info("fault %d (%s %s) hits API key %d v%d from client %r on node %d", fault.id, fault.action,
                         fault.error.name if fault.action == "error" else "", api_key, version, client_id, node)
                return fault
        return None


def parse_fault(spec: dict[str, Any], fault_id: int, nodes: list[int], apis: dict[int, Handler]) -> Fault:
    unknown = set(spec) - {
        "api", "error", "count", "topic", "partition", "node", "client_id", "versions", "probability", "seed",
        "delay_ms", "jitter_ms", "throttle_ms", "action",
    }
    if unknown:
        raise FaultSpecError(f"unknown fault field(s): {', '.join(sorted(unknown))}")
    api_key = _api_key(spec.get("api"), apis)
    action = spec.get("action", "error")
    if action not in ACTIONS:
        raise FaultSpecError(f"action {action!r}: one of {', '.join(ACTIONS)}")
    fault = Fault(fault_id, api_key, action)
    if action == "error":
        fault.error = _error(spec.get("error"))
    elif "error" in spec:
        raise FaultSpecError(f"'error' belongs to action 'error', not {action!r}")
    handler = apis[api_key]
    fault.versions = _versions(spec.get("versions"), handler.min_version, handler.max_version)
    fault.topic = _optional(spec, "topic", str)
    fault.partition = _optional(spec, "partition", int)
    if fault.partition is not None and fault.topic is None:
        raise FaultSpecError("a partition needs its topic")
    fault.node = _optional(spec, "node", int)
    if fault.node is not None and fault.node not in nodes:
        raise FaultSpecError(f"no node {fault.node}: the nodes are {nodes}")
    fault.client_id = _optional(spec, "client_id", str)
    fault.count = _optional(spec, "count", int)
    if fault.count is not None and fault.count < 1:
        raise FaultSpecError("count must be at least 1 (leave it out for every match)")
    probability = spec.get("probability", 1.0)
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0 < probability <= 1:
        raise FaultSpecError("probability must be a number above 0 and at most 1")
    fault.probability = float(probability)
    fault.seed = _optional(spec, "seed", int)
    fault.rng = random.Random(fault.seed)
    for name in ("delay_ms", "jitter_ms", "throttle_ms"):
        value = _optional(spec, name, int) or 0
        if value < 0:
            raise FaultSpecError(f"{name} must not be negative")
        setattr(fault, name, value)
    if action == "delay" and not fault.delay_ms and not fault.jitter_ms:
        raise FaultSpecError("a delay needs delay_ms (and/or jitter_ms)")
    if action == "throttle" and not fault.throttle_ms:
        raise FaultSpecError("a throttle needs throttle_ms")
    return fault


def _api_key(value: Any, apis: dict[int, Handler]) -> int:
    if isinstance(value, str):
        key = API_KEYS.get(value)
        if key is None and value.isdigit():
            key = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        key = value
    else:
        raise FaultSpecError("'api' is required: an API name (\"Produce\") or key (0)")
    if key not in apis:
        served = sorted(KAFKA_APIS[served_key][0] for served_key in apis)
        raise FaultSpecError(f"unknown API {value!r}: this broker serves {', '.join(served)}")
    return key


def _error(value: Any) -> ErrorCode:
    try:
        if isinstance(value, str) and not value.lstrip("-").isdigit():
            return ErrorCode[value]
        return ErrorCode(int(value))
    except (KeyError, ValueError, TypeError):
        raise FaultSpecError(f"'error' {value!r}: a Kafka error name (NOT_LEADER_OR_FOLLOWER) or code") from None


def _versions(value: Any, low: int, high: int) -> tuple[int, int]:
    if value is None:
        return low, high
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise FaultSpecError("'versions' is a version or [lowest, highest]")
    first, last = max(value[0], low), min(value[1], high)
    if first > last:
        raise FaultSpecError(f"versions {value} never match: this broker serves versions {low}-{high} of the API")
    return first, last


def _optional(spec: dict[str, Any], name: str, kind: type) -> Any:
    value = spec.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise FaultSpecError(f"{name!r} must be a JSON {'string' if kind is str else 'number'}")
    return value
