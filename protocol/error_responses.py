"""An error answer to any request, built from the message schemas (Kafka's ``AbstractRequest.getErrorResponse``).

One generic rule instead of one function per API: the response mirrors the request. Every ``error_code`` gets the
error (and ``error_message`` says why); a response array takes one element per element of the request array of the
same name (or of the only array, when request and response have one each at that level), copying the fields both
share (topic names, partition indexes, keys, ids); a request array of plain values (FindCoordinator's keys,
AddPartitionsToTxn's partitions) fills the response element's first field of that type. Every other field keeps
its default, set here (a complete answer, as the codec's strict mode wants it).
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
            source_key = _source_array(f, key, request_arrays, len(response_arrays), version)
            out[key] = [] if source_key is None or not f.is_struct else [
                _element(f, request_arrays[source_key], item, version, error, message)
                for item in request.get(source_key) or []
            ]
        elif f.is_struct:
            out[key] = None if in_range(version, f.nullable) else _mirror(f.fields, (), {}, version, error, message)
        else:
            value = _shared_value(key, request)
            out[key] = default_value(f, version) if value is None else value
    return out


def _source_array(
    f: Field, key: str, request_arrays: dict[str, Field], response_array_count: int, version: int,
) -> str | None:
    """The request array a response array mirrors: the one of the same name, else the one whose elements share the
    most field names with its elements (``topic_data`` / ``responses``: ``name``), else the only one on both sides."""
    if key in request_arrays:
        return key
    names = _element_names(f, version)
    best, shared = None, 0
    for request_key, request_field in request_arrays.items():
        overlap = len(names & _element_names(request_field, version))
        if overlap > shared:
            best, shared = request_key, overlap
    if best is None and response_array_count == 1 and len(request_arrays) == 1:
        best = next(iter(request_arrays))
    return best


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
    if isinstance(item, dict):
        return _mirror(response_field.fields, request_field.fields, item, version, error, message)
    out = _mirror(response_field.fields, (), {}, version, error, message)
    same_type = next(
        (f for f in _present(response_field.fields, version) if f.type == request_field.element_type), None
    )
    if same_type is not None:
        out[snake_case(same_type.name)] = item
    return out
