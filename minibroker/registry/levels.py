"""Compatibility levels as Confluent's `SchemaValidatorBuilder` applies them, the same for every schema type:
NONE checks nothing, BACKWARD/FORWARD/FULL the newest previous version, their _TRANSITIVE forms every previous
version newest first, stopping at the first that fails. What one pair of schemas fails is the type's business."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")

Previous = TypeVar("Previous")


def incompatibilities(
    level: str, previous: Sequence[Previous], check: Callable[[str, Previous], list[str]],
) -> list[str]:
    """The messages of the first of `previous` (oldest first) that `check` (given the mode: BACKWARD, FORWARD or
    FULL) fails at `level`; empty when the new schema may follow them all."""
    if level not in LEVELS:
        raise ValueError(f"Invalid compatibility level {level}")
    if level == "NONE":
        return []
    mode = level.removesuffix("_TRANSITIVE")
    for old in reversed(previous) if mode != level else previous[-1:]:
        messages = check(mode, old)
        if messages:
            return messages
    return []
