"""A Fetch waiting for data is answered before the Produce that brought the data: the record leaves for the
consumer first (end-to-end latency), the producer's acknowledgement right after.

The order is read from the kernel's receive timestamps of the two answers (SO_TIMESTAMPNS), which loopback stamps
when the broker sends them; the control API's request counts say when the Fetch is waiting.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

import pytest
from minibroker.protocol.frames import decode_response, encode_request
from minibroker.protocol.records import build_batch

from minibroker.control_client import ControlClient
from minibroker.testing import Broker
from tests.clientutil import RawConnection, requests_read

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="SO_TIMESTAMPNS receive timestamps are Linux's")

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value; Python 3.11 does not name it
TIMESPEC = struct.Struct("@qq")
PRODUCE, FETCH = 0, 1


def stamped_answer(conn: RawConnection) -> tuple[bytes, int]:
    """The next answer frame (without its size) and when its first byte reached the socket, in ns since the epoch."""
    data, ancillary, _, _ = conn.sock.recvmsg(1 << 16, socket.CMSG_SPACE(TIMESPEC.size))
    stamps = [TIMESPEC.unpack(cdata) for level, kind, cdata in ancillary
              if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
    assert stamps, "no receive timestamp"
    (size,) = struct.unpack_from(">i", data)
    while len(data) < 4 + size:
        data += conn.sock.recv(4 + size - len(data))
    seconds, nanoseconds = stamps[0]
    return data[4:], seconds * 1_000_000_000 + nanoseconds


def test_a_waiting_fetch_is_answered_before_the_produce_that_woke_it() -> None:
    with Broker(control=True, num_partitions=1) as broker:
        broker.create_topic("woken", 1)
        control = ControlClient(broker.control_url)
        with RawConnection(broker.bootstrap_servers, timeout=20) as consumer, \
                RawConnection(broker.bootstrap_servers, timeout=20) as producer:
            for conn in (consumer, producer):
                conn.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            before = requests_read(control, "Fetch")
            consumer.send(encode_request(FETCH, 12, 1, "waiting-consumer", {
                "replica_id": -1, "max_wait_ms": 15_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": "woken", "partitions": [{
                    "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}))
            deadline = time.monotonic() + 10
            while requests_read(control, "Fetch") == before:  # read, and so waiting: both happen in one step of the loop
                assert time.monotonic() < deadline, "the broker never read the Fetch"
                time.sleep(0.01)
            sent_ns = time.time_ns()
            batch = build_batch([(b"k", b"v")])
            producer.send(encode_request(PRODUCE, 9, 1, "producer", {
                "transactional_id": None, "acks": 1, "timeout_ms": 30_000,
                "topic_data": [{"name": "woken", "partition_data": [{"index": 0, "records": batch}]}]}))
            produced, produced_ns = stamped_answer(producer)
            fetched, fetched_ns = stamped_answer(consumer)

    _, produce_answer = decode_response(PRODUCE, 9, produced)
    assert produce_answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    _, fetch_answer = decode_response(FETCH, 12, fetched)
    [partition] = fetch_answer["responses"][0]["partitions"]
    assert partition["error_code"] == 0 and partition["high_watermark"] == 1 and partition["records"]
    assert fetched_ns >= sent_ns, "the Fetch was answered before the record was produced"
    assert fetched_ns < produced_ns, "the producer was acknowledged before the waiting consumer got the record"
