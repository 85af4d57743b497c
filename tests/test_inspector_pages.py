"""The inspector's page and assets as the control listener serves them, without a browser: every view path answers
the page, assets come with their types, and every answer carries the strict Content-Security-Policy that keeps data
from running as script. The token guards the API, not the page."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources

import pytest

from minibroker.control.inspector_pages import CSP, VIEW_PATHS
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S

ASSETS = sorted(p.name for p in resources.files("minibroker.inspector").iterdir() if not p.name.endswith(".py")
                and p.is_file())


def fetch(url: str, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Broker(control=True) as broker:
        yield broker.control_url


def test_every_view_path_answers_the_page_with_a_strict_policy(url: str) -> None:
    page = resources.files("minibroker.inspector").joinpath("index.html").read_bytes()
    for path in VIEW_PATHS:
        concrete = re.sub(r"\{[a-z]+\}", "x%3Cb%3E%2Fy", path)
        status, headers, body = fetch(url + concrete)
        assert (status, body) == (200, page), concrete
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert headers["Content-Security-Policy"] == CSP
        assert headers["Cache-Control"] == "no-cache" and headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert "script-src 'self';" in CSP and "unsafe" not in CSP and "default-src 'none'" in CSP


@pytest.mark.parametrize("name", ASSETS)
def test_assets_are_served_with_their_type(url: str, name: str) -> None:
    status, headers, body = fetch(f"{url}/assets/{name}")
    assert status == 200 and body == resources.files("minibroker.inspector").joinpath(name).read_bytes()
    expected = {"html": "text/html", "js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}
    assert headers["Content-Type"].startswith(expected[name.rsplit(".", 1)[1]])
    assert headers["Content-Security-Policy"] == CSP


@pytest.mark.parametrize("path", ["/assets/nope.js", "/assets/__init__.py", "/assets/..%2F__init__.py",
                                  "/assets/..%2Finspector_pages.py", "/assets/.hidden.js", "/topics/a/0/b"])
def test_what_is_not_an_asset_or_a_view_is_a_404(url: str, path: str) -> None:
    assert fetch(url + path)[0] == 404


def test_every_script_and_style_the_page_names_is_an_asset() -> None:
    """No CDN and no build step: the page and its modules name only files of the package."""
    files = resources.files("minibroker.inspector")
    named = set(re.findall(r'(?:src|href)="/assets/([^"]+)"', files.joinpath("index.html").read_text()))
    for script in (name for name in ASSETS if name.endswith(".js")):
        text = files.joinpath(script).read_text()
        named |= set(re.findall(r'from "\./([^"]+)"', text))
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "document.write" not in text, script
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", ""), script
    assert named and named <= set(ASSETS)


def test_the_token_guards_the_api_and_not_the_page() -> None:
    with Broker(control=True, control_token="s3cret") as broker:
        assert fetch(broker.control_url + "/")[0] == 200
        assert fetch(broker.control_url + "/assets/app.js")[0] == 200
        assert fetch(broker.control_url + "/v1/cluster")[0] == 401
        assert fetch(broker.control_url + "/v1/cluster", token="s3cret")[0] == 200
