"""The versions of the internal-topic records each Apache Kafka release wrote (the setting ``kafka.version``), so the
``__consumer_offsets`` and ``__transaction_state`` records of an emulated release are the bytes tools built against
it read (Burrow, older kafka-consumer-groups, offset exporters decode these values themselves and give up on a
version they do not know).

Each entry caps a value schema at the newest version the release wrote; a writer writes the lower of its own choice
and the cap, so what depends on the value itself (an offset commit with an expire timestamp is version 1) or on a
feature (TransactionLogValue 1 needs transaction.version 1) still does. Read off Kafka's source: up to 3.x
GroupMetadataManager with the release's default inter.broker.protocol.version through MetadataVersion's
offsetCommitValueVersion (3 from 2.1-IV1) and groupMetadataValueVersion (2 from 2.1-IV0, 3 from 2.3-IV0); 4.0's
GroupCoordinatorRecordHelpers (GroupMetadataValue 3, OffsetCommitValue 3, "the highest non-flexible version"), 4.1
writing OffsetCommitValue 4 (flexible, the topic id tagged); TransactionLog.valueToBytes (version 0 before 4.0,
then TransactionVersion's transactionLogValueVersion). Releases are written as changes, like kafka_versions.
Reading accepts every version whatever is emulated: a log written by another release (or without emulation) loads.
"""

from __future__ import annotations

from minibroker.config.releases import release_number, resolve

VersionCaps = dict[str, int]  # value schema name -> the newest version written

CAP_CHANGES: tuple[tuple[str, VersionCaps], ...] = (
    ("2.1", {"OffsetCommitValue": 3, "GroupMetadataValue": 2, "TransactionLogValue": 0}),
    ("2.3", {"GroupMetadataValue": 3}),
    ("4.0", {"TransactionLogValue": 1}),
    ("4.1", {"OffsetCommitValue": 4}),
)


def written_versions(text: str) -> VersionCaps:
    """The caps of the release ``text`` names (see kafka_versions.resolve)."""
    release = release_number(resolve(text))
    caps: VersionCaps = {}
    for name, changes in CAP_CHANGES:
        if release_number(name) <= release:
            caps |= changes
    return caps
