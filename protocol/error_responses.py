"""An error answer to any request, built from the message schemas (Kafka's ``AbstractRequest.getErrorResponse``).

One generic rule instead of one function per API: the response mirrors the request. Every ``error_code`` gets the
error (and ``error_message`` says why); a response array takes one element per element of the request array of the
same name (or of every request array in turn, when the response has only one at that level), copying the fields
both share (topic names, partition indexes, keys, ids); a request array of plain values (FindCoordinator's keys,
AddPartitionsToTxn's partitions) fills the response element's first field of that type, and so does the first
string of an element that shares no field with the response's (a SCRAM deletion's user name). Every other field
keeps its default, set here (a complete answer, as the codec's strict mode wants it).
"""

from __future__ import annotations

from typing import Any

from .messages import REQUESTS, RESPONSES
from .schema import Field, default_value, in_range, snake_case

PARTITION_NAMES = ("partition_index", "partition", "index")  # one field under the names APIs give it


def error_response(api_key: int, version: int, request: dict[str, Any], error: int, message: str | None) -> dict[str, Any]:
    return _mirror(RESPONSES[api_key].fields, REQUESTS[api_key].fields, request, version, error, message)


def _present(fields: tuple[Field, ...], version: int) -> list[Field]:
    return [f for f in fields if in_range(version, f.versions)]


def _mirror(
    response_fields: tuple[Field, ...], request_fields: tuple[Field, ...], request: dict[str, Any], version: int,
    error: int, message: str | None,
) -> dict[str, Any]:
    fields = _present(response_fields, version)
    request_arrays = {snake_case(f.name): f for f in _present(request_fields, version) if f.element_type is not None}
    response_arrays = [f for f in fields if f.element_type is not None]
    out: dict[str, Any] = {}
    for f in fields:
        key = snake_case(f.name)
        if key.endswith("error_code") and f.type == "int16":
            out[key] = error
        elif key.endswith("error_message") and f.type == "string":
            out[key] = message
        elif f.element_type is not None:
            sources = _source_arrays(f, key, request_arrays, len(response_arrays), version)
            out[key] = [] if not f.is_struct else [
                _element(f, request_arrays[source], item, version, error, message)
                for source in sources for item in request.get(source) or []
            ]
        elif f.is_struct:
            out[key] = None if in_range(version, f.nullable) else _mirror(f.fields, (), {}, version, error, message)
        else:
            value = _shared_value(key, request)
            out[key] = default_value(f, version) if value is None else value
    return out


def _source_arrays(
    f: Field, key: str, request_arrays: dict[str, Field], response_array_count: int, version: int,
) -> list[str]:
    """The request arrays a response array mirrors: the one of the same name, else the one whose elements share the
    most field names with its elements (``topic_data`` / ``responses``: ``name``), else, when it is the only response
    array, every request array in turn (AlterUserScramCredentials: ``deletions`` then ``upsertions`` -> ``results``)."""
    if key in request_arrays:
        return [key]
    names = _element_names(f, version)
    best, shared = None, 0
    for request_key, request_field in request_arrays.items():
        overlap = len(names & _element_names(request_field, version))
        if overlap > shared:
            best, shared = request_key, overlap
    if best is not None:
        return [best]
    return list(request_arrays) if response_array_count == 1 else []


def _element_names(f: Field, version: int) -> set[str]:
    names = {snake_case(child.name) for child in _present(f.fields, version)}
    return names | set(PARTITION_NAMES) if names & set(PARTITION_NAMES) else names


def _shared_value(key: str, request: dict[str, Any]) -> Any:
    if key in request:
        return request[key]
    if key in PARTITION_NAMES:
        return next((request[name] for name in PARTITION_NAMES if name in request), None)
    return None


def _element(
    response_field: Field, request_field: Field, item: Any, version: int, error: int, message: str | None,
) -> dict[str, Any]:
    """One response element; the request element's identity (a plain value, or the first string of an element that
    shares no field name with the response's: a deletion's ``name`` as a result's ``user``) fills the response
    element's first field of that type."""
    if isinstance(item, dict):
        out = _mirror(response_field.fields, request_field.fields, item, version, error, message)
        if _element_names(response_field, version) & _element_names(request_field, version):
            return out
        identity = next((f for f in _present(request_field.fields, version) if f.type == "string"), None)
        if identity is None:
            return out
        item_type, item = "string", item[snake_case(identity.name)]
    else:
        out = _mirror(response_field.fields, (), {}, version, error, message)
        item_type = request_field.element_type
    same_type = next(
        (f for f in _present(response_field.fields, version) if f.type == item_type and f.element_type is None), None
    )
    if same_type is not None:
        out[snake_case(same_type.name)] = item
    return out
