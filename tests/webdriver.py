"""A minimal W3C WebDriver client over urllib, and a pytest fixture running Debian's chromedriver.

The browser tests need a real browser but no browser library: chromedriver speaks W3C WebDriver (JSON over HTTP),
and the dozen commands the tests use fit in this module. Without ``/usr/bin/chromium`` and ``chromedriver`` the
tests skip with that reason (``.ci/run`` installs them); nothing is ever downloaded at test time.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
STARTED = re.compile(rb"started successfully on port (\d+)")
COMMAND_TIMEOUT_S = 30.0
T = TypeVar("T")


class WebDriverError(Exception):
    """An error the driver answered: its W3C error code (``no such element``, ``no such alert``, ...)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


def call(url: str, method: str = "GET", body: Any = None) -> Any:
    """One WebDriver command; its ``value``, or WebDriverError."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=COMMAND_TIMEOUT_S) as answer:
            return json.loads(answer.read())["value"]
    except urllib.error.HTTPError as exc:
        value = json.loads(exc.read() or b"{}").get("value", {})
        raise WebDriverError(value.get("error", str(exc.code)), value.get("message", "")) from None


class Element:
    """An element of the page, by the reference the driver gave it (stale once a poll re-renders it)."""

    def __init__(self, session: Session, element_id: str) -> None:
        self.session, self.id = session, element_id

    def _url(self, command: str) -> str:
        return f"{self.session.url}/element/{self.id}/{command}"

    def dom_property(self, name: str) -> Any:
        """The element's DOM property (an href resolved to a full URL, an input's current value)."""
        return call(self._url(f"property/{name}"))

    def click(self) -> None:
        call(self._url("click"), "POST", {})

    def send_keys(self, text: str) -> None:
        call(self._url("value"), "POST", {"text": text})

    def find(self, css: str) -> Element:
        found = call(self._url("element"), "POST", {"using": "css selector", "value": css})
        return Element(self.session, found[ELEMENT])


class Session:
    """One browser window driven through chromedriver."""

    def __init__(self, driver_url: str) -> None:
        capabilities = {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": str(CHROMIUM),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                     "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"],
        }}}
        answer = call(f"{driver_url}/session", "POST", {"capabilities": capabilities})
        self.url = f"{driver_url}/session/{answer['sessionId']}"

    def get(self, url: str) -> None:
        call(f"{self.url}/url", "POST", {"url": url})

    @property
    def current_url(self) -> str:
        return call(f"{self.url}/url")

    def find(self, css: str) -> Element:
        return Element(self, call(f"{self.url}/element", "POST", {"using": "css selector", "value": css})[ELEMENT])

    def find_all(self, css: str) -> list[Element]:
        found = call(f"{self.url}/elements", "POST", {"using": "css selector", "value": css})
        return [Element(self, item[ELEMENT]) for item in found]

    def execute(self, script: str, *args: Any) -> Any:
        return call(f"{self.url}/execute/sync", "POST", {"script": script, "args": list(args)})

    def alert_text(self) -> str | None:
        """The text of an open alert, confirm or prompt; None when none is open."""
        try:
            return call(f"{self.url}/alert/text")
        except WebDriverError as exc:
            if exc.error == "no such alert":
                return None
            raise

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(call(f"{self.url}/screenshot")))
        return path

    def wait(self, condition: Callable[[], T | None], timeout_s: float = 10.0, what: str = "the page") -> T:
        """Poll ``condition`` until it returns something truthy (WebDriver errors, e.g. an element not there yet or
        replaced by a poll, count as not yet); AssertionError naming ``what`` at the deadline."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            try:
                result = condition()
                if result:
                    return result
            except WebDriverError as exc:
                last = exc
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}"
                                     + (f" ({last})" if last else ""))
            time.sleep(0.1)

    def close(self) -> None:
        call(self.url, "DELETE")


def chromedriver_path() -> str | None:
    return shutil.which("chromedriver") or next(
        (str(p) for p in (Path("/usr/bin/chromedriver"), Path("/usr/lib/chromium/chromedriver")) if p.exists()), None)


def skip_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"no browser at {CHROMIUM} (apt-get install -y chromium chromium-driver)"
    if chromedriver_path() is None:
        return "no chromedriver (apt-get install -y chromium-driver)"
    return None


def start_chromedriver(log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """chromedriver on a port the system picks (--port=0), read from its start line."""
    driver = chromedriver_path()
    assert driver is not None
    process = subprocess.Popen([driver, "--port=0", f"--log-path={log_path}"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 20
    seen = b""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
        found = STARTED.search(line)
        if found:
            return process, f"http://127.0.0.1:{int(found.group(1))}"
    stop_process_group(process)
    raise RuntimeError(f"chromedriver did not start: {seen.decode(errors='replace')}")


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """Stop chromedriver and every browser process it started: they share the session it was started in."""
    for sig in (signal.SIGTERM, signal.SIGKILL):  # KILL: whatever of the browser outlived its driver
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            pass
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture(scope="module", name="browser")
def browser_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A headless Chromium window for the module's tests, stopped with its driver even when a test fails."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    process, url = start_chromedriver(tmp_path_factory.mktemp("chromedriver") / "chromedriver.log")
    try:
        session = Session(url)
        try:
            yield session
        finally:
            session.close()
    finally:
        stop_process_group(process)
