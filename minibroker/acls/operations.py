"""Kafka's AclOperation codes, and the operations each kind of resource supports (AclEntry.supportedOperations).

Answers that carry authorized operations (KIP-430: Metadata, DescribeCluster, DescribeGroups, ConsumerGroupDescribe)
are bit fields of these codes; with no authorizer every operation a resource supports is authorized, with one the
bits are those it allows (``minibroker.acls.authorizer``).
"""

from __future__ import annotations

UNKNOWN, ANY, ALL = 0, 1, 2
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = (
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)
CREATE_TOKENS, DESCRIBE_TOKENS = 13, 14
NAMES = {
    UNKNOWN: "UNKNOWN", ANY: "ANY", ALL: "ALL", READ: "READ", WRITE: "WRITE", CREATE: "CREATE", DELETE: "DELETE",
    ALTER: "ALTER", DESCRIBE: "DESCRIBE", CLUSTER_ACTION: "CLUSTER_ACTION", DESCRIBE_CONFIGS: "DESCRIBE_CONFIGS",
    ALTER_CONFIGS: "ALTER_CONFIGS", IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE", CREATE_TOKENS: "CREATE_TOKENS",
    DESCRIBE_TOKENS: "DESCRIBE_TOKENS",
}
NO_AUTHORIZED_OPERATIONS = -(1 << 31)  # the answer's default: the client did not ask

# Resource types (org.apache.kafka.common.resource.ResourceType).
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7
CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource


def operation_bits(*operations: int) -> int:
    return sum(1 << operation for operation in operations)


SUPPORTED = {
    TOPIC: (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    TRANSACTIONAL_ID: (DESCRIBE, WRITE),
    DELEGATION_TOKEN: (DESCRIBE,),
    USER: (CREATE_TOKENS, DESCRIBE_TOKENS),
}
TOPIC_OPERATIONS = operation_bits(*SUPPORTED[TOPIC])
CLUSTER_OPERATIONS = operation_bits(*SUPPORTED[CLUSTER])
GROUP_OPERATIONS = operation_bits(*SUPPORTED[GROUP])
