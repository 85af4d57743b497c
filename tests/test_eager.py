"""minibroker.server.eager: a coroutine runs at once; only one that waits becomes a task, which finishes it as a Task would
(results, a future's exception, a cancellation of the task, one turn of the loop)."""

from __future__ import annotations

import asyncio

import pytest

from minibroker.server.eager import start_eagerly


async def test_a_coroutine_that_never_waits_runs_to_its_end_in_the_call() -> None:
    ran: list[str] = []

    async def quick() -> None:
        ran.append("done")

    assert start_eagerly(asyncio.get_running_loop(), quick()) is None and ran == ["done"]


async def test_its_exception_is_raised_by_the_call() -> None:
    async def broken() -> None:
        raise ValueError("at once")

    with pytest.raises(ValueError, match="at once"):
        start_eagerly(asyncio.get_running_loop(), broken())


async def test_one_that_waits_is_finished_by_a_task_with_what_it_waited_for() -> None:
    seen: list[object] = []

    async def later() -> int:
        await asyncio.sleep(0.001)
        return 5

    async def waits() -> None:
        seen.append("started")
        seen.append(await asyncio.shield(asyncio.get_running_loop().create_task(later())))
        await asyncio.sleep(0)  # a bare yield: one turn of the loop
        seen.append("after a turn")
        with pytest.raises(KeyError):
            await failing_future()

    task = start_eagerly(asyncio.get_running_loop(), waits())
    assert seen == ["started"] and task is not None
    await task
    assert seen == ["started", 5, "after a turn"]


def failing_future() -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.set_exception, KeyError("from the future"))
    return future


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    seen: list[str] = []

    async def long_wait() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled inside")
            raise

    task = start_eagerly(asyncio.get_running_loop(), long_wait())
    assert task is not None
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled inside"] and task.cancelled()
