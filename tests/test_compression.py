"""Codec round trips and wire compatibility with what the Java client, librdkafka and kafka-python write."""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
from pathlib import Path

import cramjam
import lz4.block
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from minibroker.protocol.compression import (
    CODEC_NAMES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    CompressionError,
    UnsupportedCodecError,
    compress,
    decompress,
)

REPO = Path(__file__).resolve().parent.parent
ALL_CODECS = sorted(CODEC_NAMES)
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def payload(size: int) -> bytes:
    """Compressible but not trivial data, so every codec really encodes something."""
    chunk = os.urandom(64)
    return (chunk * (size // 64 + 1))[:size]


@pytest.mark.parametrize("codec", ALL_CODECS)
@pytest.mark.parametrize("size", [0, 1, 100, 40_000, 200_000])
def test_round_trip(codec: int, size: int) -> None:
    data = payload(size)
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_accepts_memoryview_input(codec: int) -> None:
    data = payload(5000)
    assert decompress(codec, compress(codec, memoryview(data))) == data


def test_none_is_identity() -> None:
    assert compress(NONE, b"abc") == b"abc"
    assert decompress(NONE, memoryview(b"abc")) == b"abc"


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 42])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(UnsupportedCodecError) as info:
        compress(codec, b"x")
    assert info.value.error_code == 76
    with pytest.raises(UnsupportedCodecError):
        decompress(codec, b"x")


def test_gzip_is_standard_and_deterministic() -> None:
    data = payload(10_000)
    packed = compress(GZIP, data)
    assert packed[:2] == b"\x1f\x8b"
    assert packed == compress(GZIP, data)
    assert gzip.decompress(packed) == data


def test_gzip_multi_member() -> None:
    assert decompress(GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


# ---- snappy ----


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    data = payload(70_000)
    packed = compress(SNAPPY, data)
    assert packed[:16] == XERIAL_HEADER
    blocks = []
    pos = 16
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert pos == len(packed)
    assert [len(b) for b in blocks] == [32768, 32768, 70_000 - 65536]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_block_as_librdkafka_writes() -> None:
    data = payload(50_000)
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_snappy_interop_with_kafka_python() -> None:
    data = payload(100_000)
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data)) == data
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    assert kafka_codec.snappy_decode(compress(SNAPPY, data)) == data


def test_snappy_ignores_xerial_version_fields() -> None:
    data = payload(1000)
    packed = compress(SNAPPY, data)
    little_endian_versions = packed[:8] + struct.pack("<ii", 1, 1) + packed[16:]
    assert decompress(SNAPPY, little_endian_versions) == data


@pytest.mark.parametrize("cut", [1, 3, 5])
def test_snappy_truncated_xerial(cut: int) -> None:
    packed = compress(SNAPPY, payload(70_000))
    with pytest.raises(CompressionError) as info:
        decompress(SNAPPY, packed[:-cut])
    assert info.value.error_code == 2


def test_snappy_negative_block_length() -> None:
    with pytest.raises(CompressionError):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", -5) + b"abcde")


def test_snappy_without_cramjam(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cramjam", None)
    with pytest.raises(UnsupportedCodecError) as info:
        compress(SNAPPY, b"data")
    assert info.value.error_code == 76
    with pytest.raises(UnsupportedCodecError):
        decompress(SNAPPY, b"data")


# ---- lz4 ----


def test_lz4_frame_header_is_what_java_reads() -> None:
    """KafkaLZ4BlockInputStream wants version 01 and independent blocks; we also omit content size."""
    packed = compress(LZ4, payload(1000))
    assert packed[:4] == LZ4_MAGIC
    flg, bd = packed[4], packed[5]
    assert flg >> 6 == 0b01  # version
    assert flg & 0x20  # block independence
    assert not flg & 0x10  # no block checksum
    assert not flg & 0x08  # no content size
    assert not flg & 0x04  # no content checksum
    assert bd == 0x40  # 64 KiB max block size


def lz4_blocks(frame: bytes) -> list[tuple[bool, bytes]]:
    """Split a frame without content size/checksums into (is_compressed, block) pairs."""
    blocks = []
    pos = 7
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            assert pos == len(frame)
            return blocks
        size = word & 0x7FFFFFFF
        blocks.append((not word & 0x80000000, frame[pos : pos + size]))
        pos += size


def test_lz4_blocks_decode_independently() -> None:
    """The Java reader decompresses each block with no dictionary, so no block may reference an earlier one."""
    data = payload(300_000)
    out = bytearray()
    for is_compressed, block in lz4_blocks(compress(LZ4, data)):
        out += lz4.block.decompress(block, uncompressed_size=65536) if is_compressed else block
    assert out == data


@pytest.mark.parametrize(
    "options",
    [
        {},  # library defaults: content size stored, linked blocks
        {"content_checksum": True, "block_checksum": True},
        {"block_linked": True, "store_size": False, "block_size": lz4.frame.BLOCKSIZE_MAX256KB},
    ],
)
def test_lz4_reads_other_writers_frames(options: dict) -> None:
    data = payload(300_000)
    assert decompress(LZ4, lz4.frame.compress(data, **options)) == data


def test_lz4_interop_with_kafka_python() -> None:
    data = payload(100_000)
    assert decompress(LZ4, kafka_codec.lz4_encode(data)) == data
    assert kafka_codec.lz4_decode(compress(LZ4, data)) == data


def test_lz4_truncated() -> None:
    packed = compress(LZ4, payload(100_000))
    with pytest.raises(CompressionError):
        decompress(LZ4, packed[:-4])


def test_lz4_bad_header_checksum() -> None:
    packed = bytearray(compress(LZ4, payload(1000)))
    packed[6] ^= 0xFF
    with pytest.raises(CompressionError):
        decompress(LZ4, packed)


# ---- zstd ----


def test_zstd_frame_without_content_size() -> None:
    """The Java client streams zstd, so its frames do not declare their size."""
    data = payload(200_000)
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.get_frame_parameters(no_size).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, no_size) == data
    streaming = zstandard.ZstdCompressor().compressobj()
    streamed = streaming.compress(data) + streaming.flush()
    assert decompress(ZSTD, streamed) == data


def test_zstd_concatenated_frames() -> None:
    first = zstandard.ZstdCompressor().compress(b"hello ")
    second = zstandard.ZstdCompressor(write_content_size=False).compress(b"world")
    assert decompress(ZSTD, first + second) == b"hello world"


def test_zstd_interop_with_kafka_python() -> None:
    data = payload(100_000)
    assert decompress(ZSTD, kafka_codec.zstd_encode(data)) == data
    assert kafka_codec.zstd_decode(compress(ZSTD, data)) == data


@pytest.mark.parametrize("cut", [1, 10])
def test_zstd_truncated(cut: int) -> None:
    packed = zstandard.ZstdCompressor(write_content_size=False).compress(payload(100_000))
    with pytest.raises(CompressionError):
        decompress(ZSTD, packed[:-cut])


def test_zstd_trailing_garbage() -> None:
    with pytest.raises(CompressionError):
        decompress(ZSTD, compress(ZSTD, b"data") + b"junk")


# ---- robustness ----

CODEC_PREFIXES = {GZIP: b"\x1f\x8b\x08\x00", SNAPPY: XERIAL_HEADER, LZ4: LZ4_MAGIC + b"\x60\x40", ZSTD: ZSTD_MAGIC}


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), prefixed=st.booleans(), data=st.binary(max_size=200))
def test_garbage_raises_only_compression_error(codec: int, prefixed: bool, data: bytes) -> None:
    blob = CODEC_PREFIXES[codec] + data if prefixed else data
    try:
        result = decompress(codec, blob)
    except CompressionError as exc:
        assert exc.error_code in (2, 76)
    else:
        assert isinstance(result, bytes)


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), data=st.binary(max_size=500), cut=st.integers(1, 50))
def test_truncated_streams_raise_only_compression_error(codec: int, data: bytes, cut: int) -> None:
    packed = compress(codec, data)
    try:
        decompress(codec, packed[: max(0, len(packed) - cut)])
    except CompressionError:
        pass


def test_codec_libraries_are_imported_lazily() -> None:
    code = (
        "import sys, minibroker.protocol.records, minibroker.protocol.compression\n"
        "loaded = {'lz4', 'zstandard', 'cramjam'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
