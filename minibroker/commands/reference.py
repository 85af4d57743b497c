"""Reference tables generated from the code, so the documentation cannot drift from what the broker does.

``config-reference`` lists every ``BrokerConfig`` setting; ``api-reference`` lists every API in the handler
table with the versions ApiVersions advertises; ``unserved-apis`` lists Kafka's APIs that table lacks, each with
why. ``minibroker NAME`` prints a table, and the docs site's reference pages are built with them
(``tools/docs_hooks.py``).
"""

from __future__ import annotations

from dataclasses import MISSING
from typing import Callable

from minibroker.config.settings import (
    ALIASES, BROKER_SYNONYMS, QUOTA_SETTINGS, SETTING_FIELDS, SHARE_SETTINGS, TOPIC_SYNONYMS, render,
)
from minibroker.config.sources import env_name


def config_table() -> str:
    """The settings minibroker applies: its own (BrokerConfig's fields), then the broker settings that give topic
    configs their defaults; Kafka name, default, environment variable, meaning."""
    rows = ["| setting | default | environment variable | meaning |", "|---|---|---|---|"]
    for f in SETTING_FIELDS:
        name = f.metadata["kafka"]
        default = "" if f.default is MISSING else render(f.default)
        rows.append(_row(name, default, f.metadata["doc"]))
    from minibroker.config.kafka_settings import BROKER_SETTINGS  # facts, read when asked

    for topic, synonyms in TOPIC_SYNONYMS.items():
        for position, (name, _) in enumerate(synonyms):
            default = BROKER_SETTINGS[name][1]
            earlier = [f"`{synonym}`" for synonym, _ in synonyms[:position]]
            when = f" when neither {' nor '.join(earlier)} is given" if len(earlier) > 1 else (
                f" when {earlier[0]} is not given" if earlier else ""
            )
            doc = f"Default of the topic config `{topic}`{when}."
            rows.append(_row(name, "" if default is None else default, doc))
    return "\n".join(rows) + "\n\n" + accepted_paragraph()


def _row(name: str, default: str, doc: str) -> str:
    shown = f"`{default}`" if default else "(empty)"
    escaped = doc.replace("|", r"\|")
    return f"| `{name}` | {shown} | `{env_name(name)}` | {escaped} |"


def accepted_paragraph() -> str:
    """Every other Kafka broker setting: accepted and checked as Kafka checks it, with no effect in one process."""
    from minibroker.groups.group_configs import BROKER_SETTINGS_READ
    from minibroker.config.kafka_settings import BROKER_SETTINGS, INTERNAL_SETTINGS, KAFKA_VERSION

    applied = {f.metadata["kafka"] for f in SETTING_FIELDS} | BROKER_SYNONYMS.keys() | ALIASES.keys()
    for_groups = sorted(BROKER_SETTINGS_READ - applied)
    applied |= BROKER_SETTINGS_READ | QUOTA_SETTINGS | SHARE_SETTINGS
    names = sorted(name for name in BROKER_SETTINGS if name not in applied and name not in INTERNAL_SETTINGS)
    aliases = ", ".join(f"`{alias}` is `{name}`" for alias, name in ALIASES.items())
    return (
        f"Also applied: {aliases} (when that is not given). The defaults and bounds of group configs (KIP-848's "
        "group-level configs, set with IncrementalAlterConfigs on a group): "
        + ", ".join(f"`{name}`" for name in for_groups) + ". The samples of client quotas' rates: "
        + ", ".join(f"`{name}`" for name in sorted(QUOTA_SETTINGS)) + ". The share sessions each node keeps: "
        + ", ".join(f"`{name}`" for name in sorted(SHARE_SETTINGS)) + ". "
        f"Every other Apache Kafka {KAFKA_VERSION} broker setting "
        f"({len(names)}) is accepted, its value checked as Kafka checks it, with no effect in one process; start-up "
        "names those it was given: " + ", ".join(f"`{name}`" for name in names) + ".\n\n" + dynamic_paragraph(applied)
    )


def dynamic_paragraph(applied: set[str]) -> str:
    """The settings Kafka changes dynamically (its DynamicBrokerConfig.AllDynamicConfigs) that minibroker applies,
    and those only per broker."""
    from minibroker.config.dynamic import DYNAMIC, PER_BROKER

    dynamic = sorted(DYNAMIC & applied)
    per_broker = sorted(PER_BROKER & applied)
    return (
        "Dynamic as in Kafka (AlterConfigs or IncrementalAlterConfigs on a BROKER resource, per node or as the cluster "
        f"default), of the settings applied here ({len(dynamic)}): " + ", ".join(f"`{name}`" for name in dynamic)
        + "; of those, per node only: " + ", ".join(f"`{name}`" for name in per_broker) + ". Every other dynamic "
        "Kafka setting is kept and described with no effect; the rest are read-only.\n"
    )


def api_table(kafka_version: str = "") -> str:
    """One row per implemented API: name, key and the version range ApiVersions advertises (with ``kafka_version``,
    that of a broker emulating the release: the APIs it served, capped at its versions)."""
    from minibroker.handlers import HANDLERS
    from minibroker.protocol.messages import KAFKA_APIS

    apis = HANDLERS
    notes: list[str] = []
    if kafka_version:
        from minibroker.config.releases import resolve
        from minibroker.handlers.emulation import emulated_apis, emulation_notes

        apis = emulated_apis(HANDLERS, kafka_version)
        older, lacking = emulation_notes(HANDLERS, kafka_version)
        notes.append(f"\nEmulating Apache Kafka {resolve(kafka_version)}: the versions that release's broker served.")
        if older:
            notes.append(f"Versions Kafka 4 removed (KIP-896), served as the release served them: {', '.join(older)}.")
        if lacking:
            notes.append(f"Versions of the release minibroker does not serve: {', '.join(lacking)}.")
        left_out = [KAFKA_APIS[key][0] for key in sorted(HANDLERS) if key not in apis]
        if left_out:
            notes.append(f"APIs minibroker serves that the release did not: {', '.join(left_out)}.")
    rows = ["| API | key | versions |", "|---|---|---|"]
    for key in sorted(apis):
        handler = apis[key]
        name = KAFKA_APIS[key][0]
        rows.append(f"| {name} | {key} | {handler.min_version}-{handler.max_version} |")
    return "\n".join(rows + notes) + "\n"


CONTROLLER_ONLY = "Controller only: Kafka's brokers do not answer these either"

# Why an API of Kafka's is not served: reason -> its API keys. The APIs of the controller listener alone have
# CONTROLLER_ONLY's reason without an entry; an unserved API with no reason stops ``unserved_table``.
UNSERVED_REASONS: dict[str, tuple[int, ...]] = {
    "KRaft cluster administration (brokers forward it to the controllers; there is no controller quorum)": (55, 64, 80, 81),
    "Delegation tokens": (38, 39, 40, 41),
    "Client metrics (KIP-714) and ListConfigResources (KIP-1142)": (71, 72, 74),
    "Share coordinator RPCs (a share partition's leader writes `__share_group_state` itself)": (83, 84, 85, 86, 87),
    "Streams groups (KIP-1071)": (88, 89),
}


def unserved_table() -> str:
    """Kafka's APIs that the handler table lacks, grouped by why; ValueError for an unserved API with no reason."""
    from minibroker.handlers import TABLE
    from minibroker.protocol.messages import KAFKA_APIS

    reason_of = {key: reason for reason, keys in UNSERVED_REASONS.items() for key in keys}
    groups: dict[str, list[str]] = {reason: [] for reason in (CONTROLLER_ONLY, *UNSERVED_REASONS)}
    for key, (name, listeners) in sorted(KAFKA_APIS.items()):
        if key in TABLE:
            continue
        if "broker" not in listeners:
            reason = CONTROLLER_ONLY
        elif key in reason_of:
            reason = reason_of[key]
        else:
            raise ValueError(f"API {key} ({name}) is not served and has no reason: add one to UNSERVED_REASONS")
        groups[reason].append(f"{name} ({key})")
    rows = ["| not served | APIs (key) |", "|---|---|"]
    rows += [f"| {reason} | {', '.join(apis)} |" for reason, apis in groups.items() if apis]
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "config-reference": config_table, "api-reference": api_table, "unserved-apis": unserved_table,
}

