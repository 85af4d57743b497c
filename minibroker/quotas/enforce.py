"""Quota enforcement as Kafka's ClientQuotaManager and ClientRequestQuotaManager do it, per node.

Each request's client is named by its user (the principal's name) and client id; each kind of quota (produce bytes,
fetch bytes, request time) resolves to the most specific configured entity in Kafka's order (user and client id,
user and default client id, user, default user and client id, default user and default client id, default user,
client id, default client id). Clients that meet a default share nothing: each is measured on its own, as Kafka's
metric tags keep the actual names. New connections are measured per address against the address's
``connection_creation_rate``, else the default IP's (Kafka's ConnectionQuotas). A rate is what Kafka's Rate
measures: the total over ``quota.window.num`` samples of ``quota.window.size.seconds``, divided by the time they
span (at least all but one full samples). A recording that takes the rate above the quota is throttled
``(rate - quota) / quota * window`` ms, all on the broker's clock.
"""

from __future__ import annotations

from typing import Callable

from minibroker.quotas.store import CLIENT_ID, CONNECTIONS, FETCH, IP, PRODUCE, REQUEST, USER, Entity, QuotaStore

# ClientRequestQuotaManager's exempt APIs that reach a broker's client listeners: the handshake ones.
EXEMPT_APIS = frozenset({17, 18, 36})  # SaslHandshake, ApiVersions, SaslAuthenticate


Names = tuple[str, ...]  # who a rate is of: (user, client id) for client quotas, (address,) for IP quotas
Candidates = Callable[..., list[tuple[Entity, Names]]]


def candidates(user: str, client_id: str) -> list[tuple[Entity, Names]]:
    """Kafka's DefaultQuotaCallback order: each configured entity that could apply, with the metric tags (user,
    client id) that name whose rate it measures."""
    return [
        (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
        (((CLIENT_ID, None), (USER, user)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
        (((CLIENT_ID, None), (USER, None)), (user, client_id)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client_id),), ("", client_id)),
        (((CLIENT_ID, None),), ("", client_id)),
    ]


class Rate:
    """Kafka's Rate over SampledStat samples: a value per window, the oldest reused once it is too old."""

    __slots__ = ("samples", "window_ms", "count")

    def __init__(self, count: int, window_ms: int) -> None:
        self.samples: list[list[float]] = []  # [window start ms, total]
        self.window_ms = window_ms
        self.count = count

    def record(self, value: float, now_ms: int) -> None:
        self.purge(now_ms)
        if self.samples and now_ms < self.samples[-1][0] + self.window_ms:
            self.samples[-1][1] += value
        else:
            self.samples.append([now_ms, value])
            if len(self.samples) > self.count:
                del self.samples[0]

    def purge(self, now_ms: int) -> None:
        expiry = self.count * self.window_ms
        self.samples = [sample for sample in self.samples if now_ms - sample[0] < expiry]

    def window_size_ms(self, now_ms: int) -> float:
        """Rate.windowSize: the time the samples span, at least ``count - 1`` full windows."""
        self.purge(now_ms)
        elapsed = now_ms - self.samples[0][0] if self.samples else 0
        full = elapsed // self.window_ms
        if full < self.count - 1:
            elapsed += (self.count - 1 - full) * self.window_ms
        return float(elapsed)

    def per_second(self, now_ms: int) -> float:
        window = self.window_size_ms(now_ms)
        return sum(total for _, total in self.samples) / (window / 1000) if window > 0 else 0.0


def ip_candidates(address: str) -> list[tuple[Entity, Names]]:
    """Kafka's ConnectionQuotas: the address's own quota, else the default IP quota, each measured per address."""
    return [(((IP, address),), (address,)), (((IP, None),), (address,))]


class QuotaManager:
    """One node's rates of one kind of quota (``key``: a QuotaStore key), by metric tags; ``find`` lists the
    entities that may set it for a client's names, most specific first."""

    def __init__(self, store: QuotaStore, key: str, count: int, window_ms: int, find: Candidates = candidates) -> None:
        self.store = store
        self.key = key
        self.count = count
        self.window_ms = window_ms
        self.find = find
        self.rates: dict[Names, Rate] = {}
        self._resolved: dict[Names, tuple[Names, float] | None] = {}
        self._version = -1

    def resolve(self, *names: str) -> tuple[Names, float] | None:
        """The metric tags and quota that apply to this client, or None when none does."""
        if self._version != self.store.version:
            self._resolved.clear()
            self._version = self.store.version
        if names not in self._resolved:
            found = None
            quotas = self.store.quotas
            for entity, tags in self.find(*names):
                value = quotas.get(entity, {}).get(self.key)
                if value is not None:
                    found = (tags, value)
                    break
            self._resolved[names] = found
        return self._resolved[names]

    def record(self, names: Names, value: float, now_ms: int) -> int:
        """Record ``value`` for the client; the throttle time (ms) it earned, 0 when within its quota."""
        resolved = self.resolve(*names)
        if resolved is None:
            return 0
        tags, quota = resolved
        rate = self.rates.get(tags)
        if rate is None:
            rate = self.rates[tags] = Rate(self.count, self.window_ms)
        rate.record(value, now_ms)
        observed = rate.per_second(now_ms)
        if observed <= quota:
            return 0
        return round((observed - quota) / quota * rate.window_size_ms(now_ms))

    def unrecord(self, names: Names, value: float, now_ms: int) -> None:
        """Take back a recording whose data was not sent (a throttled Fetch answers empty)."""
        resolved = self.resolve(*names)
        if resolved is not None and resolved[0] in self.rates:
            self.rates[resolved[0]].record(-value, now_ms)


class NodeQuotas:
    """A node's quota managers: produce bytes, fetch bytes, request time (percent of one thread), new connections
    per address."""

    def __init__(self, store: QuotaStore, count: int, window_ms: int) -> None:
        self.produce = QuotaManager(store, PRODUCE, count, window_ms)
        self.fetch = QuotaManager(store, FETCH, count, window_ms)
        self.request = QuotaManager(store, REQUEST, count, window_ms)
        self.connections = QuotaManager(store, CONNECTIONS, count, window_ms, ip_candidates)


class Quotas:
    """The broker's quotas: the store, and each node's managers (with ``--nodes N`` every node enforces them on
    its own, as each Kafka broker does). ``active`` is False while nothing is configured: requests then pay only
    that check."""

    def __init__(self, store: QuotaStore, count: int = 11, window_seconds: int = 1) -> None:
        self.store = store
        self.count = count
        self.window_ms = window_seconds * 1000
        self.nodes: dict[int, NodeQuotas] = {}
        self.active = bool(store.quotas)

    def changed(self) -> None:
        """The store changed (AlterClientQuotas, reset, restore); with no quota left, so do the rates measured."""
        self.active = bool(self.store.quotas)
        if not self.active:
            self.nodes.clear()

    def node(self, node_id: int) -> NodeQuotas:
        managers = self.nodes.get(node_id)
        if managers is None:
            managers = self.nodes[node_id] = NodeQuotas(self.store, self.count, self.window_ms)
        return managers


def names(principal: str, client_id: str | None) -> Names:
    """The quota user (the principal's name, without its type) and client id of a request."""
    return principal.partition(":")[2], client_id or ""
