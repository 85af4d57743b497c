"""The order in which Java's HashMap and HashSet of strings iterate, which decides the order of Confluent's
JSON Schema incompatibility messages (its property, dependency and keyword sets are hash sets)."""

from __future__ import annotations

from collections.abc import Iterable


def string_hash(text: str) -> int:
    """Java's `String.hashCode` (over UTF-16 code units), spread as HashMap spreads it."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashSet:
    """A HashMap's buckets: insertion order within a bucket, doubled at 3/4 full keeping that order."""

    def __init__(self, capacity: int = 16) -> None:
        self.capacity = 1 << max(capacity - 1, 0).bit_length() if capacity > 1 else 1
        self.buckets: list[list[str]] = [[] for _ in range(self.capacity)]
        self.size = 0

    @classmethod
    def copy_of(cls, keys: list[str]) -> JavaHashSet:
        """`new HashSet<>(collection)` / `new HashMap<>(map)`: sized for the source, filled in its order."""
        made = cls(max(int(len(keys) / 0.75) + 1, 16))
        made.add_all(keys)
        return made

    def add_all(self, keys: Iterable[str]) -> JavaHashSet:
        for key in keys:
            self.add(key)
        return self

    def add(self, key: str) -> None:
        bucket = self.buckets[string_hash(key) & (self.capacity - 1)]
        if key in bucket:
            return
        bucket.append(key)
        self.size += 1
        if self.size > self.capacity * 0.75:
            old, self.capacity = self.buckets, self.capacity * 2
            self.buckets = [[] for _ in range(self.capacity)]
            for chain in old:
                for k in chain:
                    self.buckets[string_hash(k) & (self.capacity - 1)].append(k)

    def __iter__(self):
        for chain in self.buckets:
            yield from chain


def hash_order(keys: Iterable[str]) -> list[str]:
    """The keys as a default `HashMap`/`HashSet` filled in this order iterates them."""
    return list(JavaHashSet().add_all(keys))


def key_union_order(original: Iterable[str], update: Iterable[str]) -> list[str]:
    """`new HashSet<>(original.keySet())` then `addAll(update.keySet())`, each key set a copied HashMap of
    keys inserted in document order, as Confluent's ObjectSchemaDiff walks properties and dependencies."""
    first = list(JavaHashSet.copy_of(hash_order(original)))
    second = list(JavaHashSet.copy_of(hash_order(update)))
    return list(JavaHashSet.copy_of(first).add_all(second))


def map_order(keys: Iterable[str]) -> list[str]:
    """A schema's property map (built in document order, then copied) as Java iterates it."""
    return list(JavaHashSet.copy_of(hash_order(keys)))
