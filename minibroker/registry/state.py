"""The registry's state, changed only by applying ``_schemas`` records (at start-up and after every write).

Subjects hold versions; a version names a global schema id. Ids are global and stable: a schema (type, canonical
text, references) registered anywhere keeps the id it was first given, and the next id is one above the highest
ever seen. Soft-deleted versions stay (``deleted``) until a permanent delete's tombstone removes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from minibroker.registry import records as r

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


@dataclass
class Version:
    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str
    references: list[r.Json]
    deleted: bool = False

    def identity(self) -> tuple[str, str, str]:
        return schema_identity(self.schema_type, self.schema, self.references)


def schema_identity(schema_type: str, canonical: str, references: list[r.Json]) -> tuple[str, str, str]:
    """What makes two registered schemas the same schema (and so one id)."""
    return schema_type, canonical, json.dumps(references, sort_keys=True)


@dataclass
class RegistryState:
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    configs: dict[str | None, r.Json] = field(default_factory=dict)  # subject (None: global) -> ConfigValue
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    _ids: dict[tuple[str, str, str], int] = field(default_factory=dict)  # schema identity -> its id
    _holders: dict[int, dict[tuple[str, int], None]] = field(default_factory=dict)  # id -> (subject, version)s

    def clear(self) -> None:
        self.subjects.clear()
        self.configs.clear()
        self.modes.clear()
        self._ids.clear()
        self._holders.clear()
        self.max_id = 0

    # ---- applying records ----

    def apply(self, record: r.Record) -> None:
        key, value = record
        keytype, subject = key["keytype"], key.get("subject")
        if keytype == r.SCHEMA:
            self._apply_schema(subject, int(key["version"]), value)
        elif keytype == r.CONFIG:
            if value is None:
                self.configs.pop(subject, None)
            else:
                self.configs[subject] = value
        elif keytype == r.MODE:
            if value is None:
                self.modes.pop(subject, None)
            else:
                self.modes[subject] = value["mode"]
        elif keytype == r.DELETE_SUBJECT and value is not None:
            for version in self.subjects.get(subject, {}).values():
                if version.version <= int(value.get("version", version.version)):
                    version.deleted = True
        elif keytype == r.CLEAR_SUBJECT and value is not None:
            for number, version in list(self.subjects.get(subject, {}).items()):
                if version.deleted:
                    self._apply_schema(subject, number, None)

    def _apply_schema(self, subject: str, number: int, value: r.Json | None) -> None:
        versions = self.subjects.setdefault(subject, {})
        replaced = versions.pop(number, None)
        if replaced is not None:
            holders = self._holders.get(replaced.schema_id, {})
            holders.pop((subject, number), None)
            if not holders:
                self._holders.pop(replaced.schema_id, None)
        if value is None:
            if not versions:
                del self.subjects[subject]
            return
        version = Version(
            subject, number, int(value["id"]), value["schema"], value.get("schemaType") or "AVRO",
            value.get("references") or [], bool(value.get("deleted", False)),
        )
        versions[number] = version
        if self.id_for(version.identity()) is None:
            self._ids[version.identity()] = version.schema_id
        self._holders.setdefault(version.schema_id, {})[(subject, number)] = None
        self.max_id = max(self.max_id, version.schema_id)

    # ---- queries ----

    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        """The subject's versions, oldest first (soft-deleted ones only with ``deleted``)."""
        found = self.subjects.get(subject, {})
        return [found[n] for n in sorted(found) if deleted or not found[n].deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def by_id(self, schema_id: int) -> Version | None:
        """A version holding the schema with this id (soft-deleted ones too: their ids still decode data)."""
        for subject, number in self._holders.get(schema_id, ()):
            return self.subjects[subject][number]
        return None

    def id_for(self, identity: tuple[str, str, str]) -> int | None:
        """The id a schema already has, if some version still holds it."""
        schema_id = self._ids.get(identity)
        return schema_id if schema_id in self._holders else None

    def referenced_by(self, subject: str, number: int, deleted: bool = False) -> list[int]:
        """Ids of the live schemas (soft-deleted ones too with ``deleted``) whose references name this subject and
        version."""
        return sorted({
            version.schema_id for versions in self.subjects.values() for version in versions.values()
            if (deleted or not version.deleted) and any(
                ref.get("subject") == subject and int(ref.get("version", -1)) == number for ref in version.references
            )
        })

    def config(self, subject: str | None) -> r.Json | None:
        """The config set for a subject (None: the global one, always there), its level BACKWARD when it sets none
        (Confluent's getConfig fills in the default level, not the global one)."""
        config = self.configs.get(subject)
        if config is None and subject is not None:
            return None
        config = config or {}
        return {**config, "compatibilityLevel": config.get("compatibilityLevel") or DEFAULT_COMPATIBILITY}

    def config_in_scope(self, subject: str | None) -> r.Json:
        """The config in force for a subject (Confluent's getConfigInScope): its own, with the settings it leaves unset
        (``normalize``) taken from the global one; the global one when it has none."""
        top = self.config(None) or {}
        own = self.config(subject) if subject is not None else None
        if own is None:
            return top
        return {**{k: v for k, v in top.items() if k != "compatibilityLevel"}, **own}

    def compatibility(self, subject: str | None) -> str:
        return str(self.config_in_scope(subject)["compatibilityLevel"])

    def normalize(self, subject: str | None) -> bool:
        """Whether every registration, lookup and compatibility test under the subject normalizes its schema."""
        return self.config_in_scope(subject).get("normalize") is True

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or DEFAULT_MODE
