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


# What would make the codecs do IO: the modules of sockets, event loops, files and processes, ``open(...)``, and the
# file functions of ``os`` (``os`` itself stays allowed: the codecs read settings from the environment).
IO_MODULES = {"asyncio", "io", "marshal", "pathlib", "selectors", "shutil", "socket", "ssl", "subprocess", "tempfile"}
OS_FILE_CALLS = {"open", "read", "write", "makedirs", "mkdir", "remove", "rename", "replace", "unlink", "fsync", "scandir"}


def io_uses(path: Path) -> list[str]:
    """The IO a module's source names: imports of IO modules, ``open(...)`` and ``os.<file function>(...)`` calls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in IO_MODULES:
            found.append(str(node.module))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open":
                found.append(f"open() at line {node.lineno}")
            elif (isinstance(func, ast.Attribute) and func.attr in OS_FILE_CALLS and isinstance(func.value, ast.Name)
                  and func.value.id == "os"):
                found.append(f"os.{func.attr}() at line {node.lineno}")
    return found


def test_protocol_is_sans_io() -> None:
    uses = {str(path.relative_to(ROOT)): io_uses(path) for path in sorted((ROOT / "protocol").rglob("*.py"))}
    assert {path: found for path, found in uses.items() if found} == {}
