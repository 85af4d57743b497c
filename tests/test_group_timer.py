"""The group coordinator's timer on the event loop: a key pushed later keeps its handle and fires at the later
time with the latest action; pushed earlier it fires earlier; cancelled, never."""

from __future__ import annotations

import asyncio

from minibroker.cluster.clock import wall_clock_ms
from minibroker.groups.timer import LoopTimer

FAR_MS = 5_000  # a deadline no test run reaches


async def fired(timer: LoopTimer, key: str) -> None:
    while timer.is_scheduled(key):
        await asyncio.sleep(0.005)


async def test_a_key_pushed_later_fires_once_at_the_later_time_with_the_latest_action() -> None:
    loop = asyncio.get_running_loop()
    timer = LoopTimer(loop, wall_clock_ms)
    calls: list[tuple[str, float]] = []
    start = loop.time()
    timer.schedule("session", 30, lambda: calls.append(("first", loop.time())))
    timer.schedule("session", 80, lambda: calls.append(("second", loop.time())))
    await asyncio.wait_for(fired(timer, "session"), 10)
    assert [name for name, _ in calls] == ["second"]
    assert calls[0][1] >= start + 0.080
    await asyncio.sleep(0.06)  # the handle armed for 30 ms fired early and did not run anything twice
    assert len(calls) == 1


async def test_a_key_pushed_earlier_fires_at_the_earlier_time() -> None:
    loop = asyncio.get_running_loop()
    timer = LoopTimer(loop, wall_clock_ms)
    calls: list[float] = []
    start = loop.time()
    timer.schedule("join", FAR_MS, lambda: calls.append(-1.0))
    timer.schedule("join", 20, lambda: calls.append(loop.time()))
    await asyncio.wait_for(fired(timer, "join"), 10)
    assert len(calls) == 1 and start + 0.020 <= calls[0] < start + FAR_MS / 1000


async def test_cancelled_keys_never_fire() -> None:
    loop = asyncio.get_running_loop()
    timer = LoopTimer(loop, wall_clock_ms)
    calls: list[str] = []
    timer.schedule("a", 10, lambda: calls.append("a"))
    timer.schedule("a", 40, lambda: calls.append("a, pushed"))
    timer.schedule("b", 10, lambda: calls.append("b"))
    timer.cancel("a")
    timer.cancel("unknown")  # a no-op, as in Kafka's timer
    assert not timer.is_scheduled("a") and timer.is_scheduled("b")
    await asyncio.wait_for(fired(timer, "b"), 10)
    await asyncio.sleep(0.06)
    assert calls == ["b"]
    timer.schedule("c", FAR_MS, lambda: calls.append("c"))
    timer.close()
    assert not timer.is_scheduled("c")
