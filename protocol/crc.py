"""CRC-32C (Castagnoli) for record batches and snapshots, with the ``crc32c`` package imported on first use.

That package's ``__init__`` looks up its own version through ``importlib.metadata``, which costs a fresh
process more (20-30 ms) than all of ``protocol`` together; a broker only needs a CRC once data arrives.
"""

from __future__ import annotations

from collections.abc import Callable

_compute: Callable[[bytes | bytearray | memoryview], int] | None = None


def crc32c(data: bytes | bytearray | memoryview) -> int:
    global _compute
    if _compute is None:
        from crc32c import crc32c as compute

        _compute = compute
    return _compute(data)
