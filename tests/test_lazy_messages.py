"""The generated descriptions load on first use (issue 28): a lookup builds the module of the API it names and no
other, the tables still iterate over everything, and THROTTLED_APIS is what Kafka's JSON says."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from minibroker.protocol import messages
from minibroker.protocol.messages import BY_NAME, REQUESTS, RESPONSES, THROTTLED_APIS
from minibroker.protocol.schema import MAX_VERSION, Field, Message

from tests.conftest import SPEC_DIR, needs_kafka_spec

PACKAGE = "minibroker.protocol.messages"
ROOT = Path(__file__).resolve().parents[1]


def loaded_after(code: str) -> list[str]:
    """The description modules a fresh interpreter has imported after importing the package and running ``code``."""
    probe = "\n".join([
        "import json, sys",
        f"import {PACKAGE} as messages",
        textwrap.dedent(code),
        f"print(json.dumps(sorted(n.removeprefix('{PACKAGE}.') for n in sys.modules if n.startswith('{PACKAGE}.'))))",
    ])
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_importing_the_package_builds_no_description() -> None:
    assert loaded_after("") == []


def test_the_headers_and_api_versions_build_only_their_modules() -> None:
    code = """
        from minibroker.protocol.messages import REQUEST_HEADER, RESPONSE_HEADER
        assert messages.REQUESTS[18].name == "ApiVersionsRequest"
        assert messages.RESPONSES.get(18).name == "ApiVersionsResponse"
        assert messages.BY_NAME["ApiVersionsRequest"] is messages.API_VERSIONS_REQUEST
        assert 0 in messages.REQUESTS and 1 in messages.RESPONSES and "FetchRequest" in messages.BY_NAME
        assert len(messages.REQUESTS) == len(messages.RESPONSES) > 40
        assert 0 in sorted(messages.REQUESTS)  # the keys alone build nothing
        assert messages.REQUESTS.get(-1) is None and 0 in messages.THROTTLED_APIS
    """
    assert loaded_after(code) == ["api_versions", "headers"]


def test_a_record_family_is_one_module() -> None:
    code = """
        from minibroker.protocol.messages import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
    """
    assert loaded_after(code) == ["transaction_coordinator_records"]


def test_iterating_a_table_builds_every_description() -> None:
    code = """
        assert len(list(messages.BY_NAME.values())) == len(messages.BY_NAME)
    """
    loaded = loaded_after(code)
    assert {"headers", "produce", "fetch", "api_versions", "group_coordinator_records"} <= set(loaded)
    assert len(loaded) == len(set(messages._DESCRIPTIONS.modules.values()))


def test_tables_and_names_give_the_same_descriptions() -> None:
    for key, request in REQUESTS.items():
        assert isinstance(request, Message) and request.kind == "request" and request.api_key == key
        assert RESPONSES[key].name == request.name.removesuffix("Request") + "Response"
        assert BY_NAME[request.name] is request
    for constant in messages._DESCRIPTIONS.modules:
        message = getattr(messages, constant)
        assert BY_NAME[message.name] is message
    assert len(BY_NAME) == len(messages._DESCRIPTIONS.modules)
    assert dict(REQUESTS) == {key: REQUESTS[key] for key in sorted(REQUESTS)}


def test_unknown_names_and_keys_are_refused() -> None:
    with pytest.raises(AttributeError, match="NO_SUCH_REQUEST"):
        messages.NO_SUCH_REQUEST  # noqa: B018
    with pytest.raises(ImportError):
        from minibroker.protocol.messages import NO_SUCH_REQUEST  # noqa: F401
    with pytest.raises(KeyError):
        REQUESTS[12345]
    assert REQUESTS.get(12345) is None and 12345 not in REQUESTS
    assert "PRODUCE_REQUEST" in dir(messages)


def test_descriptions_compare_and_hash_by_value() -> None:
    """The codec caches the parts of its codecs by field tuples (``schema._tail``): equal fields are one entry."""

    def partitions(nullable: tuple[int, int] | None = (1, 3)) -> Field:
        return Field("Partitions", "[]Partition", (0, MAX_VERSION), nullable=nullable,
                     fields=(Field("Index", "int32", (0, MAX_VERSION)),))

    one, same = partitions(), partitions()
    assert one is not same and one == same and hash(one) == hash(same) and len({one, same}) == 1
    assert one != partitions(None)
    assert one != ("Partitions", "[]Partition", (0, MAX_VERSION), (1, 3), None, None, None, True, False, one.fields)
    message = Message("X", 1, "request", (0, 1), None, (one,))
    assert message == Message("X", 1, "request", (0, 1), None, (same,))
    assert hash(message) == hash(Message("X", 1, "request", (0, 1), None, (same,)))
    assert message != Message("X", 1, "request", (0, 2), None, (one,))
    assert "Partitions" in repr(one) and "'X'" in repr(message)


def test_throttled_apis_are_the_responses_with_throttle_time() -> None:
    assert THROTTLED_APIS == {
        key for key, message in RESPONSES.items() if any(f.name == "ThrottleTimeMs" for f in message.fields)
    }


@needs_kafka_spec
def test_throttled_apis_match_kafka_json() -> None:
    from tests.test_schemas import load

    expected = set()
    for response in RESPONSES.values():
        spec = load(response.name)
        if any(f["name"] == "ThrottleTimeMs" for f in spec.get("fields", [])):
            expected.add(spec["apiKey"])
    assert THROTTLED_APIS == expected


@needs_kafka_spec
def test_the_package_is_what_the_generator_writes(tmp_path: Path) -> None:
    from tests.test_schemas import legacy_jar

    command = [sys.executable, str(ROOT / "tools" / "gen_schemas.py"), str(SPEC_DIR), "--out", str(tmp_path)]
    subprocess.run([*command, "--legacy", str(legacy_jar())], check=True, cwd=ROOT, timeout=60)
    generated = {path.name: path.read_text() for path in tmp_path.glob("*.py")}
    assert generated == {path.name: path.read_text() for path in (ROOT / "protocol" / "messages").glob("*.py")}
