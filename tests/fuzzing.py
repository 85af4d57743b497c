"""What hostile input reaches before any handler runs, as fuzz targets, and hypothesis strategies for it.

``decode_frame`` is what the broker does with a request frame: the header, then the body of any API and
version it serves (``minibroker.handlers.HANDLERS``). ``check_batches`` is what Produce does with a
partition's records: validation, then (as Fetch consumers and the log cleaner would) record decoding.
Only the protocol's own errors may escape: ``ProtocolError`` and ``InvalidRecordError``; anything else is a
bug that would close connections with a traceback (or worse). ``tests/fuzz_decoders.py`` runs these under
atheris; ``tests/test_fuzz_decoders.py`` under hypothesis.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st
from minibroker.protocol.frames import FrameReader, decode_request_body, encode_request, parse_request_header
from minibroker.protocol.messages import REQUESTS
from minibroker.protocol.primitives import ProtocolError
from minibroker.protocol.records import InvalidRecordError, build_batch, decode_batch, validate_batches
from minibroker.protocol.schema import Field, in_range, is_flexible, snake_case

from minibroker.handlers import HANDLERS

API_VERSIONS: list[tuple[int, int]] = sorted(
    (key, version) for key, handler in HANDLERS.items() for version in range(handler.min_version, handler.max_version + 1)
)
INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd


def decode_frame(frame: bytes) -> dict[str, Any] | None:
    """Header and body of one request frame as the dispatcher decodes them; None for APIs the broker refuses
    by their header alone (unknown key or version)."""
    view = memoryview(frame)
    header = parse_request_header(view)
    handler = HANDLERS.get(header.api_key)
    if handler is None or not handler.min_version <= header.api_version <= handler.max_version:
        return None
    return decode_request_body(header, view)


def check_batches(data: bytes) -> None:
    """Validate like Produce, then decode every record of the batches that passed."""
    for header in validate_batches(data):
        decode_batch(data, header)


def feed_in_chunks(stream: bytes, cuts: list[int], max_frame: int) -> list[bytes]:
    """Feed ``stream`` to a FrameReader split at ``cuts``; the frames it yields."""
    decoder = FrameReader(max_frame)
    frames: list[bytes] = []
    start = 0
    for end in sorted({*cuts, len(stream)}):
        frames += [bytes(frame) for frame in decoder.feed(stream[start:end])]
        start = end
    return frames


def run_target(kind: int, data: bytes) -> None:
    """One fuzz input: ``kind`` picks the target. Raises only for bugs."""
    try:
        if kind == 0:
            decode_frame(data)
        elif kind == 1:
            check_batches(data)
        else:
            feed_in_chunks(data, list(data[:8]), 1 << 16)
    except (ProtocolError, InvalidRecordError):
        pass


# ---- hypothesis strategies ----


def field_value(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """A value of one field that the codec can encode at ``version``."""
    nullable = in_range(version, f.nullable)
    element = f.element_type
    if element is not None:
        item = struct_value(f.fields, version, flexible) if f.is_struct else scalar_value(element)
        values = st.lists(item, max_size=3)
    elif f.is_struct:
        values = struct_value(f.fields, version, flexible)
    else:
        values = scalar_value(f.type)
    return st.one_of(st.none(), values) if nullable else values


def scalar_value(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        bits = INT_RANGES[type_name]
        return st.integers(-(2**bits), 2**bits - 1)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":  # NaN never equals itself: round trips would fail on it alone
        return st.floats(allow_nan=False)
    if type_name == "uuid":
        return st.binary(min_size=16, max_size=16)
    if type_name == "string":
        return st.text(max_size=12)
    if type_name == "bytes":
        return st.binary(max_size=24)
    if type_name == "records":
        return st.one_of(st.binary(max_size=40), record_batches())
    raise ValueError(f"no strategy for {type_name}")


def struct_value(fields: tuple[Field, ...], version: int, flexible: bool) -> st.SearchStrategy[dict[str, Any]]:
    present = [f for f in fields if in_range(version, f.versions)]
    return st.fixed_dictionaries({snake_case(f.name): field_value(f, version, flexible) for f in present})


@st.composite
def requests(draw: st.DrawFn) -> tuple[int, int, dict[str, Any], bytes]:
    """(api key, version, body, whole frame) for any API and version the broker serves."""
    api_key, version = draw(st.sampled_from(API_VERSIONS))
    message = REQUESTS[api_key]
    body = draw(struct_value(message.fields, version, is_flexible(message, version)))
    frame = encode_request(api_key, version, draw(st.integers(-(2**31), 2**31 - 1)), draw(st.one_of(st.none(), st.text(max_size=8))), body)
    return api_key, version, body, frame[4:]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes overwritten, inserted or removed, or cut short: length fields then lie."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(("set", "insert", "delete", "truncate", "int32")))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        if action == "set" and out:
            out[at] = draw(st.integers(0, 255))
        elif action == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif action == "delete" and out:
            del out[at : at + draw(st.integers(1, 4))]
        elif action == "truncate":
            del out[at:]
        elif action == "int32" and len(out) >= at + 4:  # a length or count turned huge, negative or off by one
            out[at : at + 4] = struct.pack(">i", draw(st.sampled_from((-2, -1, 0, 1, 2**31 - 1, -(2**31), 0x7FFF))))
    return bytes(out)


@st.composite
def record_batches(draw: st.DrawFn) -> bytes:
    """A valid batch of 1-4 records (keys, values, headers) in any codec, idempotent or not."""
    records = draw(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.binary(max_size=12)),
                st.one_of(st.none(), st.binary(max_size=40)),
                st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=2),
            ),
            min_size=1,
            max_size=4,
        )
    )
    producer_id = draw(st.sampled_from((-1, 7)))
    return bytes(build_batch(
        [(key, value, tuple(headers), 1_700_000_000_000 + i) for i, (key, value, headers) in enumerate(records)],
        compression=draw(st.sampled_from(CODECS)),
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
    ))
