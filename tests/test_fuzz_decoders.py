"""Property-based tests of everything hostile bytes reach before a handler: request headers and bodies of
every API and version the broker serves, frame splitting, and record batch validation and decoding.

Complements test_codec.py (random bodies straight into one codec) and test_records.py (one sample batch
mutated): here the inputs are valid requests and batches generated from the schemas and then damaged, so
the decoders' deeper paths (nested arrays, tagged fields, compressed records) see hostile data too. A
bounded atheris run of the same targets is at the end (skipped where atheris is not installed).
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minibroker.protocol.frames import FrameTooLarge
from minibroker.protocol.primitives import ProtocolError
from minibroker.protocol.records import InvalidRecordError, iter_batches, parse_header

from tests.fuzzing import API_VERSIONS, check_batches, decode_frame, feed_in_chunks, mutated, record_batches, requests

ROOT = Path(__file__).resolve().parents[1]
ATHERIS_RUNS = 20_000


def budget(examples: int) -> settings:
    """A fixed number of examples, no deadline: CI machines are slow and shared."""
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def plain(value: Any) -> Any:
    """Decoded values with views turned into bytes, for comparison."""
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def subset_equal(sent: Any, got: Any) -> bool:
    """Every field that was sent comes back equal (the decoder adds fields of other versions as defaults)."""
    if isinstance(sent, dict):
        return all(key in got and subset_equal(value, got[key]) for key, value in sent.items())
    if isinstance(sent, list):
        return len(sent) == len(got) and all(subset_equal(a, b) for a, b in zip(sent, got))
    return sent == got


def test_every_served_api_version_is_covered() -> None:
    assert len(API_VERSIONS) > 150 and (0, 11) in API_VERSIONS and (36, 2) in API_VERSIONS


@budget(150)
@given(requests())
def test_generated_requests_decode_to_what_was_sent(case: tuple[int, int, dict, bytes]) -> None:
    api_key, version, body, frame = case
    decoded = decode_frame(frame)
    assert decoded is not None and subset_equal(plain(body), plain(decoded)), f"API {api_key} v{version}"


@budget(300)
@given(st.data())
def test_damaged_requests_only_raise_protocol_error(data: st.DataObject) -> None:
    _, _, _, frame = data.draw(requests())
    try:
        decode_frame(data.draw(mutated(frame)))
    except ProtocolError:
        pass


@budget(300)
@given(st.sampled_from(API_VERSIONS), st.integers(-1, 0x7FFF), st.binary(max_size=64), st.binary(max_size=200))
def test_random_header_fields_and_bodies(api: tuple[int, int], correlation: int, client: bytes, body: bytes) -> None:
    api_key, version = api
    frame = struct.pack(">hhih", api_key, version, correlation, len(client) if correlation >= 0 else -1)
    try:
        decode_frame(frame + (client if correlation >= 0 else b"") + body)
    except ProtocolError:
        pass


@budget(300)
@given(st.lists(st.binary(max_size=300), max_size=6), st.lists(st.integers(0, 2000), max_size=12))
def test_frames_survive_any_split(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(struct.pack(">i", len(frame)) + frame for frame in frames)
    assert feed_in_chunks(stream, cuts, 300) == frames
    with pytest.raises(FrameTooLarge):
        feed_in_chunks(stream + struct.pack(">i", 301), cuts, 300)


def fix_crcs(data: bytearray) -> None:
    """Recompute the CRC of every batch that still frames, so validation gets past it to the records."""
    for header in list(iter_batches(data)):
        end = header.position + header.size
        struct.pack_into(">I", data, header.position + 17, crc32c.crc32c(bytes(data[header.position + 21 : end])))


@budget(150)
@given(st.lists(record_batches(), min_size=1, max_size=3), st.data(), st.booleans())
def test_damaged_batches_only_raise_invalid_record(batches: list[bytes], data: st.DataObject, fix: bool) -> None:
    damaged = bytearray(data.draw(mutated(b"".join(batches))))
    if fix:
        fix_crcs(damaged)
    try:
        check_batches(bytes(damaged))
    except InvalidRecordError as exc:
        assert exc.error_code in (2, 87), exc  # CORRUPT_MESSAGE, INVALID_RECORD


@budget(50)
@given(st.lists(record_batches(), min_size=1, max_size=3))
def test_generated_batches_are_valid(batches: list[bytes]) -> None:
    check_batches(b"".join(batches))
    assert [parse_header(batch).size for batch in batches] == [len(batch) for batch in batches]


def test_atheris_fuzz_run(tmp_path: Path, summary_line: Callable[[str], None]) -> None:
    """A bounded coverage-guided run (``ATHERIS_RUNS`` inputs) of the same targets; reports how many it tried."""
    pytest.importorskip("atheris")
    result = subprocess.run(
        [sys.executable, "-m", "tests.fuzz_decoders", str(tmp_path), f"-runs={ATHERIS_RUNS}", "-seed=1", "-max_len=4096"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    done = re.search(r"Done (\d+) runs in (\d+) second", result.stderr)
    assert done and int(done.group(1)) >= ATHERIS_RUNS, result.stderr[-2000:]
    summary_line(f"atheris: {done.group(1)} inputs tried in {done.group(2)} s, no failure")
