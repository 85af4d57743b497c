"""The schema registry in the inspector: the JSON routes behind it (GET /v1/schemas, /v1/schemas/{subject}) and,
in headless Chromium, the Schemas view listing subjects and a subject's versions with their schemas."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from minibroker.testing import Broker
from tests.registryutil import call, record_schema
from tests.test_inspector_browser import open_view, row_cells, texts
from tests.webdriver import Session, browser_fixture, skip_reason  # noqa: F401  (the browser fixture)

V1 = record_schema("Order", {"name": "id", "type": "long"})
V2 = record_schema("Order", {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""})


@pytest.fixture(scope="module")
def registry_broker() -> Iterator[Broker]:
    with Broker(control=True, schema_registry=True) as broker:
        url = broker.schema_registry_url
        call(url, "POST", "/subjects/orders-value/versions", {"schema": V1})
        call(url, "POST", "/subjects/orders-value/versions", {"schema": V2})
        call(url, "POST", "/subjects/old-value/versions", {"schema": record_schema("Old")})
        call(url, "DELETE", "/subjects/old-value")
        yield broker


def control(broker: Broker, path: str) -> tuple[int, object]:
    return call(broker.control_url, "GET", path)


def test_the_json_routes_list_subjects_and_schemas(registry_broker: Broker) -> None:
    status, listed = control(registry_broker, "/v1/schemas")
    assert status == 200 and listed["url"] == registry_broker.schema_registry_url
    assert [(s["subject"], [(v["version"], v["id"], v["deleted"]) for v in s["versions"]]) for s in listed["subjects"]] == [
        ("old-value", [(1, 3, True)]), ("orders-value", [(1, 1, False), (2, 2, False)])]
    status, subject = control(registry_broker, "/v1/schemas/orders-value")
    assert status == 200 and json.loads(subject["versions"][1]["schema"]) == json.loads(V2)
    assert control(registry_broker, "/v1/schemas/nobody")[0] == 404
    with Broker(control=True) as plain:
        assert control(plain, "/v1/schemas")[0] == 404


@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_the_schemas_view_lists_subjects_and_shows_schemas(browser: Session, registry_broker: Broker) -> None:
    url = registry_broker.control_url
    open_view(browser, url + "/schemas", "table.subjects a[href='/schemas/orders-value']", "the subject list")
    rows = row_cells(browser, "table.subjects")
    assert rows[1][0] == "orders-value" and rows[1][1] == "1, 2" and rows[1][2] == "2"
    assert "soft-deleted" in rows[0][1]
    open_view(browser, url + "/schemas/orders-value", "pre.schema", "the schemas")
    shown = texts(browser, "pre.schema")
    assert [json.loads(text) for text in shown] == [json.loads(V2), json.loads(V1)]  # newest first
    assert any("Version 2 · id 2 · AVRO" in text for text in texts(browser, "section h2"))
