"""Event loops for tests that use aiokafka: unretrieved client errors are logged without a traceback.

A failed aiokafka future nobody awaited (a fenced sender task, a send of an aborted transaction) reports itself
from its finalizer, which the garbage collector may run in the middle of an unrelated ``ast.parse`` (pytest's
assertion rewriting, for one). On CPython 3.11 formatting a traceback parses source with ``ast`` for its carets,
and that nested parse breaks the outer one with "SystemError: AST constructor recursion depth mismatch".
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


def quiet_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    log.debug("asyncio: %s (%r)", context.get("message"), context.get("exception"))


def quiet_event_loop() -> asyncio.AbstractEventLoop:
    """The loop pytest-asyncio runs every async test on (``pytest_asyncio_loop_factories`` in conftest.py)."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(quiet_exception_handler)
    return loop
