"""The virtual clock (``clock=virtual``): broker timeouts move only when the test advances the clock, so a session
or transaction timeout is a step of the test, not a wait."""

from __future__ import annotations

import asyncio
import time
from typing import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.protocol.records import ControlRecordType, parse_control_record

from minibroker.cluster.clock import VirtualClock, every
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.grouputil import (
    ALL,
    GROUP_PARTITIONS,
    KafkaPythonMember,
    MemberProcess,
    ThreadedMember,
    is_split,
    wait_until,
)
from tests.test_control import call
from tests.txnutil import consume, make_producer, read_segments

SESSION_MS = 10_000


def test_actions_run_in_time_order_at_their_own_time() -> None:
    clock = VirtualClock(1000)
    seen: list[tuple[str, int]] = []
    clock.call_at(1500, lambda: seen.append(("b", clock())))
    clock.call_at(1200, lambda: seen.append(("a", clock())))
    dropped = clock.call_at(1300, lambda: seen.append(("dropped", clock())))
    clock.cancel(dropped)
    assert clock.advance(400) == 1 and seen == [("a", 1200)] and clock() == 1400
    assert clock.set(2000) == 1 and seen[-1] == ("b", 1500) and clock() == 2000
    with pytest.raises(ValueError, match="does not go back"):
        clock.set(1999)
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)


async def test_periodic_work_follows_the_virtual_clock() -> None:
    clock = VirtualClock(0)
    runs: list[int] = []
    task = asyncio.get_running_loop().create_task(every(clock, 1000, lambda: runs.append(clock())))
    await asyncio.sleep(0.05)
    assert runs == []  # real time passing does not move it
    clock.advance(1000)
    await asyncio.sleep(0)
    clock.advance(1000)
    await asyncio.sleep(0)
    task.cancel()
    assert runs == [1000, 2000]


def clock_following_real_time(broker: Broker) -> Callable[[], bool]:
    """A step for ``wait_until`` that moves the virtual clock by the real time passed since the first step: timers
    such as the initial rebalance delay fire, and a member heartbeating in real time is never late, as under the
    system clock. (A clock running ahead of real time would expire a slow-starting member's session.)"""
    real_start, virtual_start = time.monotonic(), broker.advance(0)

    def step() -> bool:
        broker.set_time(virtual_start + int((time.monotonic() - real_start) * 1000))
        return True

    return step


def heartbeats_from(broker: Broker, client_id: str, since: int) -> int:
    """How many of ``client_id``'s Heartbeats the broker answered without error after transcript entry ``since``."""
    return sum(1 for entry in broker.transcript(since)
               if entry["api"] == "Heartbeat" and entry["client_id"] == client_id and not entry["errors"])


def test_a_silent_member_is_evicted_when_the_clock_passes_its_session_timeout(topic_name: str) -> None:
    """A kafka-python member stops heartbeating (killed): nothing happens in real time; once the test moves the clock
    past its session timeout, the survivor (heartbeating in real time) gets every partition."""
    with Broker(clock="virtual", transcript=True) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, GROUP_PARTITIONS)])[topic_name].result(TIMEOUT_S)
        group = f"g-{topic_name}"
        silent = MemberProcess("kafka-python", broker.bootstrap_servers, group, topic_name, SESSION_MS)
        survivor: ThreadedMember | None = None
        try:
            follow_real_time = clock_following_real_time(broker)  # for the group's initial rebalance delay
            wait_until(lambda: follow_real_time() and silent.assignment == ALL,
                       "the member process to own every partition")
            survivor = ThreadedMember("survivor", lambda: KafkaPythonMember(
                broker.bootstrap_servers, group, topic_name, session_timeout_ms=SESSION_MS, client_id="survivor"))
            wait_until(lambda: is_split([survivor.assignment, silent.assignment]), "the partitions to be split")
            silent.kill()
            # The clock has stood still since the first wait, so both sessions end at the same time. Half a session
            # on, the survivor's next heartbeat (real time) starts its session again; the silent member's does not.
            broker.advance(SESSION_MS // 2)
            after_step = broker.transcript_position()
            wait_until(lambda: heartbeats_from(broker, "survivor", after_step) > 0, "the survivor's next heartbeat")
            assert survivor.assignment != ALL  # real time passed (a heartbeat interval), the clock did not
            broker.advance(SESSION_MS // 2 + 1)  # past the silent member's session, within the survivor's
            wait_until(lambda: survivor.assignment == ALL, "the survivor to take every partition")
        finally:
            if survivor is not None:
                survivor.stop()
            silent.kill()


def test_an_open_transaction_is_aborted_when_the_clock_passes_its_timeout(topic_name: str) -> None:
    with Broker(clock="virtual", control=True) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(TIMEOUT_S)
        producer = make_producer("confluent", broker.bootstrap_servers, f"txn-{topic_name}",
                                 **{"transaction.timeout.ms": 60_000})
        try:
            producer.init()
            producer.begin()
            producer.send(topic_name, 0, b"never committed")
            producer.flush()
            time.sleep(0.5)
            assert not any(b.header.is_control for b in read_segments(broker.data_dir, topic_name, 0))
            status, answer = call(f"{broker.control_url}/v1/clock/advance", "POST", {"ms": 75_000})
            assert status == 200 and answer["actions_run"] > 0
            wait_until(lambda: any(b.header.is_control for b in read_segments(broker.data_dir, topic_name, 0)),
                       "the ABORT marker")
        finally:
            producer.close()
        [marker] = [b for b in read_segments(broker.data_dir, topic_name, 0) if b.header.is_control]
        assert parse_control_record(marker.records[0])[0] == ControlRecordType.ABORT
        assert consume("confluent", broker.bootstrap_servers, topic_name, 1, 0, "read_committed", settle=0.5) == []


def test_the_clock_routes_refuse_a_system_clock_and_going_back() -> None:
    with Broker(control=True) as broker:
        status, answer = call(f"{broker.control_url}/v1/clock/advance", "POST", {"ms": 10})
        assert status == 409 and "clock=virtual" in answer["error"]
        assert call(f"{broker.control_url}/v1/clock")[1]["virtual"] is False
    with Broker(control=True, clock="virtual") as broker:
        now = call(f"{broker.control_url}/v1/clock")[1]["now_ms"]
        assert call(f"{broker.control_url}/v1/clock/advance", "POST", {"ms": -5})[0] == 400
        assert call(f"{broker.control_url}/v1/clock/set", "POST", {"time": now - 1})[0] == 400
        assert call(f"{broker.control_url}/v1/clock/set", "POST", {"time": now + 5000})[1]["now_ms"] == now + 5000
        assert broker.advance(1000) == now + 6000
