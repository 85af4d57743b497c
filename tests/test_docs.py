"""Docs that cannot rot: the site builds with ``mkdocs build --strict`` (a broken link, a missing page or an unknown
generated block fails it), its reference pages are what the code prints, the control API's OpenAPI document names
exactly the routes the broker answers, and every example marked ``<!-- runnable -->`` runs against a real broker.

A runnable Python example with tests (``def test_``, or a unittest case) runs under pytest, with this plugin's
broker; any other runs as a script and starts its own. A runnable shell example runs with ``bash -euo pipefail``
against a broker of three nodes with a control listener, a topic ``orders`` (3 partitions, 3 replicas) and a
group ``billing`` that committed an offset: the
addresses the docs write (``127.0.0.1:9092``, ``http://127.0.0.1:8090``) become that broker's, and no answer may be
a refusal (``{"error": ...}``)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.commands.reference import TABLES
from minibroker.control.api import all_routes
from minibroker.testing import Broker

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = re.compile(r"^<!-- runnable -->\n```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXAMPLE_TIMEOUT_S = 120
REFERENCE_PAGES = {"config-reference": "settings", "api-reference": "apis", "unserved-apis": "unserved-apis"}

mkdocs = pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")


def run(command: list[str], cwd: Path, timeout_s: float = EXAMPLE_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])  # this install's commands
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "PATH": path, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module as a user builds it."""
    out = tmp_path_factory.mktemp("site")
    built = run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], ROOT)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file() and (site / "search" / "search_index.json").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is what catches a link to a page that does not exist (the check above could not fail
    otherwise)."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "docs_hooks.py", tmp_path / "tools")
    with (tmp_path / "docs" / "dump.md").open("a") as page:
        page.write("\nSee [the missing page](missing.md).\n")
    built = run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")], tmp_path)
    assert built.returncode != 0 and "missing.md" in built.stderr


@pytest.mark.parametrize("name", sorted(REFERENCE_PAGES))
def test_a_reference_page_is_what_the_command_prints(site: Path, name: str) -> None:
    """The page's source names the block, the build puts the command's table there: every row of ``minibroker NAME``
    is on the built page."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from docs_hooks import generated
    finally:
        sys.path.remove(str(ROOT / "tools"))
    page = DOCS / "reference" / f"{REFERENCE_PAGES[name]}.md"
    printed = run([sys.executable, "-m", "minibroker", name], ROOT).stdout
    assert printed == TABLES[name]()
    assert printed.rstrip("\n") in generated(page.read_text())
    text = page_text(site / "reference" / REFERENCE_PAGES[name] / "index.html")
    first_cells = [row.split("|")[1].strip().replace("`", "") for row in printed.splitlines()[2:] if row.startswith("| ")]
    assert first_cells and all(cell in text for cell in first_cells)


def page_text(path: Path) -> str:
    """A built page's text, without its markup."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def test_the_control_api_page_lists_every_route(site: Path) -> None:
    text = page_text(site / "reference" / "control-api" / "index.html")
    paths = {"/" + "/".join(segments) for _, segments, _ in all_routes()}
    assert all(path in text for path in paths)


def test_the_readme_is_one_page_that_leads_into_the_site() -> None:
    """The README: at most 150 lines, the two commands a new user needs first, and every link it has leads to a file
    of the repository (the pages it links into are the site's)."""
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 150
    assert lines[2].startswith("Install and start the broker") and "`pip install . && minibroker`" in lines[2]
    assert lines[4].startswith("Install and run the tests") and "pytest" in lines[4]
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert targets and [target for target in targets if not (ROOT / target).is_file()] == []
    assert {target for target in targets if target.startswith("docs/")} >= {"docs/index.md", "docs/get-started.md"}


def http(method: str, url: str, body: dict | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_openapi_document_names_exactly_the_routes_the_broker_answers() -> None:
    """Every operation of ``GET /v1/openapi.json`` is answered by a route of that method (whatever the answer, it is
    never "no such path" or "use another method"), and a path it does not name is not served."""
    with Broker(control=True) as broker:
        status, body = http("GET", f"{broker.control_url}/v1/openapi.json")
        assert status == 200
        document = json.loads(body)
        assert document["openapi"].startswith("3.1")
        operations = [(method.upper(), path) for path, item in document["paths"].items() for method in item]
        assert sorted(operations) == sorted((method, "/" + "/".join(segments)) for method, segments, _ in all_routes())
        for method, path in operations:
            concrete = re.sub(r"\{[^}]+\}", "none-such", path)
            status, body = http(method, broker.control_url + concrete, {} if method in ("POST", "PUT") else None)
            assert status not in (404, 405) or b"no such control path" not in body and b"use " not in body, (
                method, path, status, body)
        status, body = http("GET", f"{broker.control_url}/v1/no-such-route")
        assert status == 404 and b"no such control path" in body


def examples() -> Iterator[tuple[str, str, str]]:
    for page in sorted(DOCS.rglob("*.md")):
        for number, match in enumerate(RUNNABLE.finditer(page.read_text()), 1):
            yield f"{page.relative_to(DOCS)}#{number}", match.group(1), match.group(2)


EXAMPLES = list(examples())


def test_the_docs_have_runnable_examples() -> None:
    languages = {language for _, language, _ in EXAMPLES}
    assert len(EXAMPLES) >= 6 and languages == {"python", "sh"}, EXAMPLES


@pytest.mark.parametrize(("where", "language", "code"), EXAMPLES, ids=[where for where, _, _ in EXAMPLES])
def test_a_runnable_example_runs(tmp_path: Path, where: str, language: str, code: str) -> None:
    if language == "python":
        tested = "def test_" in code or "unittest" in code
        script = tmp_path / ("test_example.py" if tested else "example.py")
        script.write_text(code)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)] if tested else [
            sys.executable, str(script)]
        result = run(command, tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        if tested:
            assert re.search(r"\b[1-9]\d* passed\b", result.stdout) and "failed" not in result.stdout, result.stdout
        return
    if shutil.which("curl") is None:
        pytest.skip("the shell examples call curl, which is not installed")
    with Broker(nodes=3, control=True) as broker:
        broker.create_topic("orders", partitions=3, replication_factor=3)
        commit_offset(broker.bootstrap_servers, "billing", "orders")
        shell = code.replace("http://127.0.0.1:8090", broker.control_url)
        shell = shell.replace("127.0.0.1:9092", broker.bootstrap_servers.split(",")[0])
        result = run(["bash", "-euo", "pipefail", "-c", shell], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    refused = [line for line in result.stdout.splitlines() if is_error_answer(line)]
    assert not refused, refused


def commit_offset(bootstrap: str, group: str, topic: str) -> None:
    """A group with an offset committed, as after a consumer's first commit."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()


def is_error_answer(line: str) -> bool:
    """The control API's refusal: ``{"error": "..."}`` alone."""
    try:
        answer = json.loads(line)
    except ValueError:
        return False
    return isinstance(answer, dict) and set(answer) == {"error"}
