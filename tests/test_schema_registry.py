"""The schema registry's REST API over real HTTP: Confluent's routes, answers and error codes, deletes, configs,
keep-alive, bad input, and its state kept in ``_schemas`` across a restart and cleared by a reset."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from minibroker.testing import Broker
from tests.registryutil import CONTENT_TYPE, SAMPLES, Samples, broker, call, record_schema  # noqa: F401 (fixture)

V1 = record_schema("User", {"name": "name", "type": "string"})
V2 = record_schema("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0})
NO_DEFAULT = record_schema("User", {"name": "name", "type": "string"}, {"name": "email", "type": "string"})


@pytest.fixture
def url(broker: Broker) -> str:
    broker.reset()
    return broker.schema_registry_url


def test_register_fetch_and_global_ids(url: str) -> None:
    status, types = call(url, "GET", "/schemas/types")
    assert status == 200 and {"AVRO", "JSON", "PROTOBUF"} <= set(types)
    assert call(url, "POST", "/subjects/a-value/versions", {"schema": V1}) == (200, {"id": 1})
    assert call(url, "POST", "/subjects/a-value/versions", {"schema": V1}) == (200, {"id": 1})  # no new version
    assert call(url, "POST", "/subjects/b-value/versions", {"schema": V1}) == (200, {"id": 1})  # one id, two subjects
    spaced = json.dumps(json.loads(V2), indent=2)
    assert call(url, "POST", "/subjects/a-value/versions", {"schema": spaced, "schemaType": "AVRO"}) == (200, {"id": 2})
    assert call(url, "GET", "/subjects") == (200, ["a-value", "b-value"])
    assert call(url, "GET", "/subjects?subjectPrefix=b") == (200, ["b-value"])
    assert call(url, "GET", "/subjects/a-value/versions") == (200, [1, 2])
    status, latest = call(url, "GET", "/subjects/a-value/versions/latest")
    assert status == 200 and latest["subject"] == "a-value" and latest["version"] == 2 and latest["id"] == 2
    assert json.loads(latest["schema"]) == json.loads(V2) and "schemaType" not in latest
    assert call(url, "GET", "/subjects/a-value/versions/1")[1]["id"] == 1
    assert call(url, "GET", "/subjects/a-value/versions/2/schema") == (200, json.loads(V2))
    assert json.loads(call(url, "GET", "/schemas/ids/1")[1]["schema"]) == json.loads(V1)
    assert call(url, "GET", "/schemas/ids/1/schema") == (200, json.loads(V1))
    assert call(url, "GET", "/schemas/ids/1/versions") == (
        200, [{"subject": "a-value", "version": 1}, {"subject": "b-value", "version": 1}])
    status, found = call(url, "POST", "/subjects/a-value", {"schema": V2})
    assert status == 200 and (found["version"], found["id"]) == (2, 2)
    assert call(url, "GET", "/subjects/a-value/versions/1/referencedby") == (200, [])
    assert call(url, "GET", "/contexts") == (200, ["."])
    assert [(v["subject"], v["version"]) for v in call(url, "GET", "/schemas")[1]] == [
        ("a-value", 1), ("a-value", 2), ("b-value", 1)]
    assert [(v["subject"], v["id"]) for v in call(url, "GET", "/schemas?latestOnly=true&subjectPrefix=a")[1]] == [
        ("a-value", 2)]
    odd = "/subjects/" + urllib.parse.quote("a/b c?", safe="")
    assert call(url, "POST", odd + "/versions", {"schema": V1}) == (200, {"id": 1})
    assert call(url, "GET", odd + "/versions/latest")[1]["subject"] == "a/b c?"


def test_answers_carry_confluents_content_type_over_one_keep_alive_connection(url: str) -> None:
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        for _ in range(3):
            connection.request("GET", "/subjects")
            response = connection.getresponse()
            assert response.status == 200 and json.loads(response.read()) == []
            assert response.getheader("Content-Type") == CONTENT_TYPE
    finally:
        connection.close()


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("GET", "/subjects/none/versions", None, 404, 40401),
    ("GET", "/subjects/none/versions/1", None, 404, 40401),
    ("POST", "/subjects/none", {"schema": V1}, 404, 40401),
    ("DELETE", "/subjects/none", None, 404, 40401),
    ("GET", "/subjects/s/versions/7", None, 404, 40402),
    ("GET", "/schemas/ids/99", None, 404, 40403),
    ("POST", "/subjects/s", {"schema": V2}, 404, 40403),
    ("GET", "/subjects/s/versions/0", None, 422, 42202),
    ("GET", "/subjects/s/versions/newest", None, 422, 42202),
    ("POST", "/subjects/s/versions", {"schema": "{not json"}, 422, 42201),
    ("POST", "/subjects/s/versions", {"schema": ""}, 422, 42201),
    ("POST", "/subjects/s/versions", {"schema": V1, "schemaType": "XML"}, 422, 42201),
    ("POST", "/subjects/s/versions",
     {"schema": V1, "references": [{"name": "test.Missing", "subject": "gone", "version": 1}]}, 422, 42201),
    ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
    ("PUT", "/mode", {"mode": "WRITEONLY"}, 422, 42204),
    ("GET", "/config/s", None, 404, 40408),
    ("GET", "/mode/s", None, 404, 40409),
    ("GET", "/nowhere", None, 404, 404),
    ("PUT", "/subjects", None, 405, 405),
])
def test_error_codes(url: str, method: str, path: str, body: object, status: int, code: int) -> None:
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 1})
    answer_status, answer = call(url, method, path, body)
    assert (answer_status, answer["error_code"]) == (status, code), answer
    assert isinstance(answer["message"], str) and answer["message"]


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b""])
def test_a_body_that_is_not_a_json_object_is_answered_400(url: str, raw: bytes) -> None:
    status, answer = call(url, "POST", "/subjects/s/versions", raw=raw)
    assert (status, answer["error_code"]) == (400, 400)
    assert call(url, "GET", "/subjects") == (200, [])


def send_two_gigabytes_header(url: str, path: str) -> tuple[int, object]:
    """A request announcing a 2 GB body and sending none: answered before the body is read."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", CONTENT_TYPE)
        connection.putheader("Content-Length", str(2 * 1024**3))
        connection.endheaders()
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("samples", SAMPLES.values(), ids=list(SAMPLES))
def test_bad_input_of_each_type_gets_confluents_answers_and_loses_nothing(url: str, samples: Samples) -> None:
    assert call(url, "POST", "/subjects/dep/versions", samples.body(samples.dependency)) == (200, {"id": 1})
    assert call(url, "POST", "/subjects/s/versions", samples.body(samples.v1)) == (200, {"id": 2})
    before = registry_answers(url)
    v1 = samples.body(samples.v1)
    bad = [
        (None, b"{not json", 400, 400),
        (None, b'{"schema": ', 400, 400),
        (samples.body(samples.invalid), None, 422, 42201),
        ({**v1, "schemaType": "XML"}, None, 422, 42201),
        (samples.body(samples.referencing), None, 422, 42201),  # a reference it needs, not given
        (samples.body(samples.referencing, ("nowhere", 1)), None, 422, 42201),
        (samples.body(samples.referencing, ("dep", 9)), None, 422, 42201),
        ({**v1, "references": [{"name": samples.reference_name, "subject": "dep"}]}, None, 422, 42201),
    ]
    for path in ("/subjects/s/versions", "/subjects/new/versions", "/subjects/s", "/compatibility/subjects/s/versions"):
        for body, raw, status, code in bad:
            answer_status, answer = call(url, "POST", path, body, raw=raw)
            assert (answer_status, answer["error_code"]) == (status, code), (path, body or raw, answer)
            assert answer["message"], answer
        status, answer = send_two_gigabytes_header(url, path)
        assert (status, answer["error_code"]) == (413, 413)
    assert registry_answers(url) == before
    assert call(url, "POST", "/subjects/s/versions", v1) == (200, {"id": 2})  # and the registry goes on
    assert call(url, "POST", "/subjects/ref/versions", samples.body(samples.referencing, ("dep", 1))) == (
        200, {"id": 3})


@pytest.mark.parametrize("samples", SAMPLES.values(), ids=list(SAMPLES))
def test_normalize_as_a_query_parameter_and_as_a_subject_or_global_config(url: str, samples: Samples) -> None:
    body = samples.body(samples.unnormalized)
    assert call(url, "POST", "/subjects/plain/versions", body) == (200, {"id": 1})
    assert call(url, "POST", "/subjects/asked/versions?normalize=true", body) == (200, {"id": 2})  # another form
    assert call(url, "GET", "/schemas/ids/1")[1]["schema"] != call(url, "GET", "/schemas/ids/2")[1]["schema"]
    assert call(url, "PUT", "/config/configured", {"normalize": True}) == (200, {"normalize": True})
    assert call(url, "GET", "/config/configured") == (200, {"compatibilityLevel": "BACKWARD", "normalize": True})
    assert call(url, "POST", "/subjects/configured/versions", body) == (200, {"id": 2})
    status, found = call(url, "POST", "/subjects/configured", body)  # the lookup normalizes too
    assert status == 200 and (found["id"], found["version"]) == (2, 1)
    assert call(url, "POST", "/subjects/plain", body)[1]["id"] == 1
    assert call(url, "POST", "/subjects/plain?normalize=true", body)[1]["error_code"] == 40403
    # the global setting, merged under a subject's own config that leaves normalize unset
    assert call(url, "PUT", "/config", {"normalize": True}) == (200, {"normalize": True})  # no level set: none shown
    assert call(url, "PUT", "/config/other", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    assert call(url, "GET", "/config/other?defaultToGlobal=true") == (
        200, {"compatibilityLevel": "NONE", "normalize": True})
    assert call(url, "POST", "/subjects/other/versions", body) == (200, {"id": 2})
    assert call(url, "PUT", "/config/other", {"normalize": False}) == (
        200, {"compatibility": "NONE", "normalize": False})
    assert call(url, "POST", "/subjects/other/versions", body) == (200, {"id": 1})  # its own setting wins
    assert call(url, "PUT", "/config", {"normalize": None}) == (200, {})
    assert call(url, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


@pytest.mark.parametrize("samples", SAMPLES.values(), ids=list(SAMPLES))
def test_normalizing_sorts_references_by_subject_and_version_and_keeps_equal_ones_once(
        url: str, samples: Samples) -> None:
    call(url, "POST", "/subjects/dep/versions", samples.body(samples.dependency))
    call(url, "POST", "/subjects/a-dep/versions", samples.body(samples.dependency))  # the same schema, id 1
    given = samples.body(samples.referencing, ("dep", 1), ("a-dep", 1), ("dep", 1))
    assert call(url, "POST", "/subjects/plain/versions", given) == (200, {"id": 2})
    assert call(url, "GET", "/subjects/plain/versions/1")[1]["references"] == given["references"]
    assert call(url, "POST", "/subjects/normal/versions?normalize=true", given) == (200, {"id": 3})
    assert call(url, "GET", "/subjects/normal/versions/1")[1]["references"] == [
        {"name": samples.reference_name, "subject": "a-dep", "version": 1},
        {"name": samples.reference_name, "subject": "dep", "version": 1}]
    reordered = samples.body(samples.referencing, ("dep", 1), ("a-dep", 1))
    status, found = call(url, "POST", "/subjects/normal?normalize=true", reordered)
    assert status == 200 and found["id"] == 3


def test_listings_as_confluent_filters_and_pages_them(url: str) -> None:
    for subject in ("a", "b", "c"):
        call(url, "POST", f"/subjects/{subject}/versions", {"schema": V1})
    call(url, "POST", "/subjects/a/versions", {"schema": V2})
    call(url, "DELETE", "/subjects/a/versions/1")
    call(url, "DELETE", "/subjects/c")
    assert call(url, "GET", "/subjects?deletedOnly=true") == (200, ["c"])  # every version soft-deleted
    assert call(url, "GET", "/subjects?deleted=true&deletedOnly=true") == (200, ["c"])
    assert call(url, "GET", "/subjects?deleted=true&offset=1&limit=1") == (200, ["b"])
    assert call(url, "GET", "/subjects/a/versions?deletedOnly=true") == (200, [1])
    assert call(url, "GET", "/subjects/a/versions?deletedAsNegative=true") == (200, [-1, 2])
    assert call(url, "GET", "/subjects/c/versions?deletedOnly=true") == (200, [1])
    assert call(url, "GET", "/subjects/c/versions")[1]["error_code"] == 40401
    assert call(url, "GET", "/schemas/ids/1/versions") == (200, [{"subject": "b", "version": 1}])
    assert call(url, "GET", "/schemas/ids/1/versions?deleted=true&limit=2") == (
        200, [{"subject": "a", "version": 1}, {"subject": "b", "version": 1}])
    assert call(url, "GET", "/schemas/ids/1/subjects?deleted=true") == (200, ["a", "b", "c"])
    assert call(url, "GET", "/schemas/ids/1/subjects") == (200, ["b"])
    assert call(url, "GET", "/schemas/ids/9/subjects")[1]["error_code"] == 40403
    assert [(v["subject"], v["version"]) for v in call(url, "GET", "/schemas?deleted=true&offset=1")[1]] == [
        ("a", 2), ("b", 1), ("c", 1)]
    assert [(v["subject"], v["version"]) for v in call(url, "GET", "/schemas?latestOnly=true")[1]] == [
        ("a", 2), ("b", 1)]
    status, found = call(url, "POST", "/subjects/c", {"schema": V1})
    assert (status, found["error_code"]) == (404, 40401)  # every version soft-deleted
    status, found = call(url, "POST", "/subjects/c?deleted=true", {"schema": V1})
    assert status == 200 and (found["subject"], found["version"], found["id"]) == ("c", 1, 1)
    assert call(url, "POST", "/subjects/a", {"schema": V1})[1]["error_code"] == 40403
    assert call(url, "POST", "/subjects/a?deleted=true", {"schema": V1})[1]["version"] == 1


def test_the_compatibility_route_as_confluent_answers_a_missing_version_and_an_invalid_schema(url: str) -> None:
    assert call(url, "POST", "/compatibility/subjects/none/versions/1", {"schema": V1})[1]["error_code"] == 40402
    assert call(url, "POST", "/compatibility/subjects/none/versions/latest", {"schema": V1}) == (
        200, {"is_compatible": True})
    assert call(url, "POST", "/compatibility/subjects/none/versions", {"schema": "{"})[1]["error_code"] == 42201
    status, answer = call(url, "POST", "/compatibility/subjects/none/versions?verbose=true", {"schema": "{"})
    assert status == 200 and answer["is_compatible"] is False and len(answer["messages"]) == 1


def test_soft_and_permanent_deletes(url: str) -> None:
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    call(url, "POST", "/subjects/s/versions", {"schema": V2})
    assert call(url, "DELETE", "/subjects/s/versions/1?permanent=true")[1]["error_code"] == 40407
    assert call(url, "DELETE", "/subjects/s/versions/1") == (200, 1)
    assert call(url, "DELETE", "/subjects/s/versions/1")[1]["error_code"] == 40406
    assert call(url, "GET", "/subjects/s/versions") == (200, [2])
    assert call(url, "GET", "/subjects/s/versions?deleted=true") == (200, [1, 2])
    assert call(url, "GET", "/subjects/s/versions?deletedOnly=true") == (200, [1])
    assert [v["version"] for v in call(url, "GET", "/schemas?deleted=true")[1]] == [1, 2]
    assert call(url, "GET", "/subjects/s/versions/1")[1]["error_code"] == 40402
    assert call(url, "GET", "/subjects/s/versions/1?deleted=true")[1]["version"] == 1
    assert call(url, "GET", "/schemas/ids/1")[0] == 200  # a soft-deleted schema still decodes data
    assert call(url, "DELETE", "/subjects/s?permanent=true")[1]["error_code"] == 40405
    assert call(url, "DELETE", "/subjects/s") == (200, [2])
    assert call(url, "DELETE", "/subjects/s")[1]["error_code"] == 40404
    assert call(url, "GET", "/subjects") == (200, [])
    assert call(url, "GET", "/subjects?deleted=true") == (200, ["s"])
    assert call(url, "DELETE", "/subjects/s?permanent=true") == (200, [1, 2])
    assert call(url, "GET", "/subjects?deleted=true") == (200, [])
    assert call(url, "GET", "/schemas/ids/1")[1]["error_code"] == 40403
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 3})  # ids are never reused
    assert call(url, "GET", "/subjects/s/versions") == (200, [1])
    assert call(url, "POST", "/subjects/t/versions", {"schema": V1}) == (200, {"id": 3})  # its new id is global


def test_reregistering_after_a_soft_delete_keeps_the_id_in_a_new_version_that_replaces_the_deleted_one(
        url: str) -> None:
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    call(url, "DELETE", "/subjects/s")
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 1})
    # Confluent's register tombstones the soft-deleted version of the same schema
    assert call(url, "GET", "/subjects/s/versions?deleted=true") == (200, [2])
    assert call(url, "GET", "/subjects/s/versions/1?deleted=true")[1]["error_code"] == 40402


def test_a_soft_deleted_version_a_schema_still_references_stays_when_its_schema_is_registered_again(url: str) -> None:
    base = record_schema("Address", {"name": "city", "type": "string"})
    call(url, "POST", "/subjects/address/versions", {"schema": base})
    order = record_schema("Order", {"name": "to", "type": "test.Address"})
    references = [{"name": "test.Address", "subject": "address", "version": 1}]
    call(url, "POST", "/subjects/order/versions", {"schema": order, "references": references})
    assert call(url, "DELETE", "/subjects/order") == (200, [1])
    assert call(url, "DELETE", "/subjects/address/versions/1") == (200, 1)
    assert call(url, "POST", "/subjects/address/versions", {"schema": base}) == (200, {"id": 1})
    assert call(url, "GET", "/subjects/address/versions?deleted=true") == (200, [1, 2])
    # nor may a permanent delete take it while the soft-deleted schema references it
    assert call(url, "DELETE", "/subjects/address/versions/1?permanent=true")[1]["error_code"] == 42206
    assert call(url, "DELETE", "/subjects/order?permanent=true") == (200, [1])
    assert call(url, "DELETE", "/subjects/address/versions/1?permanent=true") == (200, 1)


def test_config_levels_global_and_per_subject(url: str) -> None:
    assert call(url, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    assert call(url, "PUT", "/config", {"compatibility": "full"}) == (200, {"compatibility": "FULL"})
    assert call(url, "GET", "/config") == (200, {"compatibilityLevel": "FULL"})
    assert call(url, "PUT", "/config/s", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    assert call(url, "GET", "/config/s") == (200, {"compatibilityLevel": "NONE"})
    assert call(url, "GET", "/config/t?defaultToGlobal=true") == (200, {"compatibilityLevel": "FULL"})
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    assert call(url, "POST", "/subjects/s/versions", {"schema": NO_DEFAULT})[0] == 200  # NONE: anything goes
    assert call(url, "DELETE", "/config/s") == (200, {"compatibilityLevel": "NONE"})
    assert call(url, "GET", "/config/s")[1]["error_code"] == 40408
    assert call(url, "DELETE", "/config") == (200, {"compatibilityLevel": "FULL"})
    assert call(url, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_mode(url: str) -> None:
    assert call(url, "GET", "/mode") == (200, {"mode": "READWRITE"})
    assert call(url, "PUT", "/mode", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, answer = call(url, "POST", "/subjects/s/versions", {"schema": V1})
    assert (status, answer["error_code"]) == (422, 42205)
    assert call(url, "PUT", "/mode", {"mode": "READWRITE"}) == (200, {"mode": "READWRITE"})
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 1})
    assert call(url, "PUT", "/mode", {"mode": "IMPORT"})[1]["error_code"] == 42205  # subjects exist


def test_import_mode_keeps_the_ids_and_versions_it_is_given(url: str) -> None:
    assert call(url, "PUT", "/mode", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1, "id": 100, "version": 5}) == (200, {"id": 100})
    status, answer = call(url, "POST", "/subjects/t/versions", {"schema": V2, "id": 100})
    assert (status, answer["error_code"]) == (422, 42207)
    call(url, "PUT", "/mode", {"mode": "READWRITE"})
    assert call(url, "GET", "/subjects/s/versions") == (200, [5])
    assert call(url, "POST", "/subjects/s/versions", {"schema": V2}) == (200, {"id": 101})
    assert call(url, "GET", "/subjects/s/versions") == (200, [5, 6])


def test_backward_compatibility_on_register_and_on_the_compatibility_route(url: str) -> None:
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    assert call(url, "POST", "/compatibility/subjects/s/versions/latest", {"schema": V2}) == (
        200, {"is_compatible": True})
    status, verbose = call(url, "POST", "/compatibility/subjects/s/versions/1?verbose=true", {"schema": NO_DEFAULT})
    assert status == 200 and verbose["is_compatible"] is False and verbose["messages"]
    assert call(url, "POST", "/compatibility/subjects/s/versions", {"schema": NO_DEFAULT})[1] == {"is_compatible": False}
    assert call(url, "POST", "/compatibility/subjects/new/versions/latest", {"schema": V1}) == (
        200, {"is_compatible": True})
    assert call(url, "POST", "/compatibility/subjects/s/versions/5", {"schema": V1})[1]["error_code"] == 40402
    status, answer = call(url, "POST", "/subjects/s/versions", {"schema": NO_DEFAULT})
    assert (status, answer["error_code"]) == (409, 40901) and '"s"' in answer["message"]
    assert call(url, "POST", "/subjects/s/versions", {"schema": V2}) == (200, {"id": 2})
    assert call(url, "GET", "/subjects/s/versions") == (200, [1, 2])


def test_references_and_referencedby(url: str) -> None:
    base = record_schema("Address", {"name": "city", "type": "string"})
    assert call(url, "POST", "/subjects/address/versions", {"schema": base}) == (200, {"id": 1})
    order = record_schema("Order", {"name": "to", "type": "test.Address"})
    references = [{"name": "test.Address", "subject": "address", "version": 1}]
    assert call(url, "POST", "/subjects/order/versions", {"schema": order, "references": references}) == (
        200, {"id": 2})
    status, version = call(url, "GET", "/subjects/order/versions/1")
    assert status == 200 and version["references"] == references
    assert call(url, "GET", "/schemas/ids/2")[1]["references"] == references
    assert call(url, "GET", "/subjects/address/versions/1/referencedby") == (200, [2])
    assert call(url, "DELETE", "/subjects/address/versions/1")[1]["error_code"] == 42206


def test_reset_clears_the_registry(broker: Broker, url: str) -> None:
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    broker.reset()
    assert call(url, "GET", "/subjects?deleted=true") == (200, [])
    assert call(url, "GET", "/schemas/ids/1")[1]["error_code"] == 40403
    assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 1})


def populate(url: str, samples: Samples) -> None:
    """Every kind of state a restart must keep, for one schema type: versions of a subject with one soft-deleted, a
    schema referencing another subject's, a permanently deleted version and subject, a soft-deleted subject, configs
    and a mode."""
    assert call(url, "POST", "/subjects/kept/versions", samples.body(samples.v1)) == (200, {"id": 1})
    assert call(url, "POST", "/subjects/kept/versions", samples.body(samples.v2)) == (200, {"id": 2})
    assert call(url, "DELETE", "/subjects/kept/versions/1") == (200, 1)
    assert call(url, "POST", "/subjects/dep/versions", samples.body(samples.dependency)) == (200, {"id": 3})
    assert call(url, "POST", "/subjects/ref/versions", samples.body(samples.referencing, ("dep", 1))) == (
        200, {"id": 4})
    assert call(url, "POST", "/subjects/version-gone/versions", samples.body(samples.dependency)) == (200, {"id": 3})
    assert call(url, "DELETE", "/subjects/version-gone/versions/1") == (200, 1)
    assert call(url, "DELETE", "/subjects/version-gone/versions/1?permanent=true") == (200, 1)
    assert call(url, "POST", "/subjects/gone/versions", samples.body(samples.other)) == (200, {"id": 5})
    assert call(url, "DELETE", "/subjects/gone") == (200, [1])
    assert call(url, "DELETE", "/subjects/gone?permanent=true") == (200, [1])
    assert call(url, "POST", "/subjects/soft/versions", samples.body(samples.v1)) == (200, {"id": 1})
    assert call(url, "DELETE", "/subjects/soft") == (200, [1])
    call(url, "PUT", "/config", {"compatibility": "FORWARD"})
    call(url, "PUT", "/config/kept", {"compatibility": "NONE"})
    call(url, "PUT", "/config/soft", {"normalize": True})
    call(url, "PUT", "/mode/dep", {"mode": "READONLY"})


def registry_answers(url: str) -> dict[str, object]:
    """The answers a restart must leave as they were: subjects, versions (soft-deleted ones too), schemas by id with
    their holders, references, configs and modes."""
    paths = ["/subjects", "/subjects?deleted=true", "/subjects?deletedOnly=true", "/schemas?deleted=true", "/config",
             "/mode"]
    for subject in call(url, "GET", "/subjects?deleted=true")[1]:
        paths += [f"/subjects/{subject}/versions", f"/subjects/{subject}/versions?deleted=true",
                  f"/config/{subject}", f"/mode/{subject}"]
        for version in call(url, "GET", f"/subjects/{subject}/versions?deleted=true")[1]:
            paths += [f"/subjects/{subject}/versions/{version}?deleted=true",
                      f"/subjects/{subject}/versions/{version}/referencedby"]
    for schema in call(url, "GET", "/schemas?deleted=true")[1]:
        paths += [f"/schemas/ids/{schema['id']}", f"/schemas/ids/{schema['id']}/versions?deleted=true"]
    return {path: call(url, "GET", path) for path in paths}


def check_populated(url: str, samples: Samples) -> None:
    assert call(url, "GET", "/subjects") == (200, ["dep", "kept", "ref"])
    assert call(url, "GET", "/subjects?deleted=true") == (200, ["dep", "kept", "ref", "soft"])
    assert call(url, "GET", "/subjects/kept/versions?deleted=true") == (200, [1, 2])
    assert call(url, "GET", "/subjects/kept/versions") == (200, [2])
    assert call(url, "GET", "/schemas/ids/1/versions?deleted=true") == (
        200, [{"subject": "kept", "version": 1}, {"subject": "soft", "version": 1}])
    assert call(url, "GET", "/schemas/ids/5")[1]["error_code"] == 40403  # permanently deleted
    assert call(url, "GET", "/subjects/gone/versions?deleted=true")[1]["error_code"] == 40401
    assert call(url, "GET", "/subjects/version-gone/versions?deleted=true")[1]["error_code"] == 40401
    assert call(url, "GET", "/schemas/ids/3/versions?deleted=true") == (200, [{"subject": "dep", "version": 1}])
    assert call(url, "GET", "/subjects/dep/versions/1/referencedby") == (200, [4])
    status, found = call(url, "POST", "/subjects/ref", samples.body(samples.referencing, ("dep", 1)))
    assert status == 200 and (found["id"], found["version"]) == (4, 1)  # parsed again with its reference
    assert call(url, "GET", "/config") == (200, {"compatibilityLevel": "FORWARD"})
    assert call(url, "GET", "/config/kept") == (200, {"compatibilityLevel": "NONE"})
    assert call(url, "GET", "/config/soft") == (200, {"compatibilityLevel": "BACKWARD", "normalize": True})
    assert call(url, "GET", "/mode/dep") == (200, {"mode": "READONLY"})


@pytest.mark.parametrize("samples", SAMPLES.values(), ids=list(SAMPLES))
def test_a_restart_keeps_subjects_versions_ids_configs_and_soft_deletes(tmp_path: Path, samples: Samples) -> None:
    with Broker(schema_registry=True, data_dir=tmp_path) as broker:
        url = broker.schema_registry_url
        populate(url, samples)
        check_populated(url, samples)
        before = registry_answers(url)
        broker.restart()
        assert broker.schema_registry_url == url  # the same port
        assert registry_answers(url) == before
        check_populated(url, samples)
        assert call(url, "POST", "/subjects/new/versions", samples.body(samples.other)) == (200, {"id": 6})
        records = broker.records("_schemas", 0)
    keys = [json.loads(record["key"]) for batch in records["batches"] for record in batch["records"]]
    assert {"keytype": "SCHEMA", "subject": "kept", "version": 1, "magic": 1} in keys
    assert {"keytype": "CONFIG", "subject": None, "magic": 0} in keys


def test_dump_decodes_the_schemas_topic(tmp_path: Path) -> None:
    import io

    from minibroker.commands.dump import dump_paths

    with Broker(schema_registry=True, data_dir=tmp_path) as broker:
        url = broker.schema_registry_url
        call(url, "POST", "/subjects/s/versions", {"schema": V1})
        call(url, "DELETE", "/subjects/s")
        call(url, "DELETE", "/subjects/s?permanent=true")
    out, err = io.StringIO(), io.StringIO()
    assert dump_paths([tmp_path / "_schemas-0"], print_data=False, decoder_name=None, as_json=True, out=out, err=err) == 0
    decoded = [record["decoded"] for line in out.getvalue().splitlines() for record in json.loads(line)["records"]]
    assert decoded[0]["key"] == {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}
    assert decoded[0]["value"]["id"] == 1 and decoded[0]["value"]["deleted"] is False
    assert decoded[1] == {"key": {"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0},
                          "value": {"subject": "s", "version": 1}}
    assert {"key": {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}, "value": None} in decoded
    text = io.StringIO()
    dump_paths([tmp_path / "_schemas-0"], print_data=False, decoder_name=None, as_json=False, out=text, err=err)
    assert 'key: {"keytype":"SCHEMA","subject":"s","version":1,"magic":1} payload: <DELETE>' in text.getvalue()


def test_the_command_line_flag_names_the_setting() -> None:
    from minibroker.commands.cli import build_parser, flag_settings, with_default_command

    args = build_parser().parse_args(with_default_command(["serve", "--schema-registry-port", "8081"]))
    assert flag_settings(args)["schema.registry.port"] == "8081"


def test_the_control_api_shows_the_registrys_url() -> None:
    from minibroker.control_client import ControlClient

    with Broker(control=True, schema_registry=True) as broker:
        assert ControlClient(broker.control_url).health()["schema_registry_url"] == broker.schema_registry_url
    with Broker(control=True) as broker:
        assert ControlClient(broker.control_url).health()["schema_registry_url"] is None
        with pytest.raises(RuntimeError):
            broker.schema_registry_url


def test_a_token_guards_the_registry_and_lets_it_listen_beyond_loopback() -> None:
    import base64

    from minibroker.config.settings import ConfigError

    with pytest.raises(ConfigError, match="schema.registry.token"):
        with Broker({"schema.registry.host": "0.0.0.0"}, schema_registry=True):
            pass
    settings = {"schema.registry.host": "0.0.0.0", "schema.registry.token": "s3cret"}
    with Broker(settings, schema_registry=True) as broker:
        url = "http://127.0.0.1:%d" % urlsplit(broker.schema_registry_url).port
        for headers, status in [
            ({}, 401), ({"Authorization": "Bearer wrong"}, 401), ({"Authorization": "Bearer s3cret"}, 200),
            ({"Authorization": "Basic " + base64.b64encode(b"anyone:s3cret").decode()}, 200),
            ({"Authorization": "Basic " + base64.b64encode(b"anyone:wrong").decode()}, 401),
            ({"Authorization": "Basic %%%"}, 401),
        ]:
            request = urllib.request.Request(url + "/subjects", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    answer_status, answer = response.status, json.loads(response.read())
            except urllib.error.HTTPError as exc:
                answer_status, answer = exc.code, json.loads(exc.read())
            assert answer_status == status, (headers, answer)
            assert answer == ([] if status == 200 else {"error_code": 401, "message": "Unauthorized"})
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

        client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "anyone:s3cret"})
        assert client.register_schema("s", Schema(V1, "AVRO")) == 1


@pytest.mark.parametrize("samples", SAMPLES.values(), ids=list(SAMPLES))
def test_a_broker_process_keeps_its_schemas_across_a_crash(tmp_path: Path, samples: Samples) -> None:
    import re

    from tests.brokerproc import BrokerProcess

    process = BrokerProcess(tmp_path / "data", "schema.registry.port=0")
    try:
        process.start()
        url = re.findall(r"schema registry on (http://\S+)", process.log_path.read_text())[-1]
        populate(url, samples)
        before = registry_answers(url)
        process.kill()  # SIGKILL: what the registry acknowledged is on disk
        process.start()
        url = re.findall(r"schema registry on (http://\S+)", process.log_path.read_text())[-1]
        assert registry_answers(url) == before
        check_populated(url, samples)
    finally:
        process.stop()


def test_a_snapshot_restore_brings_the_registry_back(broker: Broker, url: str) -> None:
    call(url, "POST", "/subjects/s/versions", {"schema": V1})
    broker.snapshot("one-subject")
    call(url, "POST", "/subjects/s/versions", {"schema": V2})
    call(url, "POST", "/subjects/t/versions", {"schema": V1})
    broker.restore("one-subject")
    assert call(url, "GET", "/subjects") == (200, ["s"])
    assert call(url, "GET", "/subjects/s/versions") == (200, [1])


def test_a_cluster_keeps_the_registry_on_its_nodes() -> None:
    with Broker(nodes=3, schema_registry=True) as broker:
        url = broker.schema_registry_url
        assert call(url, "POST", "/subjects/s/versions", {"schema": V1}) == (200, {"id": 1})
        assert call(url, "GET", "/subjects/s/versions/latest")[1]["id"] == 1


A_INT = record_schema("T", {"name": "a", "type": "int"})
NO_A = record_schema("T")
A_STRING = record_schema("T", {"name": "a", "type": "string", "default": "x"})


# v1 has a:int, v2 no a; the new schema has a:string with a default. Against v2 alone it is compatible both ways
# (each side ignores or defaults a); against v1 neither way (int and string do not resolve): only the transitive
# levels, which check every version, refuse it.
@pytest.mark.parametrize(("level", "compatible"), [
    ("NONE", True), ("BACKWARD", True), ("FORWARD", True), ("FULL", True),
    ("BACKWARD_TRANSITIVE", False), ("FORWARD_TRANSITIVE", False), ("FULL_TRANSITIVE", False),
])
def test_the_subjects_level_decides_which_versions_a_new_schema_is_checked_against(
    url: str, level: str, compatible: bool,
) -> None:
    call(url, "PUT", "/config/t", {"compatibility": "NONE"})
    call(url, "POST", "/subjects/t/versions", {"schema": A_INT})
    call(url, "POST", "/subjects/t/versions", {"schema": NO_A})
    call(url, "PUT", "/config/t", {"compatibility": level})
    status, answer = call(url, "POST", "/compatibility/subjects/t/versions?verbose=true", {"schema": A_STRING})
    assert status == 200 and answer["is_compatible"] is compatible, answer
    status, registered = call(url, "POST", "/subjects/t/versions", {"schema": A_STRING})
    assert (status == 200) is compatible, registered
    if not compatible:
        assert (status, registered["error_code"]) == (409, 40901)
        assert answer["messages"] and "TYPE_MISMATCH" in registered["message"]
