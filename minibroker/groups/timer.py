"""Keyed timers for the group coordinator: the only source of time and delayed work it uses.

Kafka's coordinator timer is keyed ("heartbeat-<group>-<member>", "join-<group>", "sync-<group>"):
scheduling a key replaces whatever was pending under it, and cancelling an unknown key is a no-op.
The coordinator is written against the ``Timer`` protocol so unit tests can drive it with a fake clock
and no sleeping; the broker uses ``LoopTimer`` on its event loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from minibroker.cluster.clock import VirtualClock

log = logging.getLogger(__name__)

Action = Callable[[], None]


class Timer(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds (commit timestamps, state timestamps, expiry)."""

    def schedule(self, key: str, delay_ms: int, action: Action) -> None:
        """Run ``action`` after ``delay_ms``, replacing any action pending under ``key``."""

    def cancel(self, key: str) -> None:
        """Drop the action pending under ``key``, if any."""

    def is_scheduled(self, key: str) -> bool:
        """Whether an action is pending under ``key``."""


class LoopTimer:
    """``Timer`` on an asyncio loop: each key is one ``loop.call_later`` handle.

    A key pushed later (a member's session deadline, at every heartbeat) keeps its handle and only moves its due time:
    the handle, when it fires early, arms itself again for what is left. A heartbeat then makes and cancels no timer
    handle: an eighth of its instructions (Heartbeat and OffsetCommit both push the member's session deadline).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, clock: Callable[[], int]) -> None:
        self._loop = loop
        self._clock = clock
        self._pending: dict[str, _Pending] = {}

    def now_ms(self) -> int:
        return self._clock()

    def schedule(self, key: str, delay_ms: int, action: Action) -> None:
        due = self._loop.time() + max(delay_ms, 0) / 1000
        pending = self._pending.get(key)
        if pending is not None and pending.armed_for <= due:
            pending.due = due
            pending.action = action
            return
        self.cancel(key)
        pending = self._pending[key] = _Pending(key, due, action)
        self._arm(pending)

    def _arm(self, pending: _Pending) -> None:
        pending.armed_for = pending.due
        pending.handle = self._loop.call_at(pending.due, self._fire, pending)

    def _fire(self, pending: _Pending) -> None:
        if self._pending.get(pending.key) is not pending:
            return
        if self._loop.time() < pending.due:  # pushed later since it was armed
            self._arm(pending)
            return
        del self._pending[pending.key]
        try:
            pending.action()
        except Exception:
            log.exception("group coordinator timer %s failed", pending.key)

    def cancel(self, key: str) -> None:
        pending = self._pending.pop(key, None)
        if pending is not None:
            pending.handle.cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._pending

    def close(self) -> None:
        for pending in self._pending.values():
            pending.handle.cancel()
        self._pending.clear()


class _Pending:
    """A key's action, when it is due (loop time), and when its handle was armed for (not later than due)."""

    __slots__ = ("key", "due", "action", "armed_for", "handle")
    handle: asyncio.TimerHandle  # set by LoopTimer._arm, right after the entry is made

    def __init__(self, key: str, due: float, action: Action) -> None:
        self.key = key
        self.due = due
        self.action = action
        self.armed_for = due


class ClockTimer:
    """``Timer`` on the virtual clock (``clock=virtual``): actions run when a test advances the clock past them."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._handles: dict[str, int] = {}

    def now_ms(self) -> int:
        return self._clock.now_ms

    def schedule(self, key: str, delay_ms: int, action: Action) -> None:
        self.cancel(key)

        def fire() -> None:
            if self._handles.get(key) == handle:
                del self._handles[key]
            action()

        handle = self._clock.call_at(self._clock.now_ms + max(delay_ms, 0), fire)
        self._handles[key] = handle

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            self._clock.cancel(handle)

    def is_scheduled(self, key: str) -> bool:
        return key in self._handles

    def close(self) -> None:
        for handle in self._handles.values():
            self._clock.cancel(handle)
        self._handles.clear()
