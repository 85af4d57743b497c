"""CRC-32C (Castagnoli) for record batches and snapshots, with the ``crc32c`` package imported on first use.

That package's ``__init__`` looks up its own version through ``importlib.metadata``, which costs a fresh
process more (20-30 ms) than all of ``protocol`` together; a broker only needs a CRC once data arrives.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_compute: Callable[[bytes | bytearray | memoryview], int] | None = None


def _load_extension() -> Callable[[bytes | bytearray | memoryview], int]:
    """The package's C extension loaded on its own, skipping the package ``__init__`` (importlib.metadata,
    email, datetime...: 20-40 ms of the broker's first Produce); the regular import if that fails."""
    import importlib.util
    import sys

    try:
        module = sys.modules.get("crc32c._crc32c")
        if module is None:
            package = importlib.util.find_spec("crc32c")
            for directory in (package.submodule_search_locations or []) if package is not None else []:
                for name in sorted(os.listdir(directory)):
                    if name.startswith("_crc32c.") and name.endswith(".so"):
                        spec = importlib.util.spec_from_file_location("crc32c._crc32c", os.path.join(directory, name))
                        module = importlib.util.module_from_spec(spec)
                        spec.loader.exec_module(module)
                        break
                if module is not None:
                    break
        if module is not None:
            return module.crc32c
    except (ImportError, OSError, AttributeError):
        pass
    from crc32c import crc32c as compute

    return compute


def crc32c(data: bytes | bytearray | memoryview) -> int:
    global _compute
    if _compute is None:
        _compute = _load_extension()
    return _compute(data)
