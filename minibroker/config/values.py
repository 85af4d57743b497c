"""A Kafka broker setting's value checked as Kafka's ConfigDef checks it: its type, then its validator.

The validators come from ``kafka_settings`` as short specs: ``range:MIN:MAX`` (either side may be open),
``in:A,B`` (``in-ci`` ignoring case), ``list-in:A,B;nodup`` (a list without duplicates, of those values when
any are named, with ``;nonempty`` when it may not be empty), ``nonempty``;
custom validators (``other:...``) are Kafka code, not facts, and only the type is checked for them.
"""

from __future__ import annotations

from typing import Any

from minibroker.config.kafka_settings import BROKER_SETTINGS
from minibroker.config.settings import SETTING_FIELDS, BrokerConfig, ConfigError
from minibroker.storage.config import PARSERS, split_list


def setting_spec(name: str, release: str = "") -> tuple[str, str | None, str] | None:
    """Kafka's definition of broker setting ``name``: 4.3's, or with an emulated ``release`` before 4.0 the one it had
    of a setting 4.0 removed; None when there is none."""
    spec = BROKER_SETTINGS.get(name)
    if spec is None and release:
        from minibroker.config.legacy_settings import removed_broker_settings  # only when a release is emulated

        spec = removed_broker_settings(release).get(name)
    return spec


def check_kafka_setting(name: str, raw: str, release: str = "") -> str | None:
    """``raw`` stripped when it is a valid value of Kafka setting ``name`` (of the emulated ``release``, if any); None
    when Kafka has no such setting; ConfigError naming the setting when the value is invalid."""
    spec = setting_spec(name, release)
    if spec is None:
        return None
    kind, _, validator = spec
    text = raw.strip()
    value = PARSERS[kind](text)
    if value is None:
        reason = "Expected value to be either true or false" if kind == "BOOLEAN" else f"Not a number of type {kind}"
        raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}")
    if validator == "metadata-version":
        from minibroker.config.legacy_settings import metadata_version_problem

        reason = metadata_version_problem(value, release)
    else:
        reason = validation_problem(validator, value)
    if reason is not None:
        raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}")
    return text


def validation_problem(validator: str, value: Any) -> str | None:
    """Kafka's message for a value its validator refuses, or None."""
    kind, _, argument = validator.partition(":")
    if kind == "range":
        low, _, high = argument.partition(":")
        if low and value < float(low):
            return f"Value must be at least {low}"
        if high and value > float(high):
            return f"Value must be no more than {high}"
    elif kind in ("in", "in-ci"):
        allowed = argument.split(",")
        folded = (lambda text: text.upper()) if kind == "in-ci" else (lambda text: text)
        if folded(value) not in {folded(item) for item in allowed}:
            return f"String must be one of: {', '.join(allowed)}"
    elif kind == "list-in":
        names, *flags = argument.split(";")
        allowed = names.split(",") if names else []
        items = split_list(value)
        if "nonempty" in flags and not items:
            return f"must not be empty. Valid values include: {', '.join(allowed) or 'any non-empty value'}"
        if len(set(items)) != len(items):
            return "values must not be duplicated"
        wrong = [item for item in items if allowed and item not in allowed]
        if wrong:
            return f"String must be one of: {', '.join(allowed)}"
    elif kind == "nonempty" and not value.strip():
        return "String may not be empty"
    return None


def known_names() -> list[str]:
    """Every setting name minibroker knows: Kafka's and its own."""
    return [*BROKER_SETTINGS, *(f.metadata["kafka"] for f in SETTING_FIELDS if f.metadata["kafka"] not in BROKER_SETTINGS)]


def known_setting(name: str) -> bool:
    return name in BROKER_SETTINGS or any(f.metadata["kafka"] == name for f in SETTING_FIELDS)


def unknown_setting_warnings(config: BrokerConfig) -> list[str]:
    """Kafka's warning for each name it does not know (AbstractConfig.logUnused), with the closest known name."""
    import difflib  # only for unknown names

    known = known_names()
    warnings = []
    for name in config.unknown:
        warning = f"The configuration '{name}' was supplied but isn't a known config."
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        warnings.append(warning + (f" Did you mean '{close[0]}'?" if close else ""))
    return warnings
