"""Which partition of an internal topic holds a group id or a transactional id: Kafka's ``partitionFor``.

Kept apart from the record formats so the broker can place coordinator keys without importing them at start-up.
"""

from __future__ import annotations

from functools import lru_cache

_INT_MIN = -(1 << 31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        value = (31 * value + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=65536)
def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % partitions`` (``Utils.abs(Integer.MIN_VALUE)`` is 0); cached, as
    coordinators ask for the same few ids on every request."""
    hash_code = java_string_hash(group_id)
    return (0 if hash_code == _INT_MIN else abs(hash_code)) % partitions
