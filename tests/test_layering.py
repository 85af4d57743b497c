"""The sans-IO codecs and the storage engine stand on their own (the design's layering): ``protocol`` imports nothing
of the project outside itself, ``storage`` only itself and ``protocol``; neither ever imports the broker. Every
import counts, the ones inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {"protocol": {"protocol"}, "storage": {"storage", "protocol"}}


def project_imports(path: Path) -> set[str]:
    """The project packages a module imports (``minibroker.x`` absolute or ``..x`` relative names ``x``); a relative
    import is resolved from the module's own package (``protocol/messages/x.py``: ``..`` is ``minibroker.protocol``)."""
    here = ["minibroker", *path.parent.relative_to(ROOT).parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names = [".".join([*here[: len(here) - node.level + 1], *filter(None, [node.module])])]
            elif node.module:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "minibroker":
                found.add(parts[1] if len(parts) > 1 else "minibroker")
            elif parts[0] in ("protocol", "storage"):
                found.add(parts[0])
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_its_layer_may(package: str) -> None:
    strays = {
        str(path.relative_to(ROOT)): sorted(project_imports(path) - ALLOWED[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {path: names for path, names in strays.items() if names} == {}
