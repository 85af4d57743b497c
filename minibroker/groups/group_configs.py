"""Group-level configs (Kafka 4's GroupConfig and GroupConfigManager; KIP-848, KIP-932, KIP-1071): the values a group
overrides of the broker's group settings, validated as Kafka validates them and kept in the data directory.

The coordinators ask ``value(group_id, name)`` for a group's own value (None: the broker's applies), clamped to the
broker's bounds as Kafka's GroupConfig.evaluate does, so bounds lowered after a value was set still hold. The
``share.*`` and ``streams.*`` values are stored and described for the share and streams groups that will read them.

Kafka keeps group configs as records of its metadata log; here the whole set is one small JSON file rewritten on
each change (a crash leaves the old set or the new one), like the ACLs.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Mapping

from minibroker.config.kafka_settings import GROUP_SETTINGS
from minibroker.protocol.errors import ErrorCode
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically
from minibroker.storage.config import PARSERS

if TYPE_CHECKING:
    from minibroker.config.settings import BrokerConfig

FILE_NAME = "group-configs.json"
FORMAT_VERSION = 1

# Kafka's GroupConfig.validateValues: each bounded config with the broker settings bounding it (None: no bound on
# that side), in the order Kafka checks them.
BOUNDS: dict[str, tuple[str | None, str | None]] = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "consumer.assignment.interval.ms": (
        "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms",
    ),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": (
        "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks",
    ),
    "share.assignment.interval.ms": ("group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
    "streams.assignment.interval.ms": (
        "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms",
    ),
}
# The broker settings group configs read: the ones giving their defaults, and their bounds.
BROKER_SETTINGS_READ = frozenset(
    {spec[3] for spec in GROUP_SETTINGS.values() if spec[3] is not None}
    | {setting for bounds in BOUNDS.values() for setting in bounds if setting is not None}
)
# Each protocol's session timeout must exceed its heartbeat interval.
SESSIONS = tuple((f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms") for kind in ("consumer", "share", "streams"))
# Defaults Kafka reads from the broker when it uses them, not when it validates (KAFKA-20337): a group's value is
# checked against the bounds only when the group sets it, and DescribeConfigs shows GroupConfig's own default.
DYNAMIC_DEFAULT = ".assignment.interval.ms"
_ISO_DURATION = (
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?"
)  # compiled by re's own cache on first use: compiling it here cost every start-up 0.3 ms


class GroupConfigError(Exception):
    """A change Kafka refuses, with the error code and message it answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


class GroupConfigFileError(ValueError):
    """The group config file cannot be read: start-up stops rather than serve groups without their configs."""


class GroupConfigs:
    """Every group's config overrides, with the broker's settings (``BrokerConfig.kafka_items``: name -> text) that
    give their defaults and bounds; ``path`` None keeps them in memory only."""

    def __init__(self, settings: Mapping[str, str | None], path: StrPath | None = None) -> None:
        self.settings = dict(settings)
        self.path = path
        self._groups: dict[str, dict[str, str]] = self._load()

    @classmethod
    def of(cls, config: BrokerConfig, data_dir: StrPath | None = None) -> GroupConfigs:
        return cls(config.kafka_items(), os.path.join(data_dir, FILE_NAME) if data_dir is not None else None)

    # ---- what the coordinators and DescribeConfigs read ----

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._groups.get(group_id, {}))

    def value(self, group_id: str, name: str) -> Any | None:
        """The group's own value of ``name`` within the broker's current bounds; None when it has none."""
        raw = self._groups.get(group_id, {}).get(name)
        if raw is None:
            return None
        value = PARSERS[GROUP_SETTINGS[name][0]](raw.strip())
        low, high = (self._bound(setting) for setting in BOUNDS.get(name, (None, None)))
        if low is not None and value < low:
            return low
        if high is not None and value > high:
            return high
        return value

    def default(self, name: str) -> str | None:
        """What a group that does not set ``name`` has: the broker setting it follows, else GroupConfig's default."""
        _, default, _, synonym = GROUP_SETTINGS[name]
        if synonym is not None and not name.endswith(DYNAMIC_DEFAULT):
            return self.settings.get(synonym, default)
        return default

    # ---- changes ----

    def validate(self, group_id: str, new: Mapping[str, str | None]) -> None:
        """Kafka's checks of a group's complete new set of overrides (ControllerConfigurationValidator and
        GroupConfig.validate): a named group, no nulls, known names, values of the config's type and validator,
        within the broker's bounds, each session timeout above its heartbeat interval. Raises GroupConfigError."""
        if not group_id:
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        nulls = [name for name, value in new.items() if value is None]
        if nulls:
            raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Null value not supported for group configs: {','.join(nulls)}")
        for name in new:
            if name not in GROUP_SETTINGS:
                raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
        values = {name: _parsed(name, new[name] if name in new else self.default(name)) for name in GROUP_SETTINGS}
        for name, (low_setting, high_setting) in BOUNDS.items():
            if name.endswith(DYNAMIC_DEFAULT) and name not in new:
                continue
            low, high = self._bound(low_setting), self._bound(high_setting)
            if low is not None and values[name] < low:
                raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {low_setting}")
            if high is not None and values[name] > high:
                raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {high_setting}")
        for session, heartbeat in SESSIONS:
            if values[session] <= values[heartbeat]:
                raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"{session} must be greater than {heartbeat}")

    def replace(self, group_id: str, new: Mapping[str, str]) -> None:
        """Store a group's validated new set of overrides (an empty set removes the group's entry)."""
        if new:
            self._groups[group_id] = {name: _canonical(name, value) for name, value in new.items()}
        else:
            self._groups.pop(group_id, None)
        self._save()

    def clear(self) -> None:
        """Forget every group's configs (the broker's reset)."""
        self._groups.clear()
        self._save()

    def reload(self) -> None:
        """Read the stored configs again (after a snapshot put the data directory back)."""
        self._groups = self._load()

    # ---- internals ----

    def _bound(self, setting: str | None) -> int | None:
        if setting is None:
            return None
        text = self.settings.get(setting)
        return None if text is None else int(text)

    def _load(self) -> dict[str, dict[str, str]]:
        if self.path is None:
            return {}
        try:
            stored = read_json(self.path)
        except (OSError, ValueError) as exc:
            raise GroupConfigFileError(f"{self.path}: {exc}") from None
        if stored is None:
            return {}
        groups = stored.get("groups") if isinstance(stored, dict) and stored.get("version") == FORMAT_VERSION else None
        if not isinstance(groups, dict) or not all(
            isinstance(configs, dict) and all(isinstance(v, str) for v in configs.values()) for configs in groups.values()
        ):
            raise GroupConfigFileError(f"{self.path}: not a version {FORMAT_VERSION} group config file")
        return {group: dict(configs) for group, configs in groups.items()}

    def _save(self) -> None:
        if self.path is not None:
            write_json_atomically(self.path, {"version": FORMAT_VERSION, "groups": self._groups}, indent=1, sort_keys=True)


def _canonical(name: str, raw: str) -> str:
    """A valid value as Kafka shows it back (ConfigDef.convertToString of the parsed value)."""
    value = PARSERS[GROUP_SETTINGS[name][0]](raw.strip())
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _parsed(name: str, raw: str | None) -> Any:
    """A config's value as Kafka's ConfigDef.parse reads it: its type, then its validator."""
    kind, _, validator, _ = GROUP_SETTINGS[name]
    if raw is None:
        return None
    value = PARSERS[kind](raw.strip())
    if value is None:
        reason = "Expected value to be either true or false" if kind == "BOOLEAN" else f"Not a number of type {kind}"
        raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Invalid value {raw} for configuration {name}: {reason}")
    if validator == "other:ShareGroupAutoOffsetResetStrategy.Validator":
        reason = _share_offset_reset_problem(name, value)
    else:
        from minibroker.config.values import validation_problem  # that module builds on the broker's config

        reason = validation_problem(validator, value)
    if reason is not None:
        raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Invalid value {raw} for configuration {name}: {reason}")
    return value


def _share_offset_reset_problem(name: str, value: str) -> str | None:
    """Kafka's ShareGroupAutoOffsetResetStrategy: earliest, latest, or by_duration:<an ISO-8601 duration, not
    negative>."""
    if value in ("earliest", "latest"):
        return None
    duration = value[len("by_duration:"):] if value.startswith("by_duration:") else None
    match = re.fullmatch(_ISO_DURATION, duration, re.IGNORECASE) if duration else None
    if match is not None and any(match.group(k) is not None for k in range(2, 6)) and _seconds(match) >= 0:
        return None
    return (f"Invalid value `{value}` for configuration {name}. The value must be either 'earliest', 'latest' or of "
            "the format 'by_duration:<PnDTnHnMn.nS>'.")


def _seconds(match: re.Match[str]) -> float:
    days, hours, minutes, seconds = (int(match.group(k) or 0) for k in range(2, 6))
    fraction = float(f"0.{match.group(6)}") if match.group(6) else 0.0
    sign = -1 if (match.group(5) or "").startswith("-") else 1  # the fraction has the seconds' sign
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds + sign * fraction
    return -total if match.group(1) == "-" else total


def reset_duration_ms(value: str) -> int | None:
    """The look-back of a ``share.auto.offset.reset`` of ``by_duration:<ISO-8601 duration>`` in ms (None: another
    strategy)."""
    match = re.fullmatch(_ISO_DURATION, value[len("by_duration:"):], re.IGNORECASE) if value.startswith("by_duration:") else None
    return None if match is None else int(_seconds(match) * 1000)
