"""Request handlers, one module per API family, and the handler table: each API's versions and module.

The table is declared here so that the broker knows what it serves (and ApiVersions can say so) without importing
a handler module; ``Handler.fn`` imports one on the first request of one of its APIs. Each module still registers
its functions with ``@api(key, min, max)``, and a test checks that what they register is this table.
"""

from minibroker.handlers.registry import Handler

TABLE: dict[int, tuple[int, int, str]] = {
    0: (3, 13, "produce"),  # produce
    1: (4, 18, "fetch"),  # fetch
    2: (1, 11, "fetch"),  # list_offsets
    3: (0, 13, "metadata"),  # metadata
    8: (2, 10, "groups"),  # offset_commit
    9: (1, 10, "groups"),  # offset_fetch
    10: (0, 6, "groups"),  # find_coordinator
    11: (0, 9, "groups"),  # join_group
    12: (0, 4, "groups"),  # heartbeat
    13: (0, 5, "groups"),  # leave_group
    14: (0, 5, "groups"),  # sync_group
    15: (0, 6, "groups"),  # describe_groups
    16: (0, 5, "groups"),  # list_groups
    17: (0, 1, "sasl"),  # sasl_handshake
    18: (0, 4, "metadata"),  # api_versions
    19: (2, 7, "admin"),  # create_topics
    20: (1, 6, "admin"),  # delete_topics
    21: (0, 2, "admin"),  # delete_records
    22: (0, 5, "transactions"),  # init_producer_id
    23: (2, 4, "fetch"),  # offset_for_leader_epoch
    24: (0, 5, "transactions"),  # add_partitions_to_txn
    25: (0, 4, "transactions"),  # add_offsets_to_txn
    26: (0, 5, "transactions"),  # end_txn
    27: (1, 2, "transactions"),  # write_txn_markers
    28: (0, 5, "groups"),  # txn_offset_commit
    29: (1, 3, "acls"),  # describe_acls
    30: (1, 3, "acls"),  # create_acls
    31: (1, 3, "acls"),  # delete_acls
    32: (1, 4, "admin"),  # describe_configs
    33: (0, 2, "admin"),  # alter_configs
    34: (1, 2, "log_dirs"),  # alter_replica_log_dirs
    35: (1, 5, "log_dirs"),  # describe_log_dirs
    36: (0, 2, "sasl"),  # sasl_authenticate
    37: (0, 3, "admin"),  # create_partitions
    42: (0, 2, "groups"),  # delete_groups
    43: (0, 2, "reassignments"),  # elect_leaders
    44: (0, 1, "admin"),  # incremental_alter_configs
    45: (0, 1, "reassignments"),  # alter_partition_reassignments
    46: (0, 0, "reassignments"),  # list_partition_reassignments
    47: (0, 0, "groups"),  # offset_delete
    48: (0, 1, "client_quotas"),  # describe_client_quotas
    49: (0, 1, "client_quotas"),  # alter_client_quotas
    50: (0, 0, "scram_users"),  # describe_user_scram_credentials
    51: (0, 0, "scram_users"),  # alter_user_scram_credentials
    57: (0, 2, "features"),  # update_features
    60: (0, 2, "metadata"),  # describe_cluster
    61: (0, 0, "transactions"),  # describe_producers
    65: (0, 0, "transactions"),  # describe_transactions
    66: (0, 2, "transactions"),  # list_transactions
    68: (0, 1, "groups"),  # consumer_group_heartbeat
    69: (0, 1, "groups"),  # consumer_group_describe
    75: (0, 0, "describe_topics"),  # describe_topic_partitions
    76: (1, 1, "share_groups"),  # share_group_heartbeat
    77: (1, 1, "share_groups"),  # share_group_describe
    78: (1, 2, "share"),  # share_fetch
    79: (1, 2, "share"),  # share_acknowledge
    90: (0, 1, "share_offsets"),  # describe_share_group_offsets
    91: (0, 0, "share_offsets"),  # alter_share_group_offsets
    92: (0, 0, "share_offsets"),  # delete_share_group_offsets
}
"""API key -> (min version, max version, module in this package)."""

OLDEST: dict[int, int] = {
    0: 0, 1: 0, 2: 0, 8: 0, 9: 0, 19: 0, 20: 0, 23: 0, 27: 0, 29: 0, 30: 0, 31: 0, 32: 0, 34: 0, 35: 0,
}
"""API key -> the oldest version its handler serves when an older release is emulated (``kafka.version``), where
that is below the table's minimum: the versions Kafka 4 removed (KIP-896), answered as that release answered them,
and never advertised or served without ``kafka.version``. The handler modules say the same with ``@api(oldest=)``."""

HANDLERS: dict[int, Handler] = {
    key: Handler(key, low, high, f"{__name__}.{module}") for key, (low, high, module) in TABLE.items()
}

__all__ = ["HANDLERS", "OLDEST", "TABLE"]
