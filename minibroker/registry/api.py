"""Confluent Schema Registry's REST routes over ``RegistryState``: each request checked, answered with Confluent's
statuses and ``{"error_code", "message"}`` bodies (Errors.java and the resources' Rest*Exception), and every change
made by writing ``_schemas`` records (``write`` appends them to the log and applies them to the state)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from minibroker.registry import records as r
from minibroker.registry.formats import FORMATS
from minibroker.registry.levels import LEVELS, incompatibilities
from minibroker.registry.parsed import InvalidSchemaError, ParsedSchema
from minibroker.registry.state import RegistryState, Version, schema_identity
from minibroker.server.http import HttpRequest, RawBody

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1
# The config settings served: the request's (ConfigUpdateRequest) name -> the name kept and answered (Config).
CONFIG_FIELDS = {"compatibility": "compatibilityLevel", "normalize": "normalize"}
LATEST = -1

Answer = tuple[int, Any]
Write = Callable[[list[r.Record]], Awaitable[None]]


class RegistryError(Exception):
    """An answer other than success: HTTP status, Confluent error code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code

    def body(self) -> dict[str, Any]:
        return {"error_code": self.code, "message": str(self)}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def flag(request: HttpRequest, name: str) -> bool:
    return request.query.get(name, ["false"])[-1].lower() == "true"


def parse_version(text: str) -> int:
    """Confluent's VersionId: ``latest`` or -1 for the latest, else 1..2^31-1 (42202 otherwise)."""
    if text == "latest":
        return LATEST
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number == LATEST or 1 <= number <= MAX_VERSION:
        return number
    raise RegistryError(
        422, 42202, f"The specified version '{text}' is not a valid version id. "
        'Allowed values are between [1, 2^31-1] and the string "latest"',
    )


def page(request: HttpRequest, items: list[Any]) -> list[Any]:
    """The ``offset``/``limit`` slice of a listing (a negative limit: no limit), as Confluent pages its lists."""
    offset, limit = (_int_query(request, name, default) for name, default in (("offset", 0), ("limit", -1)))
    rest = items[max(offset, 0):]
    return rest if limit < 0 else rest[:limit]


def _int_query(request: HttpRequest, name: str, default: int) -> int:
    text = request.query.get(name, [str(default)])[-1]
    try:
        return int(text)
    except ValueError:
        raise RegistryError(404, 404, f"HTTP 404 Not Found: {name}={text!r} is not a number") from None


def normalized_references(references: list[r.Json]) -> list[r.Json]:
    """References as Confluent's normalize() leaves them for every schema type: sorted by subject then version (a
    stable sort), equal ones (name, subject and version) once."""
    ordered = sorted(references, key=lambda ref: (str(ref.get("subject")), int(ref.get("version", 0))))
    unique: dict[str, r.Json] = {}
    for reference in ordered:
        unique.setdefault(json.dumps([reference.get(k) for k in ("name", "subject", "version")]), reference)
    return list(unique.values())


def version_view(version: Version, text: str | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {"subject": version.subject, "version": version.version, "id": version.schema_id}
    view.update(schema_view(version, text))
    return view


def schema_view(version: Version, text: str | None = None) -> dict[str, Any]:
    """The schema's own fields (its text, or `text`: another of its forms), with schemaType and references only when
    not the default (as Confluent omits them)."""
    view: dict[str, Any] = {}
    if version.schema_type != "AVRO":
        view["schemaType"] = version.schema_type
    if version.references:
        view["references"] = version.references
    view["schema"] = version.schema if text is None else text
    return view


class RegistryApi:
    """The routes; ``handle`` answers one request as (status, JSON value or RawBody)."""

    def __init__(self, state: RegistryState, write: Write) -> None:
        self.state = state
        self.write = write
        self.changes = asyncio.Lock()  # one change at a time: ids and versions are taken from the state
        self._parsed: dict[tuple[str, str, str], ParsedSchema] = {}
        self.routes: dict[tuple[str, ...], dict[str, Callable[..., Awaitable[Answer]]]] = {
            (): {"GET": self.root},
            ("contexts",): {"GET": self.contexts},
            ("schemas",): {"GET": self.list_schemas},
            ("schemas", "types"): {"GET": self.schema_types},
            ("schemas", "ids", "*"): {"GET": self.schema_by_id},
            ("schemas", "ids", "*", "schema"): {"GET": self.schema_text_by_id},
            ("schemas", "ids", "*", "versions"): {"GET": self.versions_of_id},
            ("schemas", "ids", "*", "subjects"): {"GET": self.subjects_of_id},
            ("subjects",): {"GET": self.list_subjects},
            ("subjects", "*"): {"POST": self.lookup, "DELETE": self.delete_subject},
            ("subjects", "*", "versions"): {"GET": self.list_versions, "POST": self.register},
            ("subjects", "*", "versions", "*"): {"GET": self.get_version, "DELETE": self.delete_version},
            ("subjects", "*", "versions", "*", "schema"): {"GET": self.get_version_schema},
            ("subjects", "*", "versions", "*", "referencedby"): {"GET": self.referenced_by},
            ("compatibility", "subjects", "*", "versions"): {"POST": self.compatibility},
            ("compatibility", "subjects", "*", "versions", "*"): {"POST": self.compatibility},
            ("config",): {"GET": self.get_config, "PUT": self.put_config, "DELETE": self.delete_config},
            ("config", "*"): {"GET": self.get_config, "PUT": self.put_config, "DELETE": self.delete_config},
            ("mode",): {"GET": self.get_mode, "PUT": self.put_mode},
            ("mode", "*"): {"GET": self.get_mode, "PUT": self.put_mode, "DELETE": self.delete_mode},
        }

    def described_routes(self) -> list[tuple[str, str, str]]:
        """Each route as (method, path with its parameters named as the operation names them, docstring)."""
        described = []
        for pattern, methods in self.routes.items():
            for method, operation in methods.items():
                names = iter(list(inspect.signature(operation).parameters)[1:])
                path = "/" + "/".join(f"{{{next(names)}}}" if part == "*" else part for part in pattern)
                described.append((method, path, inspect.getdoc(operation) or ""))
        return described

    def forget_parsed(self) -> None:
        self._parsed.clear()

    async def handle(self, request: HttpRequest) -> Answer:
        try:
            return await self._route(request, request.method, request.segments)
        except RegistryError as exc:
            return exc.status, exc.body()

    async def _route(self, request: HttpRequest, method: str, path: list[str]) -> Answer:
        for pattern, methods in self.routes.items():
            if len(pattern) == len(path) and all(p in ("*", s) for p, s in zip(pattern, path)):
                operation = methods.get(method)
                if operation is None:
                    raise RegistryError(405, 405, "HTTP 405 Method Not Allowed")
                args = [s for p, s in zip(pattern, path) if p == "*"]
                return await operation(request, *args)
        raise RegistryError(404, 404, "HTTP 404 Not Found")

    # ---- helpers ----

    def _body(self, request: HttpRequest) -> dict[str, Any]:
        try:
            value = json.loads(request.body) if request.body.strip() else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise RegistryError(400, 400, f"Unrecognized JSON: {exc}") from None
        if not isinstance(value, dict):
            raise RegistryError(400, 400, "The request body must be a JSON object")
        return value

    def _find(self, subject: str, number: int, deleted: bool) -> Version:
        """The version (``LATEST``: the newest) or 40401/40402."""
        versions = self.state.versions(subject, deleted)
        if not versions:
            raise subject_not_found(subject)
        if number == LATEST:
            return versions[-1]
        for version in versions:
            if version.version == number:
                return version
        raise version_not_found(number)

    def _parse(self, schema_type: str, text: str, references: list[r.Json]) -> ParsedSchema:
        """The schema parsed with its references resolved; 42201 for an invalid one or a missing reference."""
        schema_format = FORMATS.get(schema_type)
        if schema_format is None:
            raise invalid_schema(f"Invalid schema type {schema_type}")
        named: dict[str, str] = {}
        try:
            self._resolve(references, named, set())
        except LookupError as exc:
            raise invalid_schema(f"Invalid schema of type {schema_type}, details: {exc.args[0]}") from None
        try:
            return schema_format.parse(text, named)
        except InvalidSchemaError as exc:
            raise invalid_schema(str(exc)) from None

    def _resolve(self, references: list[r.Json], named: dict[str, str], seen: set[tuple[str, int]]) -> None:
        """The referenced schemas' texts by reference name, theirs first; LookupError with Confluent's words
        (AbstractSchemaProvider.resolveReferences) for a reference without a name, subject or version or to a version
        that is not there."""
        for reference in references:
            name, subject, number = (
                reference.get(k) if isinstance(reference, dict) else None for k in ("name", "subject", "version"))
            if not (isinstance(name, str) and isinstance(subject, str) and isinstance(number, int)):
                raise LookupError(f"Invalid reference: {reference!r}")
            if (subject, number) in seen:
                continue
            seen.add((subject, number))
            try:
                target = self._find(subject, number, deleted=True)
            except RegistryError:
                raise LookupError(f'No schema reference found for subject "{subject}" and version {number}') from None
            self._resolve(target.references, named, seen)
            named[name] = target.schema

    def _parsed_version(self, version: Version) -> ParsedSchema:
        identity = version.identity()
        parsed = self._parsed.get(identity)
        if parsed is None:
            parsed = self._parsed[identity] = self._parse(version.schema_type, version.schema, version.references)
        return parsed

    def _formatted(self, request: HttpRequest, version: Version) -> str | None:
        """The schema in the form ``?format=`` names (e.g. Protobuf's ``serialized``), None without one."""
        fmt = request.query.get("format", [""])[-1]
        return self._parsed_version(version).formatted(fmt) if fmt else None

    def _request_schema(
        self, request: HttpRequest, body: dict[str, Any], subject: str,
    ) -> tuple[str, list[r.Json], ParsedSchema]:
        """The request's schema parsed; in Confluent's normalized form (schema and references), which is then kept,
        with ``?normalize=true`` or when the subject's config (or the global one) says ``normalize``."""
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise invalid_schema("Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        references = body.get("references") or []
        if not isinstance(schema_type, str) or not isinstance(references, list):
            raise invalid_schema("schemaType must be a string and references a list")
        parsed = self._parse(schema_type, text, references)
        if flag(request, "normalize") or self.state.normalize(subject):
            return schema_type, normalized_references(references), parsed.normalize()
        return schema_type, references, parsed

    def _writable(self, subject: str | None) -> None:
        if self.state.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise not_permitted(f"Subject {subject} is in read-only mode" if subject else "The registry is read-only")

    def _incompatibilities(
        self, subject: str, schema_type: str, new: ParsedSchema, against: list[Version],
    ) -> list[str]:
        """Confluent's messages at the subject's level (`levels`); a version of another type fails, and a version
        is parsed only when the level reaches it."""

        def check(mode: str, version: Version) -> list[str]:
            if version.schema_type != schema_type:
                return ["Incompatible because of different schema type"]
            previous = self._parsed_version(version).with_version(version.version)
            return FORMATS[schema_type].check(mode, new, previous)

        return incompatibilities(self.state.compatibility(subject), against, check)

    # ---- schemas ----

    async def root(self, request: HttpRequest) -> Answer:
        """An empty object: the registry answers."""
        return 200, {}

    async def schema_types(self, request: HttpRequest) -> Answer:
        """The schema types served: AVRO, JSON, PROTOBUF."""
        return 200, list(FORMATS)

    async def contexts(self, request: HttpRequest) -> Answer:
        """The contexts: only the default context, `.`."""
        return 200, ["."]  # the default context: the only one served

    async def list_schemas(self, request: HttpRequest) -> Answer:
        """Every subject's versions (``latestOnly``: its newest), filtered by ``subjectPrefix``."""
        prefix = request.query.get("subjectPrefix", [""])[-1]
        deleted, latest_only = flag(request, "deleted"), flag(request, "latestOnly")
        found = []
        for subject in self.state.subject_names(deleted):
            if subject.startswith(prefix):
                versions = self.state.versions(subject, deleted)
                found += [version_view(v) for v in (versions[-1:] if latest_only else versions)]
        return 200, page(request, found)

    def _by_id(self, text: str) -> Version:
        version = self.state.by_id(int(text)) if text.lstrip("-").isdigit() else None
        if version is None:
            raise RegistryError(404, 40403, f"Schema {text} not found")
        return version

    async def schema_by_id(self, request: HttpRequest, schema_id: str) -> Answer:
        """The schema with that id (`format` for Protobuf's serialized form)."""
        version = self._by_id(schema_id)
        return 200, schema_view(version, self._formatted(request, version))

    async def schema_text_by_id(self, request: HttpRequest, schema_id: str) -> Answer:
        """The schema text alone."""
        version = self._by_id(schema_id)
        return 200, RawBody(CONTENT_TYPE, (self._formatted(request, version) or version.schema).encode())

    def _holders(self, request: HttpRequest, schema_id: str) -> list[Version]:
        """The versions holding the id (soft-deleted ones with ``deleted``); 40403 for an id never given or gone."""
        self._by_id(schema_id)
        deleted = flag(request, "deleted")
        return [
            v for subject in sorted(self.state.subjects) for v in self.state.versions(subject, deleted)
            if v.schema_id == int(schema_id)
        ]

    async def versions_of_id(self, request: HttpRequest, schema_id: str) -> Answer:
        """Every (subject, version) holding the schema with that id."""
        holders = self._holders(request, schema_id)
        return 200, page(request, [{"subject": v.subject, "version": v.version} for v in holders])

    async def subjects_of_id(self, request: HttpRequest, schema_id: str) -> Answer:
        """Every subject holding the schema with that id."""
        return 200, page(request, list(dict.fromkeys(v.subject for v in self._holders(request, schema_id))))

    # ---- subjects and versions ----

    async def list_subjects(self, request: HttpRequest) -> Answer:
        """Subjects with a live version; with ``deleted`` those with soft-deleted ones too; with ``deletedOnly`` those
        whose every version is soft-deleted (Confluent's LookupFilter)."""
        prefix = request.query.get("subjectPrefix", [""])[-1]
        deleted_only = flag(request, "deletedOnly")
        names = self.state.subject_names(deleted_only or flag(request, "deleted"))
        if deleted_only:
            names = [s for s in names if not self.state.versions(s)]
        return 200, page(request, [s for s in names if s.startswith(prefix)])

    async def list_versions(self, request: HttpRequest, subject: str) -> Answer:
        """The subject's version numbers: live ones; with ``deleted`` soft-deleted ones too, with ``deletedOnly`` only
        those, with ``deletedAsNegative`` all with the soft-deleted ones negated."""
        deleted_only, as_negative = flag(request, "deletedOnly"), flag(request, "deletedAsNegative")
        deleted = deleted_only or flag(request, "deleted")
        if not self.state.versions(subject, deleted):
            raise subject_not_found(subject)
        versions = self.state.versions(subject, deleted or as_negative)
        if as_negative:
            numbers = [-v.version if v.deleted else v.version for v in versions]
        else:
            numbers = [v.version for v in versions if v.deleted or not deleted_only]
        return 200, page(request, numbers)

    async def get_version(self, request: HttpRequest, subject: str, version: str) -> Answer:
        """One version of a subject (a number or `latest`)."""
        found = self._find(subject, parse_version(version), flag(request, "deleted"))
        return 200, version_view(found, self._formatted(request, found))

    async def get_version_schema(self, request: HttpRequest, subject: str, version: str) -> Answer:
        """One version's schema text alone."""
        found = self._find(subject, parse_version(version), flag(request, "deleted"))
        return 200, RawBody(CONTENT_TYPE, (self._formatted(request, found) or found.schema).encode())

    async def referenced_by(self, request: HttpRequest, subject: str, version: str) -> Answer:
        """The ids of the schemas that reference this version."""
        found = self._find(subject, parse_version(version), deleted=True)
        return 200, self.state.referenced_by(subject, found.version)

    async def lookup(self, request: HttpRequest, subject: str) -> Answer:
        """The newest version of the subject holding the schema (soft-deleted ones too with ``deleted``); the schema is
        parsed first, so an invalid one is 42201 whether the subject exists or not, as Confluent answers."""
        body = self._body(request)
        deleted = flag(request, "deleted")
        schema_type, references, parsed = self._request_schema(request, body, subject)
        identity = schema_identity(schema_type, parsed.canonical, references)
        versions = self.state.versions(subject, deleted)
        for version in reversed(versions):
            if version.identity() == identity:
                return 200, version_view(version, self._formatted(request, version))
        if not versions:
            raise subject_not_found(subject)
        raise RegistryError(404, 40403, "Schema not found")

    async def register(self, request: HttpRequest, subject: str) -> Answer:
        """Register a schema under the subject (its id, the existing one for a schema already there), checked against
        the subject's compatibility level."""
        body = self._body(request)
        async with self.changes:
            mode = self.state.mode(subject)
            self._writable(subject)
            schema_type, references, parsed = self._request_schema(request, body, subject)
            identity = schema_identity(schema_type, parsed.canonical, references)
            live = self.state.versions(subject)
            for version in live:
                if version.identity() == identity:
                    return 200, {"id": version.schema_id}
            if mode != "IMPORT":
                problems = self._incompatibilities(subject, schema_type, parsed, live)
                if problems:
                    raise RegistryError(
                        409, 40901, f'Schema being registered is incompatible with an earlier schema for subject '
                        f'"{subject}", details: [{", ".join(problems)}]',
                    )
            schema_id = self.state.id_for(identity)
            every = self.state.versions(subject, deleted=True)
            number = (every[-1].version if every else 0) + 1
            if mode == "IMPORT":  # ids and versions as another registry gave them
                schema_id, number = self._imported(body, identity, schema_id, number)
            elif schema_id is None:
                schema_id = self.state.max_id + 1
            self._parsed[identity] = parsed
            # Soft-deleted earlier versions of the same schema go for good, unless a schema still references them
            # (Confluent's register tombstones them, so the subject lists the schema once).
            records: list[r.Record] = [
                (r.schema_key(subject, v.version), None) for v in every
                if v.deleted and v.schema_id == schema_id and v.version < number
                and not self.state.referenced_by(subject, v.version, deleted=True)
            ]
            records.append((r.schema_key(subject, number), r.schema_value(
                subject, number, schema_id, parsed.canonical, schema_type, references, deleted=False)))
            await self.write(records)
        return 200, {"id": schema_id}

    def _imported(
        self, body: dict[str, Any], identity: tuple[str, str, str], known: int | None, number: int,
    ) -> tuple[int, int]:
        """The id and version an IMPORT registration asks for; 42207 for an id another schema holds."""
        given, version = body.get("id"), body.get("version")
        if isinstance(version, int) and version > 0:
            number = version
        if not isinstance(given, int) or given <= 0:
            return (known if known is not None else self.state.max_id + 1), number
        holder = self.state.by_id(given)
        if holder is not None and holder.identity() != identity:
            raise RegistryError(422, 42207, f"Overwrite new schema with id {given} is not permitted.")
        return given, number

    async def delete_version(self, request: HttpRequest, subject: str, version: str) -> Answer:
        """Soft-delete a version (`permanent=true` after a soft delete removes it)."""
        number, permanent = parse_version(version), flag(request, "permanent")
        async with self.changes:
            self._writable(subject)
            found = self._find(subject, number, deleted=permanent or number != LATEST)
            if not permanent and found.deleted:
                raise RegistryError(
                    404, 40406, f"Subject '{subject}' Version {found.version} was soft deleted."
                    "Set permanent=true to delete permanently")
            if permanent and not found.deleted:
                raise RegistryError(
                    404, 40407, f"Subject '{subject}' Version {found.version} was not deleted first before being "
                    "permanently deleted")
            self._no_references(subject, [found], permanent)
            value = None if permanent else r.schema_value(
                subject, found.version, found.schema_id, found.schema, found.schema_type, found.references, True)
            await self.write([(r.schema_key(subject, found.version), value)])
        return 200, found.version

    def _no_references(self, subject: str, versions: list[Version], permanent: bool) -> None:
        """42206 when a live schema references one of the versions (for a permanent delete, a soft-deleted one too:
        it could be brought back, as Confluent checks)."""
        for version in versions:
            if self.state.referenced_by(subject, version.version, deleted=permanent):
                raise RegistryError(
                    422, 42206, f"One or more references exist to the schema {{magic=1, keytype=SCHEMA, "
                    f"subject={subject}, version={version.version}}}.")

    async def delete_subject(self, request: HttpRequest, subject: str) -> Answer:
        """Soft-delete a subject's versions (`permanent=true` after a soft delete removes them)."""
        permanent = flag(request, "permanent")
        async with self.changes:
            self._writable(subject)
            every = self.state.versions(subject, deleted=True)
            live = [v for v in every if not v.deleted]
            if not every:
                raise subject_not_found(subject)
            if not permanent and not live:
                raise RegistryError(
                    404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
            if permanent and live:
                raise RegistryError(
                    404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")
            self._no_references(subject, every, permanent)
            if permanent:
                records: list[r.Record] = [(r.schema_key(subject, v.version), None) for v in every]
                records += [(r.subject_key(kind, subject), None) for kind in (r.CONFIG, r.MODE, r.DELETE_SUBJECT)]
            else:
                records = [(r.subject_key(r.DELETE_SUBJECT, subject), {"subject": subject, "version": live[-1].version})]
            await self.write(records)
        return 200, [v.version for v in (every if permanent else live)]

    # ---- compatibility ----

    async def compatibility(self, request: HttpRequest, subject: str, version: str | None = None) -> Answer:
        """Whether the schema may follow the subject's versions (or one of them) at its level; with ``verbose`` an
        invalid schema is an answer with its message, as Confluent gives it, else 42201."""
        body = self._body(request)
        live = self.state.versions(subject)
        against = live
        if version is not None:
            number = parse_version(version)
            against = live[-1:] if number == LATEST else [v for v in live if v.version == number]
            if number != LATEST and not against:
                raise version_not_found(number)
        try:
            schema_type, _, parsed = self._request_schema(request, body, subject)
        except RegistryError as exc:
            if exc.code != 42201 or not flag(request, "verbose"):
                raise
            return 200, {"is_compatible": False, "messages": [str(exc)]}
        problems = self._incompatibilities(subject, schema_type, parsed, against)
        answer: dict[str, Any] = {"is_compatible": not problems}
        if flag(request, "verbose"):
            answer["messages"] = problems
        return 200, answer

    # ---- config and mode ----

    async def get_config(self, request: HttpRequest, subject: str | None = None) -> Answer:
        """The config set for the subject (the global one without a subject); with ``defaultToGlobal`` the one in
        force, merged as Confluent's getConfigInScope does."""
        config = self.state.config_in_scope(subject) if flag(request, "defaultToGlobal") else self.state.config(subject)
        if config is None:
            raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")
        return 200, config

    async def put_config(self, request: HttpRequest, subject: str | None = None) -> Answer:
        """Set what the request names (``compatibility``, ``normalize``), keeping the rest of the config as it was
        (Confluent's ConfigValue.update); the answer is the config then set, in the request's field names."""
        body = self._body(request)
        level, normalize = body.get("compatibility"), body.get("normalize")
        if level is not None and (not isinstance(level, str) or level.upper() not in LEVELS):
            raise RegistryError(
                422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                "backward_transitive, forward_transitive, and full_transitive")
        if normalize is not None and not isinstance(normalize, bool):
            raise RegistryError(400, 400, f"Unrecognized JSON: normalize must be true or false, not {normalize!r}")
        async with self.changes:
            self._writable(subject)
            config = dict(self.state.configs.get(subject) or {})
            for field, key in CONFIG_FIELDS.items():
                if field in body:
                    config.pop(key, None)
                    if body[field] is not None:
                        config[key] = level.upper() if field == "compatibility" else body[field]
            await self.write([(r.subject_key(r.CONFIG, subject), config)])
        return 200, {field: config[key] for field, key in CONFIG_FIELDS.items() if key in config}

    async def delete_config(self, request: HttpRequest, subject: str | None = None) -> Answer:
        """Remove the subject's config (the global one without a subject), answering it; 40401 for a subject that has
        none, as Confluent answers."""
        async with self.changes:
            previous = self.state.config(subject)
            if previous is None:
                raise subject_not_found(subject or "")
            self._writable(subject)
            await self.write([(r.subject_key(r.CONFIG, subject), None)])
        return 200, previous

    async def get_mode(self, request: HttpRequest, subject: str | None = None) -> Answer:
        """The mode, global or a subject's: READWRITE, READONLY, READONLY_OVERRIDE or IMPORT."""
        if subject is not None and subject not in self.state.modes and not flag(request, "defaultToGlobal"):
            raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
        return 200, {"mode": self.state.mode(subject)}

    async def put_mode(self, request: HttpRequest, subject: str | None = None) -> Answer:
        """Set the mode, global or a subject's (`force=true` for IMPORT over existing schemas)."""
        mode = self._body(request).get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(
                422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT")
        mode = mode.upper()
        async with self.changes:
            if mode == "IMPORT" and not flag(request, "force") and (
                    self.state.versions(subject) if subject else self.state.subject_names()):
                raise not_permitted("Cannot import since found existing subjects")
            await self.write([(r.subject_key(r.MODE, subject), {"mode": mode})])
        return 200, {"mode": mode}

    async def delete_mode(self, request: HttpRequest, subject: str) -> Answer:
        """Drop a subject's mode, back to the global one."""
        async with self.changes:
            if subject not in self.state.modes:
                raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
            previous = self.state.modes[subject]
            await self.write([(r.subject_key(r.MODE, subject), None)])
        return 200, {"mode": previous}
