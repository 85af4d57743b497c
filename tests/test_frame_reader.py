"""FrameReader: the BufferedProtocol frame decoder the server reads requests with."""

from __future__ import annotations

import random
import struct

import pytest
from minibroker.protocol.frames import FrameReader, FrameTooLarge

SCRATCH = FrameReader.SCRATCH


def stream_of(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


def read_all(reader: FrameReader, stream: bytes, chunk_sizes: random.Random | None = None) -> list[bytes]:
    """Deliver ``stream`` the way a transport does: into get_buffer(), at most what it offers per read."""
    frames: list[bytes] = []
    position = 0
    while position < len(stream):
        buffer = reader.get_buffer(-1)
        assert len(buffer) > 0
        size = min(len(buffer), len(stream) - position)
        if chunk_sizes is not None:
            size = min(size, chunk_sizes.randint(1, 3 * SCRATCH))
        buffer[:size] = stream[position : position + size]
        position += size
        frames += [bytes(frame) for frame in reader.buffer_updated(size)]
    return frames


@pytest.mark.parametrize("seed", range(20))
def test_any_split_yields_the_frames_in_order(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [0, 1, 3, SCRATCH - 5, SCRATCH - 4, SCRATCH - 3, SCRATCH, 3 * SCRATCH + 7, 200_000]
    payloads = [bytes(rng.getrandbits(8) for _ in range(min(n, 64))) * (n // 64) + bytes(n % 64) for n in
                [rng.choice(sizes) for _ in range(30)] + [rng.randint(0, 2 * SCRATCH) for _ in range(30)]]
    rng.shuffle(payloads)
    reader = FrameReader(1 << 20)
    assert read_all(reader, stream_of(payloads), rng) == payloads
    assert reader.buffered == 0


def test_byte_by_byte() -> None:
    payloads = [b"a" * 10, b"", b"b" * (SCRATCH + 10), b"c"]
    stream = stream_of(payloads)
    reader = FrameReader(1 << 20)
    got = []
    for i in range(len(stream)):
        buffer = reader.get_buffer(-1)
        buffer[0] = stream[i]
        got += [bytes(f) for f in reader.buffer_updated(1)]
    assert got == payloads
    assert reader.buffered == 0


def test_partial_frame_is_counted_as_buffered() -> None:
    reader = FrameReader(1 << 20)
    stream = stream_of([b"x" * 100_000])
    buffer = reader.get_buffer(-1)
    buffer[:1000] = stream[:1000]
    assert reader.buffer_updated(1000) == []
    assert reader.buffered == 1000
    assert len(reader.get_buffer(-1)) == 100_000 + 4 - 1000  # the rest of that frame, read in place


def test_frames_are_writable_views() -> None:
    reader = FrameReader(1 << 20)
    for payload in (b"small", b"L" * (SCRATCH * 2)):
        frames = read_all(FrameReader(1 << 20), stream_of([payload]))
        assert frames == [payload]
    stream = stream_of([b"abc", b"Z" * (SCRATCH * 2)])
    views = []
    position = 0
    while position < len(stream):
        buffer = reader.get_buffer(-1)
        size = min(len(buffer), len(stream) - position)
        buffer[:size] = stream[position : position + size]
        position += size
        views += reader.buffer_updated(size)
    for view in views:
        view[0] = ord("!")  # offsets are assigned in place in Produce data
    assert [bytes(v[:1]) for v in views] == [b"!", b"!"]


@pytest.mark.parametrize("prefix", [struct.pack(">i", 101), struct.pack(">i", -1)])
def test_bad_prefix_is_refused_before_buffering(prefix: bytes) -> None:
    reader = FrameReader(100)
    buffer = reader.get_buffer(-1)
    buffer[:4] = prefix
    with pytest.raises(FrameTooLarge):
        reader.buffer_updated(4)


def test_small_frames_do_not_copy_each_other() -> None:
    """Frames from the scratch buffer stay intact after the buffer is reused."""
    reader = FrameReader(1 << 20)
    first = read_all(reader, stream_of([b"first"]))
    views = []
    buffer = reader.get_buffer(-1)
    data = stream_of([b"second"])
    buffer[: len(data)] = data
    views += reader.buffer_updated(len(data))
    assert first == [b"first"] and [bytes(v) for v in views] == [b"second"]


def test_connections_sharing_the_spare_scratch_buffer_keep_their_own_bytes() -> None:
    """Readers in one thread hand an emptied scratch buffer on to the next read: a reader holding a partial frame
    keeps its bytes while others read through the spare, and frames already returned never change."""
    rng = random.Random(11)
    payloads = {name: [bytes([name, i]) * rng.randint(1, 900) for i in range(40)] for name in (1, 2, 3)}
    streams = {name: stream_of(frames) for name, frames in payloads.items()}
    readers = {name: FrameReader(1 << 20) for name in payloads}
    positions = dict.fromkeys(payloads, 0)
    received: dict[int, list[memoryview]] = {name: [] for name in payloads}
    while any(positions[name] < len(streams[name]) for name in payloads):
        name = rng.choice([n for n in payloads if positions[n] < len(streams[n])])
        buffer = readers[name].get_buffer(-1)
        size = min(len(buffer), len(streams[name]) - positions[name], rng.randint(1, 2000))
        buffer[:size] = streams[name][positions[name] : positions[name] + size]
        positions[name] += size
        received[name] += readers[name].buffer_updated(size)
    assert {name: [bytes(frame) for frame in frames] for name, frames in received.items()} == payloads
