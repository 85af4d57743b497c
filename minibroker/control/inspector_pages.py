"""The web inspector's page and assets on the control listener (``/`` and the view paths; ``/assets/{file}``).

Every view has its own URL so it can be bookmarked and reloaded: each answers the same ``index.html``, whose script
reads the path and asks the ``/v1/`` API for the data. The page and assets hold no data, so no token guards them;
the strict Content-Security-Policy lets the page run only its own script, whatever text the data holds.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from minibroker.control.api import route
from minibroker.server.http import Answer, HttpError, HttpRequest, RawBody

if TYPE_CHECKING:
    from minibroker.broker import Broker

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache", "Referrer-Policy": "no-referrer"}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
VIEW_PATHS = (
    "/",
    "/topics/{name}",
    "/topics/{name}/{partition}",
    "/topics/{name}/{partition}/records/{offset}",
    "/groups/{id}",
    "/transactions/{id}",
    "/schemas",
    "/schemas/{subject}",
    "/faults",
    "/transcript",
)


@cache
def asset(name: str) -> RawBody:
    """An asset of the package (read once); 404 for a name that is not one of its files."""
    suffix = name[name.rfind("."):] if "." in name else ""
    files = resources.files("minibroker.inspector")
    if suffix not in CONTENT_TYPES or "/" in name or name.startswith(".") or not files.joinpath(name).is_file():
        raise HttpError(404, f"no inspector asset {name!r}")
    return RawBody(CONTENT_TYPES[suffix], files.joinpath(name).read_bytes(), HEADERS)


async def page(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The web inspector's page (the same page for each of its views)."""
    return 200, asset("index.html")


for path in VIEW_PATHS:
    route("GET", path)(page)


@route("GET", "/assets/{file}")
async def asset_file(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A file of the inspector's page (scripts, styles)."""
    return 200, asset(params[0])
