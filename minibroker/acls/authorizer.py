"""Kafka's StandardAuthorizer: which principal, from which host, may do which operation on which resource.

The rules (StandardAuthorizerData): super users may do anything; otherwise the bindings that apply to the resource
are its LITERAL ones, the LITERAL ``*`` one and the PREFIXED ones whose name starts the resource's. A DENY of the
operation (or ALL) for the principal (or ``User:*``) and host (or ``*``) wins; else an ALLOW does (READ, WRITE,
DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS, ALL everything); else, when some binding
applies to the resource, whoever it names, the answer is no; with none at all it is
``allow.everyone.if.no.acl.found``.

A check must cost the request path next to nothing, so bindings are indexed by (resource type, name) for LITERAL and
by resource type, then name, for PREFIXED, and only the prefix lengths that exist are looked up: a decision is a few
dict lookups whatever the number of bindings. Decisions are also remembered until the bindings change, so the
common case (the same producer writing the same topic) is one lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from minibroker.acls.model import DENY, LITERAL, WILDCARD, WILDCARD_PRINCIPAL, Acl, implies
from minibroker.acls.operations import ALL, SUPPORTED, operation_bits

MAX_REMEMBERED = 100_000  # decisions kept; past that the memory starts over
HARDCODED_NAME = "hardcode"  # the name Kafka's authorizeByResourceType asks about first (super users)

Decision = tuple[str, str, int, int, str]


class Authorizer:
    def __init__(self, super_users: frozenset[str], allow_if_no_acl: bool, acls: Iterable[Acl] = ()) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self.acls: tuple[Acl, ...] = ()
        self._literal: dict[tuple[int, str], list[Acl]] = {}
        self._prefixed: dict[int, dict[str, list[Acl]]] = {}
        self._prefix_lengths: dict[int, tuple[int, ...]] = {}
        self._decisions: dict[Decision, bool] = {}
        self._denials_logged: set[tuple[str, int, int, str]] = set()
        self.replace(acls)

    def replace(self, acls: Iterable[Acl]) -> None:
        """Use these bindings from now on (after a change, or at start-up)."""
        self.acls = tuple(acls)
        literal: dict[tuple[int, str], list[Acl]] = {}
        prefixed: dict[int, dict[str, list[Acl]]] = {}
        for acl in self.acls:
            if acl.pattern_type == LITERAL:
                literal.setdefault((acl.resource_type, acl.name), []).append(acl)
            else:
                prefixed.setdefault(acl.resource_type, {}).setdefault(acl.name, []).append(acl)
        self._literal, self._prefixed = literal, prefixed
        self._prefix_lengths = {kind: tuple(sorted({len(name) for name in names})) for kind, names in prefixed.items()}
        self._decisions = {}

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= MAX_REMEMBERED:
                self._decisions = {}
            self._decisions[key] = decision
        return decision

    def first_denial(self, principal: str, operation: int, resource_type: int, name: str) -> bool:
        """True the first time a denial of this principal, operation and resource is reported: it is logged once."""
        key = (principal, operation, resource_type, name)
        if key in self._denials_logged:
            return False
        if len(self._denials_logged) >= MAX_REMEMBERED:
            self._denials_logged.clear()
        self._denials_logged.add(key)
        return True

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """KIP-430's bit field: the operations the resource supports that the principal may do on it."""
        return operation_bits(*(
            operation for operation in SUPPORTED[resource_type]
            if self.authorize(principal, host, operation, resource_type, name)
        ))

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Kafka's Authorizer.authorizeByResourceType: whether some resource of this type may be the object of the
        operation (an ALLOW of the operation or ALL that no DENY covers). InitProducerId asks it of WRITE on topics."""
        if self.authorize(principal, host, operation, resource_type, HARDCODED_NAME):
            return True
        denied_literal, denied_prefixes, allowed = set(), set(), []
        for acl in self.acls:
            if acl.resource_type != resource_type or acl.host not in (host, WILDCARD):
                continue
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.operation not in (operation, ALL):
                continue
            if acl.permission == DENY:
                if acl.pattern_type == LITERAL and acl.name == WILDCARD:
                    return False
                (denied_literal if acl.pattern_type == LITERAL else denied_prefixes).add(acl.name)
            elif acl.pattern_type == LITERAL and acl.name == WILDCARD:
                return True
            else:
                allowed.append(acl)
        for acl in allowed:
            if acl.pattern_type == LITERAL and acl.name in denied_literal:
                continue
            if not any(acl.name[:length] in denied_prefixes for length in range(1, len(acl.name) + 1)):
                return True
        return False

    def _decide(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        applies = allowed = False
        for acl in self._applying(resource_type, name):
            applies = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != host and acl.host != WILDCARD:
                continue
            if acl.permission == DENY:
                if acl.operation == operation or acl.operation == ALL:
                    return False
            elif implies(acl.operation, operation):
                allowed = True
        return allowed if applies else self.allow_if_no_acl

    def _applying(self, resource_type: int, name: str) -> Iterator[Acl]:
        """The bindings whose pattern covers the resource: LITERAL name, LITERAL ``*``, and PREFIXED prefixes."""
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        by_prefix = self._prefixed.get(resource_type)
        if by_prefix:
            for length in self._prefix_lengths[resource_type]:
                if length > len(name):
                    break
                yield from by_prefix.get(name[:length], ())
