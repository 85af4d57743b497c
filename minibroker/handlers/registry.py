"""The handler table: every API the broker implements, with the versions it serves.

Handler modules register with ``@api(key, min_version, max_version)``. ApiVersions answers from
this table, so what is advertised is exactly what is implemented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from minibroker.context import RequestContext

HandlerFn = Callable[["RequestContext", dict[str, Any]], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn


HANDLERS: dict[int, Handler] = {}


class UnreadableRequest(Exception):
    """Raised by a handler for a request Kafka's request classes refuse to build (e.g. ACL codes Kafka does not
    know): Kafka closes such a connection, and so does the dispatcher, logging the reason."""


def api(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register an async handler; it gets the request context and decoded body, and returns the response body
    (or ``None`` when no response is sent, as for Produce with acks=0)."""

    def register(fn: HandlerFn) -> HandlerFn:
        if api_key in HANDLERS:
            raise RuntimeError(f"API key {api_key} registered twice")
        HANDLERS[api_key] = Handler(api_key, min_version, max_version, fn)
        return fn

    return register
