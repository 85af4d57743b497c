"""What the REST layer needs from a parsed schema of any type, and the one error every parser raises."""

from __future__ import annotations

from typing import Protocol


class InvalidSchemaError(ValueError):
    """The schema text is not a schema its type (as Confluent's registry runs it) accepts: answered 42201."""


class ParsedSchema(Protocol):
    """A registered or proposed schema, parsed with its references."""

    version: int | None  # the subject version, for the "{oldSchemaVersion: n}" line of incompatibilities

    @property
    def canonical(self) -> str:
        """The string the registry keeps and compares to decide two registrations are the same schema."""

    def normalize(self) -> ParsedSchema:
        """The schema in Confluent's normalized form (``?normalize=true``)."""

    def with_version(self, version: int) -> ParsedSchema:
        """The same schema, remembered as `version` of its subject."""

    def formatted(self, fmt: str) -> str:
        """The schema in another of its type's forms (``?format=``, Confluent's formattedString); a format the type
        does not know answers the canonical string, as Confluent does."""
