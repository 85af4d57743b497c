"""Record-batch compression codecs, byte-compatible with the Java client and librdkafka.

Codec ids are the low three bits of the batch attributes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
lz4, zstandard and cramjam are imported on first use so that start-up does not pay for codecs nobody uses.
Decompression is streaming for lz4 and zstd so a forged "content size" header cannot force a huge allocation.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

CORRUPT_MESSAGE = 2
UNSUPPORTED_COMPRESSION_TYPE = 76

# xerial snappy-java stream header: magic, then int32 version 1 and int32 minimum compatible version 1.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's SnappyOutputStream default, which Kafka uses
_INT32 = struct.Struct(">i")

_GZIP_LEVEL = 6  # zlib's default, same as Java's Deflater.DEFAULT_COMPRESSION
_ZSTD_LEVEL = 3  # Kafka's compression.zstd.level default

Data = bytes | bytearray | memoryview


class CompressionError(Exception):
    """Compressed data could not be decoded; ``error_code`` is the Kafka error to answer with."""

    error_code = CORRUPT_MESSAGE


class UnsupportedCodecError(CompressionError):
    """Unknown codec id, or the optional library for a codec is not installed."""

    error_code = UNSUPPORTED_COMPRESSION_TYPE


def compress(codec: int, data: Data) -> bytes:
    """Compress one batch's records section the way Kafka clients do for ``codec``."""
    if codec == NONE:
        return bytes(data)
    return _codec(_COMPRESSORS, codec)(data)


def decompress(codec: int, data: Data) -> bytes:
    """Decompress one batch's records section; raises CompressionError on corrupt or truncated input."""
    if codec == NONE:
        return bytes(data)
    decoder = _codec(_DECOMPRESSORS, codec)
    try:
        return decoder(data)
    except CompressionError:
        raise
    except Exception as exc:  # every library has its own error classes: zlib.error, ZstdError, DecompressionError...
        raise CompressionError(f"corrupt {CODEC_NAMES[codec]} data: {exc}") from exc


def _codec(table: dict[int, Callable[[Data], bytes]], codec: int) -> Callable[[Data], bytes]:
    try:
        return table[codec]
    except KeyError:
        raise UnsupportedCodecError(f"unknown compression codec id {codec}") from None


def _gzip_compress(data: Data) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=_GZIP_LEVEL, mtime=0)


def _gzip_decompress(data: Data) -> bytes:
    import gzip

    return gzip.decompress(data)


def _snappy() -> ModuleType:
    try:
        import cramjam
    except ImportError:
        raise UnsupportedCodecError("snappy needs the 'cramjam' package (pip install minibroker[snappy])") from None
    return cramjam.snappy


def _snappy_compress(data: Data) -> bytes:
    """xerial framing, as the Java client writes (librdkafka reads it too)."""
    snappy = _snappy()
    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE])
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: Data) -> bytes:
    """Accept xerial framing (Java client) and plain raw snappy (librdkafka's default)."""
    snappy = _snappy()
    view = memoryview(data)
    if view[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        return bytes(snappy.decompress_raw(view))
    # Version fields are not checked: some writers get their byte order wrong and real readers ignore them.
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(view):
        if pos + _INT32.size > len(view):
            raise CompressionError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(view, pos)
        pos += _INT32.size
        if length < 0 or pos + length > len(view):
            raise CompressionError(f"bad xerial snappy block length {length}")
        out += snappy.decompress_raw(view[pos : pos + length])
        pos += length
    return bytes(out)


def _lz4() -> ModuleType:
    try:
        import lz4.frame
    except ImportError:
        raise UnsupportedCodecError("lz4 needs the 'lz4' package") from None
    return lz4.frame


def _lz4_compress(data: Data) -> bytes:
    """Standard LZ4 frame with independent 64 KiB blocks and no content size, as KafkaLZ4BlockOutputStream writes.

    The Java reader decompresses each block on its own, so linked blocks would break it.
    """
    frame = _lz4()
    return frame.compress(
        data,
        block_size=frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        store_size=False,
        content_checksum=False,
    )


def _lz4_decompress(data: Data) -> bytes:
    decompressor = _lz4().LZ4FrameDecompressor()
    out = decompressor.decompress(data)
    if not decompressor.eof:
        raise CompressionError("truncated lz4 frame")
    return out


def _zstd() -> ModuleType:
    try:
        import zstandard
    except ImportError:
        raise UnsupportedCodecError("zstd needs the 'zstandard' package") from None
    return zstandard


def _zstd_compress(data: Data) -> bytes:
    return _zstd().ZstdCompressor(level=_ZSTD_LEVEL).compress(data)


def _zstd_decompress(data: Data) -> bytes:
    """Stream every frame: the Java client's frames carry no content size, so one-shot decompress cannot size them."""
    decompressor = _zstd().ZstdDecompressor()
    out = bytearray()
    remaining: Data = data
    while True:
        stream = decompressor.decompressobj()
        out += stream.decompress(remaining)
        if not stream.eof:
            raise CompressionError("truncated zstd frame")
        remaining = stream.unused_data
        if not remaining:
            return bytes(out)


_COMPRESSORS: dict[int, Callable[[Data], bytes]] = {
    GZIP: _gzip_compress,
    SNAPPY: _snappy_compress,
    LZ4: _lz4_compress,
    ZSTD: _zstd_compress,
}
_DECOMPRESSORS: dict[int, Callable[[Data], bytes]] = {
    GZIP: _gzip_decompress,
    SNAPPY: _snappy_decompress,
    LZ4: _lz4_decompress,
    ZSTD: _zstd_decompress,
}
