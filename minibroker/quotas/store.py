"""The client quotas AlterClientQuotas sets and DescribeClientQuotas reads, checked by Kafka's rules
(ClientQuotaControlManager): an entity is a user, a client id, both, or an IP; a null name is that type's default.

Kafka keeps them as ClientQuotaRecords of its metadata log; here they are one small JSON file in the data directory,
rewritten whole on each change (a crash leaves the old set or the new one).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable

from minibroker.protocol.errors import ErrorCode
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

FILE_NAME = "client-quotas.json"
FORMAT_VERSION = 1
USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
CONNECTIONS = "connection_creation_rate"
# QuotaConfig's keys and their types: integral ones must be whole numbers.
CLIENT_KEYS = {PRODUCE: "LONG", FETCH: "LONG", REQUEST: "DOUBLE", "controller_mutation_rate": "DOUBLE"}
IP_KEYS = {CONNECTIONS: "INT"}
INTEGRAL_LIMITS = {"SHORT": (2**15 - 1, "a SHORT"), "INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs sorted by type; name None: the default
Result = tuple[list[dict[str, Any]], ErrorCode, str | None]  # an AlterClientQuotas entry's entity, error, message


class QuotaError(Exception):
    """A request Kafka refuses: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def invalid(message: str) -> QuotaError:
    return QuotaError(ErrorCode.INVALID_REQUEST, message)


def entity_text(entity: Entity) -> str:
    """As Kafka's ClientQuotaEntity prints itself, for messages."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def valid_ip(name: str | None) -> bool:
    """Kafka's isValidIpEntity: InetAddress.getByName succeeds (an address, or a name that resolves)."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        import socket

        try:
            socket.getaddrinfo(name, None)
            return True
        except (OSError, UnicodeError):
            return False


def check_entity(pairs: list[tuple[str, str | None]]) -> tuple[Entity, dict[str, str]]:
    """The entity and its allowed keys (name -> type); QuotaError as Kafka's validateEntity and
    configKeysForEntityType answer."""
    if not pairs:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for entity_type, name in pairs:
        if entity_type in seen:
            raise invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if IP in seen:
        if len(seen) > 1:
            raise QuotaError(ErrorCode.INVALID_REQUEST,
                             "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        if not valid_ip(seen[IP]):
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{seen[IP]} is not a valid IP or resolvable host.")
        return tuple(sorted(seen.items())), IP_KEYS
    return tuple(sorted(seen.items())), CLIENT_KEYS


def check_value(keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if kind in INTEGRAL_LIMITS:
        limit, article = INTEGRAL_LIMITS[kind]
        if value > limit:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for {article}.")
        if abs(value % 1.0) > 1e-6:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")


class QuotaStore:
    """Every entity's quotas, kept in ``path`` (None: in memory only). ``version`` grows with each change, so what
    is derived from the quotas (each client's resolved limits) knows when to look again."""

    def __init__(self, path: StrPath | None = None) -> None:
        self.path = path
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.version = 0
        self.reload()

    def reload(self) -> None:
        """Read the file again (start-up, a restored snapshot); ValueError or OSError when it cannot be read."""
        stored = read_json(self.path) if self.path is not None else None
        self.quotas = {}
        for item in (stored or {}).get("entities", []):
            entity = tuple(sorted((t, n) for t, n in item["entity"]))
            self.quotas[entity] = {key: float(value) for key, value in item["quotas"].items()}
        self.version += 1

    def clear(self) -> bool:
        """Forget every quota (the control API's reset); whether there were any."""
        had = bool(self.quotas)
        if had:
            self.quotas = {}
            self._save()
        return had

    def alter(self, entries: Iterable[dict[str, Any]], validate_only: bool) -> list[Result]:
        """Apply AlterClientQuotas' entries, each checked on its own as Kafka's controller checks it: per entry its
        request entity, error and message. Stored before returning (OSError when it cannot be)."""
        results: list[Result] = []
        changes: dict[Entity, dict[str, float | None]] = {}
        for entry in entries:
            pairs = [(item["entity_type"], item["entity_name"]) for item in entry["entity"]]
            try:
                entity, keys = check_entity(pairs)
                if entity in changes:
                    raise QuotaError(ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}")
                ops: dict[str, float | None] = {}
                for op in entry["ops"]:
                    if op["key"] in ops:
                        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}")
                    ops[op["key"]] = None if op["remove"] else op["value"]
                for key, value in ops.items():
                    if value is not None:
                        check_value(keys, key, value)
                changes[entity] = ops
                results.append((entry["entity"], ErrorCode.NONE, None))
            except QuotaError as exc:
                results.append((entry["entity"], exc.code, str(exc)))
        if changes and not validate_only:
            updated = {entity: dict(values) for entity, values in self.quotas.items()}
            for entity, ops in changes.items():
                values = updated.setdefault(entity, {})
                for key, value in ops.items():
                    if value is None:
                        values.pop(key, None)
                    else:
                        values[key] = value
                if not values:
                    del updated[entity]
            if updated != self.quotas:
                previous = self.quotas
                self.quotas = updated
                try:
                    self._save()
                except OSError:
                    self.quotas = previous
                    raise
                self.version += 1
        return results

    def describe(self, components: list[dict[str, Any]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities DescribeClientQuotas' filter matches; QuotaError for a filter Kafka refuses."""
        exact: dict[str, str | None] = {}
        any_name: set[str] = set()
        for component in components:
            entity_type = component["entity_type"]
            if not entity_type:
                raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if entity_type in exact or entity_type in any_name:
                raise invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in ENTITY_TYPES:
                raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
            match_type, match = component["match_type"], component["match"]
            if match_type == MATCH_EXACT:
                if match is None:
                    raise invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[entity_type] = None
            elif match_type == MATCH_ANY:
                if match is not None:
                    raise invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                any_name.add(entity_type)
            else:
                raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        if (IP in exact or IP in any_name) and ({USER, CLIENT_ID} & (exact.keys() | any_name)):
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                             "component should not be used with user or clientId filter component.")
        found = []
        for entity, values in self.quotas.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(any_name):
                continue
            if all(t in names and names[t] == n for t, n in exact.items()) and all(t in names for t in any_name):
                found.append((entity, dict(values)))
        return found

    def _save(self) -> None:
        if self.path is None:
            return
        document = {"version": FORMAT_VERSION, "entities": [
            {"entity": [list(pair) for pair in entity], "quotas": values} for entity, values in sorted(
                self.quotas.items(), key=lambda item: [(t, n or "") for t, n in item[0]])
        ]}
        write_json_atomically(self.path, document, indent=1, sort_keys=True)
