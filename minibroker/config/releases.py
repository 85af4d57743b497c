"""Version emulation (the setting ``kafka.version``): what each Apache Kafka release's broker served in ApiVersions
(``minibroker.handlers.emulation`` sets the handler table to it), so clients meet the versions of the brokers they run against: the release's
ranges exactly, the versions Kafka 4 removed (KIP-896) included, for every API minibroker serves (capped only at
minibroker's own maximum, which no release exceeds).

Facts, each release written as its changes from the one before (API key -> (min, max) of every API it added or
whose range changed; ``removed``: keys it no longer served). They are read off Kafka's message definitions
(``validVersions``, ``listeners``, ``latestVersionUnstable``) at each release: the apache/kafka tags 2.2.0-3.9.0,
and the release commits of 4.0.0, 4.0.1, 4.1.0, 4.2.0 and 4.3.1; 2.1, older than those definitions, comes from franz-go's
``pkg/kversion`` (which agrees with the definitions of 2.2 and 2.3). A range is what Kafka's ApiVersions code made
of them: the broker listener's APIs, without a version marked unstable (advertised only with
unstable.api.versions.enable) and without the client-telemetry APIs (advertised only with a telemetry receiver).
One deliberate difference: 4.x advertises Produce from v0 but serves v3 and up (KIP-896; the v0 is a workaround for
old librdkafka, KAFKA-18659); the table holds what was served.

Which broker: the ZooKeeper-mode broker up to 3.2, the KRaft broker from 3.3, the release that made KRaft
production-ready (KIP-833); for the APIs minibroker serves the two modes advertised the same ranges. Left out: the
ZooKeeper-era cluster-internal APIs (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, AlterIsr,
Envelope, AllocateProducerIds) and 2.7's Raft APIs, defined but disabled. Patch releases served what their minor
release did, except where an entry says otherwise (4.0.1 took JoinGroup v0-1 back, KAFKA-19444).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from minibroker.config.settings import ConfigError

Ranges = dict[int, tuple[int, int]]


@dataclass(frozen=True)
class Release:
    name: str  # "3.5" (a minor release, its x.y.0) or "4.0.1" (a patch release that changed something)
    changed: Ranges
    removed: tuple[int, ...] = field(default=())


RELEASES: tuple[Release, ...] = (
    Release("2.1", {
        0: (0, 7), 1: (0, 10), 2: (0, 4), 3: (0, 7), 8: (0, 6), 9: (0, 5), 10: (0, 2), 11: (0, 3), 12: (0, 2),
        13: (0, 2), 14: (0, 2), 15: (0, 2), 16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 3), 21: (0, 1),
        22: (0, 1), 23: (0, 2), 24: (0, 1), 25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2), 29: (0, 1), 30: (0, 1),
        31: (0, 1), 32: (0, 2), 33: (0, 1), 34: (0, 1), 35: (0, 1), 36: (0, 0), 37: (0, 1), 38: (0, 1), 39: (0, 1),
        40: (0, 1), 41: (0, 1), 42: (0, 1),
    }),
    Release("2.2", {2: (0, 5), 11: (0, 4), 36: (0, 1), 43: (0, 0)}),
    Release("2.3", {1: (0, 11), 3: (0, 8), 8: (0, 7), 11: (0, 5), 12: (0, 3), 14: (0, 3), 15: (0, 3), 23: (0, 3), 44: (0, 0)}),
    Release("2.4", {
        0: (0, 8), 3: (0, 9), 8: (0, 8), 9: (0, 6), 10: (0, 3), 11: (0, 6), 12: (0, 4), 13: (0, 4), 14: (0, 4),
        15: (0, 5), 16: (0, 3), 18: (0, 3), 19: (0, 5), 20: (0, 4), 22: (0, 2), 38: (0, 2), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0),
    }),
    Release("2.5", {
        9: (0, 7), 11: (0, 7), 14: (0, 5), 22: (0, 3), 28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 36: (0, 2),
        37: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2),
    }),
    Release("2.6", {16: (0, 4), 21: (0, 2), 32: (0, 3), 35: (0, 2), 48: (0, 0), 49: (0, 0)}),
    Release("2.7", {
        1: (0, 12), 19: (0, 6), 20: (0, 5), 22: (0, 4), 24: (0, 2), 25: (0, 2), 26: (0, 2), 37: (0, 3), 50: (0, 0),
        51: (0, 0), 57: (0, 0),
    }),
    Release("2.8", {
        0: (0, 9), 2: (0, 6), 3: (0, 11), 19: (0, 7), 20: (0, 6), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3),
        27: (0, 1), 32: (0, 4), 33: (0, 2), 34: (0, 2), 48: (0, 1), 49: (0, 1), 60: (0, 0), 61: (0, 0),
    }),
    Release("3.0", {2: (0, 7), 9: (0, 8), 10: (0, 4), 65: (0, 0), 66: (0, 0)}),
    Release("3.1", {1: (0, 13), 3: (0, 12)}),
    Release("3.2", {11: (0, 9), 13: (0, 5), 35: (0, 3)}),
    Release(
        "3.3", {29: (0, 3), 30: (0, 3), 31: (0, 3), 35: (0, 4), 55: (0, 1), 57: (0, 1), 64: (0, 0)},
        removed=(38, 39, 40, 41, 50, 51),  # not on a KRaft broker yet (delegation tokens: 3.6, SCRAM admin: 3.5)
    ),
    Release("3.4", {}),
    Release("3.5", {1: (0, 15), 2: (0, 8), 50: (0, 0), 51: (0, 0)}),
    Release("3.6", {24: (0, 4), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3)}),
    Release("3.7", {0: (0, 10), 1: (0, 16), 8: (0, 9), 9: (0, 9), 60: (0, 1), 68: (0, 0), 74: (0, 0)}),
    Release("3.8", {
        0: (0, 11), 10: (0, 5), 16: (0, 5), 22: (0, 5), 24: (0, 5), 25: (0, 4), 26: (0, 4), 28: (0, 4), 66: (0, 1),
        69: (0, 0), 75: (0, 0),
    }),
    Release("3.9", {1: (0, 17), 2: (0, 9), 10: (0, 6), 18: (0, 4), 55: (0, 2), 80: (0, 0), 81: (0, 0)}),
    Release("4.0", {
        0: (3, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 11: (2, 9), 15: (0, 6), 19: (2, 7),
        20: (1, 6), 23: (2, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4),
        34: (1, 2), 35: (1, 4), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 57: (0, 2), 60: (0, 2), 68: (0, 1),
        69: (0, 1),
    }),
    Release("4.0.1", {11: (0, 9)}),
    Release("4.1", {
        0: (3, 13), 1: (4, 18), 45: (0, 1), 66: (0, 2), 74: (0, 1), 76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1),
        83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0), 90: (0, 0), 91: (0, 0), 92: (0, 0),
    }),
    Release("4.2", {
        2: (1, 11), 8: (2, 10), 9: (1, 10), 27: (1, 2), 78: (1, 2), 79: (1, 2), 80: (0, 1), 85: (0, 1), 87: (0, 1),
        88: (0, 0), 89: (0, 0), 90: (0, 1),
    }),
    Release("4.3", {35: (1, 5)}),
)

# SupportedFeatures of each release's broker, as changes like RELEASES, for the features minibroker announces
# (minibroker.cluster.features): none before 3.3 (a ZooKeeper-mode broker finalizes none), metadata.version up to the release's
# latest production level (MetadataVersion.LATEST_PRODUCTION; from 3.3-IV3 on in 4.x, 3.0-IV1 before),
# kraft.version from 3.9 (KIP-853), transaction.version and group.version from 4.0 (KIP-890, KIP-848; defined in 3.9
# but with no production level, so not advertised), eligible.leader.replicas.version from 4.1 (KIP-966), share.version
# from 4.1 (KIP-932's preview: ShareVersion.SV_1 its latest production level, apache/kafka#19831).
FEATURE_CHANGES: tuple[tuple[str, dict[str, tuple[int, int]]], ...] = (
    ("3.3", {"metadata.version": (1, 7)}),
    ("3.4", {"metadata.version": (1, 8)}),
    ("3.5", {"metadata.version": (1, 11)}),
    ("3.6", {"metadata.version": (1, 14)}),
    ("3.7", {"metadata.version": (1, 19)}),
    ("3.8", {"metadata.version": (1, 20)}),
    ("3.9", {"metadata.version": (1, 21), "kraft.version": (0, 1)}),
    ("4.0", {"metadata.version": (7, 25), "transaction.version": (0, 2), "group.version": (0, 1)}),
    ("4.1", {"metadata.version": (7, 27), "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1)}),
    ("4.2", {"metadata.version": (7, 29)}),
    ("4.3", {"metadata.version": (7, 30)}),
)

# Features a release supported but did not finalize on a new cluster (kafka-storage format finalizes a feature at the
# level the release's metadata.version bootstraps, here below the highest): share.version in 4.1, whose preview a user
# turned on with UpdateFeatures (kafka-features.sh upgrade --feature share.version=1), so a 4.1 broker served no share
# groups until told; 4.2 bootstraps it at 1.
UNFINALIZED_FEATURES: dict[str, dict[str, int]] = {"4.1": {"share.version": 0}}

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def release_number(name: str) -> tuple[int, int, int]:
    major, minor, patch = _VERSION.fullmatch(name).groups()  # type: ignore[union-attr]
    return int(major), int(minor), int(patch or 0)


@cache
def served_by_release() -> dict[str, Ranges]:
    """Every release's complete table, built once from the changes."""
    tables: dict[str, Ranges] = {}
    current: Ranges = {}
    for release in RELEASES:
        current = {key: span for key, span in current.items() if key not in release.removed} | release.changed
        tables[release.name] = current
    return tables


def known_releases() -> list[str]:
    """The minor releases that can be emulated, oldest first ("2.1" ... "4.3")."""
    return [release.name for release in RELEASES if release_number(release.name)[2] == 0]


def resolve(text: str) -> str:
    """The release a ``kafka.version`` value means: "3.5", "3.5.0" and "3.5.2" are 3.5; "4.0.1" and later 4.0 patches
    are 4.0.1 (it changed JoinGroup). ConfigError naming the known releases for anything else."""
    value = text.strip()
    match = _VERSION.fullmatch(value)
    lines = known_releases()
    if match is None or f"{match[1]}.{int(match[2])}" not in lines:
        raise ConfigError(f"kafka.version {text!r}: not a known Apache Kafka release; known: {', '.join(lines)}")
    wanted = release_number(value)
    return max(
        (release.name for release in RELEASES if release_number(release.name)[:2] == wanted[:2] and release_number(release.name) <= wanted),
        key=release_number,
    )


FIRST_KRAFT_RELEASE = (3, 3, 0)


def zookeeper_mode(text: str) -> bool:
    """Whether the release's broker is the ZooKeeper-mode one (up to 3.2, see above): it kept OffsetCommit v0's
    offsets in ZooKeeper, where a KRaft broker refuses those versions (UNSUPPORTED_VERSION)."""
    return release_number(resolve(text)) < FIRST_KRAFT_RELEASE


def emulated_features(text: str) -> dict[str, tuple[int, int]]:
    """The features the release's broker advertised, with their supported ranges."""
    release = release_number(resolve(text))
    supported: dict[str, tuple[int, int]] = {}
    for name, changes in FEATURE_CHANGES:
        if release_number(name) <= release:
            supported |= changes
    return supported


def unfinalized_features(text: str) -> dict[str, int]:
    """The release's features that a new cluster finalized below their highest supported level, with that level."""
    return dict(UNFINALIZED_FEATURES.get(resolve(text), {}))


def emulated_release(text: str) -> str:
    """The release the setting ``kafka.version`` emulates; blank: the newest known, which minibroker answers as."""
    return resolve(text) if text.strip() else RELEASES[-1].name


def emulates_before(text: str, release: str) -> bool:
    """Whether ``kafka.version`` emulates a release older than ``release`` (blank: no, minibroker is the newest)."""
    return release_number(emulated_release(text)) < release_number(release)
