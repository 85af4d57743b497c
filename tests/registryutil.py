"""Raw HTTP calls to the schema registry for the tests (urllib: no client library between the test and the wire)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def call(url: str, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    """(status, decoded JSON answer) of one request."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def record_schema(name: str, *fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "test", "fields": list(fields)})
