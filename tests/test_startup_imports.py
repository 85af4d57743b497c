"""What a broker loads before it listens: the handler table declared without its modules, and the exact set of
minibroker modules a default ``serve`` has imported when it logs that it is ready (issue 28: start-up near the
interpreter's floor), and the NamedTuple classes it has made by then (none). A new import on that path fails here until
the list below says it belongs there."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from minibroker.handlers import HANDLERS, TABLE
from minibroker.handlers.registry import REGISTERED

# Runs ``serve`` as the command does, and at the "minibroker ready" line (the listener is up) prints the minibroker
# modules loaded so far and minibroker's named tuple classes made by then (typing.NamedTuple makes them through
# collections.namedtuple, which compiles each one's constructor: about 0.1 ms of start-up a class), and exits.
READY_PROBE = """
import collections, json, logging, os, sys
made = []
make = collections.namedtuple
def recorded(*args, **kwargs):
    cls = make(*args, **kwargs)
    made.append(cls.__module__ + "." + cls.__qualname__)
    return cls
collections.namedtuple = recorded
from minibroker.commands.cli import main

class AtReady(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("minibroker ready"):
            names = sorted(n for n in sys.modules if n == "minibroker" or n.startswith("minibroker."))
            ours = [name for name in made if name.startswith("minibroker.")]
            sys.stdout.write(json.dumps({"modules": names, "namedtuples": ours}))
            sys.stdout.flush()
            os._exit(0)

logging.getLogger("minibroker").addHandler(AtReady())
main(["serve", "--port", "0", "--data-dir", sys.argv[1]])
"""

DEFAULT_SERVE_MODULES = sorted(
    """
    minibroker minibroker.acls minibroker.acls.operations minibroker.acls.principal minibroker.acls.settings
    minibroker.broker minibroker.cluster minibroker.cluster.clock minibroker.cluster.features
    minibroker.cluster.placements minibroker.cluster.producer_ids minibroker.cluster.replicas minibroker.commands
    minibroker.commands.cli minibroker.config minibroker.config.dynamic minibroker.config.kafka_settings
    minibroker.config.listeners minibroker.config.settings minibroker.config.sources minibroker.config.values
    minibroker.groups minibroker.groups.group_configs minibroker.handlers minibroker.handlers.registry
    minibroker.protocol minibroker.protocol.compression minibroker.protocol.errors minibroker.protocol.frames
    minibroker.protocol.key_partitions minibroker.protocol.lazy_messages minibroker.protocol.messages
    minibroker.protocol.messages.headers minibroker.protocol.primitives minibroker.protocol.schema minibroker.server
    minibroker.server.codec_cache minibroker.server.connection minibroker.server.context minibroker.server.dispatch
    minibroker.server.eager minibroker.server.limits minibroker.server.tls minibroker.storage
    minibroker.storage.checkpoint minibroker.storage.clock minibroker.storage.config minibroker.storage.errors
    minibroker.storage.frozen_config minibroker.storage.log_manager minibroker.storage.topic_names
    minibroker.storage.topic_store minibroker.storage.uuid
    """.split()
)


def test_handler_table_is_what_the_modules_register() -> None:
    for module in sorted({f"minibroker.handlers.{m}" for _, _, m in TABLE.values()}):
        importlib.import_module(module)
    assert REGISTERED == {key: (h.min_version, h.max_version, h.module) for key, h in HANDLERS.items()}


def test_a_handler_is_found_through_its_module() -> None:
    handler = HANDLERS[18]
    assert handler.fn.__module__ == handler.module == "minibroker.handlers.metadata"
    assert handler.fn.__name__ == "api_versions"


@pytest.fixture(scope="module")
def at_ready() -> dict[str, list[str]]:
    """What the probe saw when a default ``serve`` was ready: {"modules": [...], "namedtuples": [...]}."""
    with tempfile.TemporaryDirectory() as data_dir:
        result = subprocess.run(
            [sys.executable, "-c", READY_PROBE, data_dir], capture_output=True, text=True, timeout=60,
            cwd=Path(__file__).resolve().parents[1],
        )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_default_serve_imports_only_what_it_needs_before_listening(at_ready: dict[str, list[str]]) -> None:
    loaded = at_ready["modules"]
    assert loaded == DEFAULT_SERVE_MODULES, (
        f"added: {sorted(set(loaded) - set(DEFAULT_SERVE_MODULES))}, gone: {sorted(set(DEFAULT_SERVE_MODULES) - set(loaded))}"
    )


def test_default_serve_makes_no_named_tuple_class_before_listening(at_ready: dict[str, list[str]]) -> None:
    """A type the start path needs is a plain class with ``__slots__``; one that must stay a tuple lives in a module
    loaded when it is first made (``storage.leader_epochs`` with the first partition)."""
    assert at_ready["namedtuples"] == []


# Standard modules a start-up does without, with what each cost it (callgrind, serve until ready): pathlib with the
# urllib.parse and ipaddress it imports 15 M instructions, json 2 M. The data directory's paths are strings
# (storage.checkpoint), and JSON files are read through read_json, which imports json only when a file exists.
AVOIDED_AT_START = {"pathlib", "urllib", "urllib.parse", "ipaddress", "json"}


def top_level_imports(path: Path) -> set[str]:
    """The modules a source file imports when it is loaded (imports inside functions and TYPE_CHECKING blocks are
    not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_start_path_does_not_import_costly_standard_modules() -> None:
    """Checked on the sources, so it holds whatever else the interpreter loaded first (an editable install's import
    hook loads pathlib itself)."""
    costly = {}
    for name in DEFAULT_SERVE_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        found = top_level_imports(Path(spec.origin)) & AVOIDED_AT_START
        if found:
            costly[name] = sorted(found)
    assert costly == {}
