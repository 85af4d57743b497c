"""Feature levels (KIP-584): what ApiVersions v3+ reports as supported and finalized, and UpdateFeatures.

Clients decide from the finalized levels: the Java producer uses transactions V2 (KIP-890) only when
``transaction.version`` is 2 or more, whatever the broker's API versions. The broker itself decides by request
version, as Kafka does, so lowering a level changes what clients choose, not what the broker serves. The levels live
in ``features.json`` in the data directory (written whole, then renamed, like the ACL file) and survive restarts.

UpdateFeatures is validated as Kafka's FeatureControlManager validates it, with its messages and
INVALID_UPDATE_VERSION; every metadata.version downgrade is refused as one that might lose metadata.
"""

from __future__ import annotations

import logging
import os
from typing import Mapping

from minibroker.protocol.errors import ErrorCode
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

log = logging.getLogger(__name__)

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"  # 1: share groups (KIP-932) are served
ELR_VERSION = "eligible.leader.replicas.version"
TV2 = 2  # transaction.version of transactions V2 (KIP-890 part 2): an epoch bump per transaction

# A Kafka 4.3 broker's supported ranges (BrokerFeatures.defaultSupportedFeatures without unstable versions:
# metadata.version from 3.3-IV3 to 4.3-IV0, each feature from its first level to its latest production one) for the
# features minibroker honours or that change nothing a client sees here. streams.version is left out: minibroker
# serves no streams groups, so it answers as a broker that does not know them.
SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (7, 30),
    KRAFT_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 1),
}
# Feature.validateVersion's dependencies: (feature, level) -> the levels it needs (ELRV_1 needs 4.0-IV1).
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {(ELR_VERSION, 1): {METADATA_VERSION: 23}}

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
FILE_NAME = "features.json"
FORMAT_VERSION = 1


class FeatureUpdate:
    """One update of UpdateFeatures. (A plain class: a NamedTuple compiles its constructor when its module loads, a
    cost every start-up pays.)"""

    __slots__ = ("name", "level", "upgrade_type")

    def __init__(self, name: str, level: int, upgrade_type: int) -> None:
        self.name = name
        self.level = level
        self.upgrade_type = upgrade_type


class FeatureLevels:
    """The finalized levels and their epoch. A new data directory finalizes every supported feature at its highest
    level, as ``kafka-storage format --standalone`` does for a new 4.3 cluster (kraft.version 1), but those an older
    release formatted lower (``unfinalized``: name -> level)."""

    def __init__(
        self, data_dir: StrPath, supported: Mapping[str, tuple[int, int]], node_id: int = 1,
        unfinalized: Mapping[str, int] | None = None,
    ) -> None:
        self.path = os.path.join(data_dir, FILE_NAME)
        self.node_id = node_id
        self.supported = dict(supported)
        stored = self._read()
        levels = stored.get("levels", {})
        formatted = {name: high for name, (_, high) in self.supported.items()} | dict(unfinalized or {})
        self.levels = {
            name: levels[name] if isinstance(levels.get(name), int) and low <= levels[name] <= high else formatted[name]
            for name, (low, high) in self.supported.items()
        }
        self.epoch: int = stored.get("epoch", 0) if self.supported else -1

    def _read(self) -> dict:
        try:
            stored = read_json(self.path)
        except (OSError, ValueError) as exc:
            log.warning("%s unreadable (%s): using the default feature levels", self.path, exc)
            return {}
        return stored if isinstance(stored, dict) and stored.get("version") == FORMAT_VERSION else {}

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def turned_off(self, name: str) -> bool:
        """The feature is known here and finalized at 0 (a release that did not know it does not gate on it)."""
        return name in self.supported and self.levels[name] == 0

    def finalized(self) -> dict[str, int]:
        """Levels above 0: a feature at 0 is not finalized (Kafka removes it)."""
        return {name: level for name, level in self.levels.items() if level > 0}

    def update(self, updates: list[FeatureUpdate], validate_only: bool) -> tuple[ErrorCode, str | None]:
        """All updates or none (Kafka's atomic feature records); the first refused one answers for all."""
        proposed = dict(self.levels) | {u.name: u.level for u in updates}
        for update in updates:
            problem = self._problem(update, proposed)
            if problem is not None:
                return ErrorCode.INVALID_UPDATE_VERSION, f"Invalid update version {update.level} for feature {update.name}. {problem}"
        if validate_only:
            return ErrorCode.NONE, None
        changed = {u.name: u.level for u in updates if self.levels.get(u.name) != u.level}
        if changed:
            self.levels.update(changed)
            self.epoch += 1
            self._save()
            log.info("feature levels changed: %s", ", ".join(f"{name}={level}" for name, level in changed.items()))
        return ErrorCode.NONE, None

    def _problem(self, update: FeatureUpdate, proposed: dict[str, int]) -> str | None:
        """FeatureControlManager.updateFeature's checks, in its order; None when the update is allowed."""
        name, level, kind = update.name, update.level, update.upgrade_type
        if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return "The controller does not support the given upgrade type."
        current = self.levels.get(name, 0)
        if level < 0:
            return "A feature version cannot be less than 0."
        low, high = self.supported.get(name, (0, 0))
        if not low <= level <= high:
            what = f"Local controller {self.node_id}"
            span = str(low) if low == high else f"{low}-{high}"
            return f"{what} does not support this feature." if high == 0 else f"{what} only supports versions {span}"
        if level < current and kind == UPGRADE:
            return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
        if level > current and kind != UPGRADE:
            return "Can't downgrade to a newer version."
        if name == METADATA_VERSION and level < current:
            reason = ("Unsafe metadata downgrade is not supported in this version." if kind == UNSAFE_DOWNGRADE
                      else "Refusing to perform the requested downgrade because it might delete metadata information.")
            return f"Unsupported metadata.version downgrade from {current} to {level}. {reason}"
        if name == KRAFT_VERSION and kind != UPGRADE and level != current:
            return "Can't downgrade the version of this feature."
        for needed, minimum in DEPENDENCIES.get((name, level), {}).items():
            if proposed.get(needed, 0) < minimum:
                return f"{name} could not be set to {level} because it depends on {needed} level {minimum}"
        return None

    def _save(self) -> None:
        write_json_atomically(self.path, {"version": FORMAT_VERSION, "epoch": self.epoch, "levels": self.levels}, indent=1)
