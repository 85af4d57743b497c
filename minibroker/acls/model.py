"""ACL bindings and filters with Kafka's codes and matching rules (AclBinding, AclBindingFilter,
ResourcePatternFilter, AccessControlEntryFilter), and the checks Kafka makes of new bindings.

Codes a request may carry that Kafka's enums do not know (0, or out of range) read as UNKNOWN, and Kafka's request
classes refuse those: ``unknown_code`` finds them so the handler can refuse the request as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.acls.operations import (
    ALL,
    ALTER,
    ALTER_CONFIGS,
    ANY,
    CLUSTER,
    CLUSTER_NAME,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    READ,
    WRITE,
)
from minibroker.acls.operations import NAMES as OPERATION_NAMES

RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
MATCH, LITERAL, PREFIXED = 2, 3, 4
DENY, ALLOW = 2, 3
WILDCARD = "*"  # a LITERAL resource name, host or principal name matching every one
WILDCARD_PRINCIPAL = "User:*"
IMPLY_DESCRIBE = frozenset((READ, WRITE, DELETE, ALTER))


@dataclass(frozen=True, slots=True)
class Acl:
    """One binding: a resource pattern and an access control entry."""

    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def describe(self) -> str:
        return (
            f"{PERMISSION_TYPES[self.permission]} {self.principal} {OPERATION_NAMES[self.operation]} from {self.host} "
            f"on {RESOURCE_TYPES[self.resource_type]}:{PATTERN_TYPES[self.pattern_type]}:{self.name}"
        )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A filter of bindings; None matches any name, principal or host, ANY any code."""

    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, acl: Acl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: Acl) -> bool:
        """ResourcePatternFilter.matches: MATCH finds every pattern that would apply to the named resource."""
        if self.resource_type != ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (ANY, MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (ANY, acl.pattern_type):
            return self.name == acl.name
        if acl.pattern_type == LITERAL:
            return self.name == acl.name or acl.name == WILDCARD
        return self.name.startswith(acl.name)

    def _matches_entry(self, acl: Acl) -> bool:
        """AccessControlEntryFilter.matches."""
        return (
            (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and (self.operation == ANY or self.operation == acl.operation)
            and (self.permission == ANY or self.permission == acl.permission)
        )


def unknown_code(resource_type: int, pattern_type: int, operation: int, permission: int) -> bool:
    """Whether a code reads as Kafka's UNKNOWN (0 or not a code of its enum)."""
    return (
        RESOURCE_TYPES.get(resource_type, "UNKNOWN") == "UNKNOWN"
        or PATTERN_TYPES.get(pattern_type, "UNKNOWN") == "UNKNOWN"
        or OPERATION_NAMES.get(operation, "UNKNOWN") == "UNKNOWN"
        or PERMISSION_TYPES.get(permission, "UNKNOWN") == "UNKNOWN"
    )


def creation_problem(acl: Acl) -> str | None:
    """Why Kafka refuses to create this binding with INVALID_REQUEST (AclApis, then AclControlManager.validateNewAcl),
    or None. A principal must be TYPE:NAME (SecurityUtils.parseKafkaPrincipal's rule)."""
    if acl.resource_type == CLUSTER and acl.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.name:
        return "Invalid empty resource name"
    if acl.resource_type == ANY:
        return "Invalid resourceType ANY"
    if acl.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {PATTERN_TYPES[acl.pattern_type]}"
    if acl.operation == ANY:
        return "Invalid operation ANY"
    if acl.permission not in (DENY, ALLOW):
        return f"Invalid permissionType {PERMISSION_TYPES[acl.permission]}"
    if ":" not in acl.principal:
        return f"expected a string in format principalType:principalName but got {acl.principal}"
    return None


def implies(acl_operation: int, operation: int) -> bool:
    """Whether an ALLOW of ``acl_operation`` allows ``operation``: ALL allows everything, READ, WRITE, DELETE and ALTER
    imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS (StandardAuthorizerData.findResult)."""
    if acl_operation == ALL or acl_operation == operation:
        return True
    if operation == DESCRIBE:
        return acl_operation in IMPLY_DESCRIBE
    return operation == DESCRIBE_CONFIGS and acl_operation == ALTER_CONFIGS

# Kafka's messages of the authorization errors (Errors.java), for answers that carry one.
TOPIC_DENIED = "Topic authorization failed."
GROUP_DENIED = "Group authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."
TRANSACTIONAL_ID_DENIED = "Transactional Id authorization failed."
