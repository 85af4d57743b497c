"""The layers of the project, as a rule a test holds: from the sans-IO codecs and the storage engine at the bottom,
through configuration, the cluster model, the subsystems, the server and the handlers, to the broker that composes
them and test control and the tools on top. Each unit (a package, or a top-level module) may import only the units
its entry below names; every import counts, the ones inside functions and under ``TYPE_CHECKING`` too, except that
any unit below the broker may name the broker's type under ``TYPE_CHECKING`` (they are handed the broker that owns
them, which is the honest shape of the code, not a dependency on its behaviour)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBSYSTEMS = {"acls", "sasl", "quotas", "groups", "share", "transactions", "registry"}
BELOW_CONTROL = {"protocol", "storage", "config", "cluster", "server", "handlers", "broker", "spark"} | SUBSYSTEMS

# unit -> the units (or single modules, ``unit.module``) it may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "storage": {"protocol"},
    # Configuration reads the settings modules of the subsystems that define their own settings, nothing else above it.
    "config": {"protocol", "storage", "acls.settings", "sasl.settings", "sasl.credential_file", "groups.group_configs",
               "cluster.racks"},
    "cluster": {"protocol", "storage", "config"},
    "acls": {"protocol", "storage", "config", "server.connection"},  # a principal is a connection's
    "sasl": {"protocol", "storage", "config"},
    "quotas": {"protocol", "storage", "config", "server.context"},  # a charge is a request's
    "groups": {"protocol", "storage", "config", "cluster", "share"},  # one coordinator holds every kind of group
    "share": {"protocol", "storage", "config", "cluster", "groups"},
    "transactions": {"protocol", "storage", "config", "cluster", "server.context"},
    "registry": {"protocol", "storage", "config", "cluster", "server.http"},  # the registry's HTTP listener
    "server": {"protocol", "storage", "config", "cluster", "acls", "sasl", "quotas", "handlers.registry"},
    "handlers": {"protocol", "storage", "config", "cluster", "server"} | SUBSYSTEMS,
    "broker": {"protocol", "storage", "config", "cluster", "server", "handlers", "control"} | SUBSYSTEMS,
    "control": {"minibroker", "protocol", "storage", "config", "cluster", "server", "handlers", "broker"} | SUBSYSTEMS,
    "control_client": set(),  # a plain HTTP client: users import it without the broker
    "spark": set(),  # the PySpark data source talks to any Kafka broker through its clients
    "testing": {"protocol", "storage", "config", "cluster", "broker", "control"},
    "pytest_marker": {"testing"},
    "pytest_plugin": {"config", "control", "control_client", "testing", "pytest_marker", "commands.probe"},
    "commands": {"minibroker", "protocol", "storage", "config", "cluster", "server", "handlers", "broker", "control",
                 "control_client"} | SUBSYSTEMS,
    "__main__": {"commands"},
}


def unit_of(module: str) -> str:
    """``minibroker.config.settings`` -> ``config``; ``minibroker.broker`` -> ``broker``; ``minibroker`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__version__" else "minibroker"


def module_name(path: Path) -> str:
    """The installed name of a source file (``protocol/x.py`` installs as ``minibroker.protocol.x``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == "minibroker" else ["minibroker", *parts])


def imports(path: Path, package: str) -> Iterator[tuple[str, bool]]:
    """(each project module the file imports, whether only under ``TYPE_CHECKING``); ``from a import b`` counts as
    ``a.b`` (``b`` may be a module); a relative import is resolved from ``package``."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(node) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(guard.test) for node in ast.walk(guard)}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = package.split(".")
                base = ".".join([*here[: len(here) - node.level + 1], *filter(None, [node.module])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] in ("protocol", "storage"):
                name = f"minibroker.{name}"
            if name.split(".")[0] == "minibroker":
                yield name, id(node) in typing_only


def permitted(importer: str, imported: str, typing_only: bool) -> bool:
    unit, target = unit_of(importer), unit_of(imported)
    if target == unit or (typing_only and target == "broker" and unit in BELOW_CONTROL - {"config"}):
        return True
    allowed = ALLOWED.get(unit, set())
    dotted = imported.split(".")
    return target in allowed or any(".".join(dotted[1:i]) in allowed for i in range(3, len(dotted) + 1))


def sources() -> list[Path]:
    return sorted(path for folder in ("minibroker", "protocol", "storage") for path in (ROOT / folder).rglob("*.py"))


def violations(paths: list[Path]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        wrong = sorted({imported for imported, typing_only in imports(path, package)
                        if not permitted(name, imported, typing_only)})
        if wrong:
            found[name] = wrong
    return found


def test_every_unit_is_in_the_table() -> None:
    units = {unit_of(module_name(path)) for path in sources()} - {"minibroker", "inspector"}
    assert units - set(ALLOWED) == set(), "a new package needs its line in ALLOWED"


def test_every_import_follows_the_layers() -> None:
    assert violations(sources()) == {}


@pytest.mark.parametrize(("file", "line"), [
    ("minibroker/config/stray.py", "from minibroker.server.connection import KafkaConnection"),
    ("minibroker/handlers/stray.py", "from minibroker.control.faults import Fault"),
    ("minibroker/server/stray.py", "from minibroker.commands import cli"),
    ("storage/stray.py", "from minibroker.config.settings import BrokerConfig"),
    ("protocol/stray.py", "import minibroker.storage.segment"),
    ("minibroker/groups/stray.py", "from ..broker import Broker"),  # the broker's type, but not under TYPE_CHECKING
    ("minibroker/cluster/stray.py", "from minibroker import testing"),
])
def test_a_wrong_import_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str, line: str) -> None:
    """The rule fails where it should: each import here breaks a direction (the file is checked as if it were in the
    tree; nothing is written there)."""
    stray = tmp_path / file
    stray.parent.mkdir(parents=True)
    stray.write_text(f"{line}\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert violations([stray]) != {}, line


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
