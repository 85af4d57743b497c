"""JSON schemas ("schemaType": "JSON") as Confluent's registry sees them: the text read as Jackson reads it
(decimals kept exactly, the first value of the text), checked against its draft's meta-schema (``$schema``;
draft 7 when absent or unknown, as Confluent) and loaded into the model compatibility walks, so a schema
Confluent would refuse answers 42201 here too. The canonical string is the JSON re-written compactly as
Jackson writes it (`JsonSchema.canonicalString()`); ``?normalize=true`` sorts every object's keys.

The meta-schemas and their validation come from the `jsonschema` package (the `registry` extra), imported
when the first JSON schema is parsed, never at start-up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cache, cached_property
from typing import Any

from minibroker.registry import jackson
from minibroker.registry.json_model import Loader, Node, draft_of
from minibroker.registry.parsed import InvalidSchemaError

_DECODER = json.JSONDecoder(parse_float=Decimal)


@dataclass(eq=False)
class JsonSchema:
    """A registered or proposed JSON schema: its parsed document and its references' (name -> document)."""

    document: Any
    references: Mapping[str, Any] = field(default_factory=dict)
    version: int | None = None

    @cached_property
    def canonical(self) -> str:
        return jackson.write(self.document)

    @cached_property
    def root(self) -> Node:
        return Loader(self.document, self.references).root()

    def normalize(self) -> JsonSchema:
        """Confluent's `JsonSchema.normalize()`: the document with every object's keys in order."""
        return replace(self, document=_sorted(self.document))

    def with_version(self, version: int) -> JsonSchema:
        """The same schema remembered as `version`, keeping what was already loaded from it."""
        copy = replace(self, version=version)
        copy.__dict__.update({k: v for k, v in self.__dict__.items() if k in ("canonical", "root")})
        return copy

    def formatted(self, fmt: str) -> str:
        """Only the canonical form is served (Confluent's JSON Schema provider has no other format)."""
        return self.canonical


def parse_json(text: str, references: Mapping[str, str] | None = None) -> JsonSchema:
    """Parse and validate `text`; `references` maps the names ``$ref`` uses to their schema texts."""
    documents = {name: _read(ref_text, f"reference {name}") for name, ref_text in (references or {}).items()}
    schema = JsonSchema(_read(text, "schema"), documents)
    if not isinstance(schema.document, (dict, bool)):
        raise InvalidSchemaError(
            "Invalid schema of type JSON, details: Invalid JSON schema: expected an object or boolean at the root")
    _check_meta_schema(schema.document)
    try:
        schema.root
    except InvalidSchemaError as e:
        raise InvalidSchemaError(f"Invalid schema of type JSON, details: {e}") from None
    except RecursionError:
        raise InvalidSchemaError("Invalid schema of type JSON, details: the schema nests too deeply") from None
    return schema


def _read(text: str, what: str) -> Any:
    """The first JSON value of `text`, as Jackson's `readTree` reads it (what follows is ignored)."""
    try:
        value, _ = _DECODER.raw_decode(text.lstrip(" \t\r\n"))
    except (ValueError, RecursionError) as e:
        raise InvalidSchemaError(f"Invalid schema of type JSON, details: Invalid JSON {what}: {e}") from None
    return value


def _check_meta_schema(document: Any) -> None:
    """The document must be a valid schema of its draft (its meta-schema, as `jsonschema` bundles it)."""
    validator, best_match = _meta_validator(draft_of(document))
    error = best_match(validator.iter_errors(document))
    if error is not None:
        where = "#/" + "/".join(str(p) for p in error.absolute_path)
        raise InvalidSchemaError(f"Invalid schema of type JSON, details: {where}: {error.message}")


@cache
def _meta_validator(draft: int) -> tuple[Any, Any]:
    """The draft's meta-schema validator (made once) and jsonschema's choice of the error to report."""
    try:
        import jsonschema
    except ImportError:
        raise InvalidSchemaError(
            "Invalid schema of type JSON, details: this registry validates JSON schemas with the jsonschema package: "
            "pip install 'minibroker[registry]'") from None
    validator = {
        4: jsonschema.Draft4Validator, 6: jsonschema.Draft6Validator, 7: jsonschema.Draft7Validator,
        2019: jsonschema.Draft201909Validator, 2020: jsonschema.Draft202012Validator,
    }[draft]
    return validator(validator.META_SCHEMA), jsonschema.exceptions.best_match


def _sorted(value: Any) -> Any:
    """Every object's keys in Java's string order (UTF-16 code units), as Jackson's sorting node factory."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
