"""The handler table's entries and the ``@api`` decorator handler modules register with.

The table itself (``minibroker.handlers.HANDLERS``) names each API's versions and module without importing it:
a handler module is imported on the first request of one of its APIs, so a broker starts with only what it serves.
ApiVersions answers from the table, and a test checks it against what each module registers with ``@api``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from minibroker.server.context import RequestContext

HandlerFn = Callable[["RequestContext", dict[str, Any]], Awaitable[dict[str, Any] | None]]

FUNCTIONS: dict[int, HandlerFn] = {}
"""The handlers of the modules imported so far, by API key."""
REGISTERED: dict[int, tuple[int, int, str]] = {}
"""What each imported module registered: API key -> (min version, max version, module)."""
REGISTERED_OLDEST: dict[int, int] = {}
"""What each imported module registered as ``oldest``: API key -> the oldest version served under emulation."""


class Handler:
    """One API's entry: its version range and the module that serves it. (A plain class: a NamedTuple compiles its
    constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("api_key", "min_version", "max_version", "module")

    def __init__(self, api_key: int, min_version: int, max_version: int, module: str) -> None:
        self.api_key = api_key
        self.min_version = min_version
        self.max_version = max_version
        self.module = module

    @property
    def fn(self) -> HandlerFn:
        """The handler function, its module imported on the first call."""
        fn = FUNCTIONS.get(self.api_key)
        if fn is None:
            importlib.import_module(self.module)
            fn = FUNCTIONS[self.api_key]
        return fn


class UnreadableRequest(Exception):
    """Raised by a handler for a request Kafka's request classes refuse to build (e.g. ACL codes Kafka does not
    know): Kafka closes such a connection, and so does the dispatcher, logging the reason."""


def api(
    api_key: int, min_version: int, max_version: int, oldest: int | None = None,
) -> Callable[[HandlerFn], HandlerFn]:
    """Register an async handler; it gets the request context and decoded body, and returns the response body
    (or ``None`` when no response is sent, as for Produce with acks=0). ``oldest``: the versions below
    ``min_version`` it also answers, as the release answered them, when an older Kafka release is emulated."""

    def register(fn: HandlerFn) -> HandlerFn:
        if api_key in FUNCTIONS:
            raise RuntimeError(f"API key {api_key} registered twice")
        FUNCTIONS[api_key] = fn
        REGISTERED[api_key] = (min_version, max_version, fn.__module__)
        if oldest is not None:
            REGISTERED_OLDEST[api_key] = oldest
        return fn

    return register
