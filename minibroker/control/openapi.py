"""The control API described as an OpenAPI 3.1 document, made from its route table: each route's method, path, path
parameters and docstring, so the description cannot name a route the broker lacks or miss one it has. Served at
``GET /v1/openapi.json``; the docs' control API reference page is generated from it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from minibroker import __version__
from minibroker.server.http import API_PREFIX

ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}


def operation(method: str, path: str, handler: Callable[..., Any]) -> dict[str, Any]:
    """One route: its summary (the docstring's first sentence), the whole docstring, its path parameters."""
    doc = " ".join(line.strip() for line in (inspect.getdoc(handler) or "").splitlines()).replace("``", "`")
    summary = doc.split(": ", 1)[0].split(". ", 1)[0].rstrip(".") if doc else path
    names = [segment[1:-1] for segment in path.split("/") if segment.startswith("{")]
    data = path.startswith(API_PREFIX)
    answer = {"application/json": {"schema": {}}} if data else {"text/html": {"schema": {"type": "string"}}}
    found: dict[str, Any] = {
        "operationId": f"{method.lower()}_{'_'.join(s.strip('{}') for s in path.split('/') if s) or 'root'}",
        "summary": summary,
        "description": doc,
        "responses": {
            "2XX": {"description": "The answer", "content": answer},
            "4XX": {"description": "A bad request, named", "content": {"application/json": {"schema": ERROR}}},
        },
    }
    if names:
        found["parameters"] = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                               for name in names]
    if method in ("POST", "PUT"):
        found["requestBody"] = {"required": False, "content": {"application/json": {"schema": {"type": "object"}}}}
    if data:
        found["security"] = [{}, {"bearer": []}]  # a token only when control.token is set
    return found


def openapi_document(routes: Iterable[tuple[str, tuple[str, ...], Callable[..., Any]]]) -> dict[str, Any]:
    """The document for ``routes`` (the control API's ``ROUTES``: method, path segments, handler)."""
    paths: dict[str, dict[str, Any]] = {}
    for method, segments, handler in routes:
        path = "/" + "/".join(segments)
        paths.setdefault(path, {})[method.lower()] = operation(method, path, handler)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "minibroker control API",
            "version": __version__,
            "description": "Test control and observation of a running minibroker: nodes, faults, the clock, "
                           "transcripts, snapshots, and views of topics, groups and transactions. Answers are JSON; "
                           "a bad request gets a 4xx with {\"error\": \"...\"}.",
        },
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
