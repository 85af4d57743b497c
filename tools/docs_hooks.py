"""MkDocs hook: the reference pages' tables are generated from the code when the site is built, never copied by hand.

A page names a generated block with a comment alone on its line, ``<!-- generated: NAME -->``; the build puts the
block there. ``config-reference``, ``api-reference`` and ``unserved-apis`` are what ``minibroker NAME`` prints;
``control-api`` is the control API's OpenAPI document (``GET /v1/openapi.json``) as a table; ``registry-api`` the
schema registry's routes. A name that is not one of these fails the build.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    return text.replace("``", "`").replace("|", r"\|").replace("\n", " ")


def control_api_table() -> str:
    """Every control route, from the OpenAPI document the broker serves."""
    from minibroker.control.api import all_routes
    from minibroker.control.openapi import openapi_document

    rows = ["| method | path | what it does |", "|---|---|---|"]
    for path, operations in openapi_document(all_routes())["paths"].items():
        for method, operation in operations.items():
            rows.append(f"| {method.upper()} | `{path}` | {_cell(operation['description'])} |")
    return "\n".join(rows) + "\n"


def registry_api_table() -> str:
    """Every route of the schema registry's REST API."""
    from minibroker.registry.api import RegistryApi
    from minibroker.registry.state import RegistryState

    rows = ["| method | path | what it does |", "|---|---|---|"]
    for method, path, doc in RegistryApi(RegistryState(), write=None).described_routes():  # type: ignore[arg-type]
        rows.append(f"| {method} | `{path}` | {_cell(doc)} |")
    return "\n".join(rows) + "\n"


def blocks() -> dict[str, Callable[[], str]]:
    from minibroker.commands.reference import TABLES

    return {**TABLES, "control-api": control_api_table, "registry-api": registry_api_table}


def generated(markdown: str) -> str:
    """``markdown`` with every marker replaced by its block; KeyError naming an unknown block."""
    known = blocks()

    def block(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise KeyError(f"no generated block {name!r}: the blocks are {', '.join(sorted(known))}")
        return known[name]().rstrip("\n")

    return MARKER.sub(block, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return generated(markdown)
