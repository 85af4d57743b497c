"""The broker's clock: wall time, or a virtual clock that moves only when a test advances it (``clock=virtual``).

Every broker timeout a test waits on reads this clock and is scheduled on it: group session, rebalance and join
timeouts, transaction timeouts, producer and transactional id expiration, offsets retention, log retention and
roll by time, LogAppendTime. On the virtual clock, ``advance(ms)`` runs what falls due in time order, each action
seeing the clock at its own due time (as Kafka's MockTime does); periodic checks run as often as their interval
fits in the advance. Long polls (Fetch max wait) and connection upkeep keep real time, so clients work as usual.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from typing import Any, Awaitable, Callable

log = logging.getLogger(__name__)

Action = Callable[[], Any]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class VirtualClock:
    """Milliseconds since the epoch that move only with ``advance``/``set``; actions scheduled on it run then."""

    def __init__(self, start_ms: int | None = None) -> None:
        self.now_ms = wall_clock_ms() if start_ms is None else start_ms
        self._due: list[tuple[int, int, Action]] = []
        self._sequence = itertools.count()
        self._cancelled: set[int] = set()

    def __call__(self) -> int:
        return self.now_ms

    def call_at(self, due_ms: int, action: Action) -> int:
        """Run ``action`` when the clock reaches ``due_ms``; returns a handle for ``cancel``."""
        handle = next(self._sequence)
        heapq.heappush(self._due, (due_ms, handle, action))
        return handle

    def cancel(self, handle: int) -> None:
        self._cancelled.add(handle)

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError(f"the clock does not go back: advance({ms})")
        return self.set(self.now_ms + ms)

    def set(self, target_ms: int) -> int:
        """Move to ``target_ms`` (not backwards), running every action due on the way; returns how many ran."""
        if target_ms < self.now_ms:
            raise ValueError(f"the clock does not go back: {target_ms} is before {self.now_ms}")
        ran = 0
        while self._due and self._due[0][0] <= target_ms:
            due_ms, handle, action = heapq.heappop(self._due)
            if handle in self._cancelled:
                self._cancelled.discard(handle)
                continue
            self.now_ms = max(self.now_ms, due_ms)
            ran += 1
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    asyncio.get_running_loop().create_task(result)
            except Exception:
                log.exception("virtual clock action failed")
        self.now_ms = target_ms
        return ran


async def every(clock: Callable[[], int], interval_ms: int, action: Callable[[], Awaitable[None] | None]) -> None:
    """Run ``action`` every ``interval_ms`` of ``clock`` until cancelled: on a virtual clock as the test advances it,
    on wall time with asyncio's sleep."""
    interval_ms = max(interval_ms, 1)
    if isinstance(clock, VirtualClock):
        wake = asyncio.Event()

        def due() -> None:
            wake.set()
            clock.call_at(clock.now_ms + interval_ms, due)

        clock.call_at(clock.now_ms + interval_ms, due)
        while True:
            await wake.wait()
            wake.clear()
            await _run(action)
    while True:
        await asyncio.sleep(interval_ms / 1000)
        await _run(action)


async def _run(action: Callable[[], Awaitable[None] | None]) -> None:
    try:
        result = action()
        if asyncio.iscoroutine(result):
            await result
    except Exception:
        log.exception("background task %s failed", getattr(action, "__name__", action))


def call_later(clock: Callable[[], int], ms: int, action: Action) -> Callable[[], None]:
    """Run ``action`` once ``ms`` of ``clock`` have passed: on a virtual clock when a test advances it that far, else
    on the running loop. Returns what cancels it."""
    if isinstance(clock, VirtualClock):
        handle = clock.call_at(clock.now_ms + ms, action)
        return lambda: clock.cancel(handle)
    return asyncio.get_running_loop().call_later(ms / 1000, action).cancel


async def sleep_ms(clock: Callable[[], int], ms: int) -> None:
    """Wait ``ms`` of ``clock``: on a virtual clock until a test advances it that far, else asyncio's sleep."""
    if isinstance(clock, VirtualClock):
        woken = asyncio.get_running_loop().create_future()
        handle = clock.call_at(clock.now_ms + ms, lambda: woken.done() or woken.set_result(None))
        try:
            await woken
        finally:
            if not woken.done():
                clock.cancel(handle)
        return
    await asyncio.sleep(ms / 1000)
