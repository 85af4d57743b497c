"""Kafka's AclOperation codes, and the operations each kind of resource supports (AclEntry.supportedOperations).

Answers that carry authorized operations (KIP-430: Metadata, DescribeCluster, DescribeGroups, ConsumerGroupDescribe)
are bit fields of these codes; with no authorizer, as here, every operation a resource supports is authorized.
"""

from __future__ import annotations

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = (
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)
NO_AUTHORIZED_OPERATIONS = -(1 << 31)  # the answer's default: the client did not ask


def operation_bits(*operations: int) -> int:
    return sum(1 << operation for operation in operations)


TOPIC_OPERATIONS = operation_bits(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER_OPERATIONS = operation_bits(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
GROUP_OPERATIONS = operation_bits(READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
