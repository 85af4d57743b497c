"""The storage layer's clock: milliseconds since the epoch, injectable (tests pass their own)."""

from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000
