"""Compiled codecs kept between processes: a kept file is used only for the very source it holds, a damaged one
costs a compile, and nothing is written where Python would not write bytecode."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path

import pytest

from minibroker.server.codec_cache import CodeCache

SOURCE = "def answer():\n    return 42\n"


def run(code: object) -> int:
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the code under test is a codec's, compiled from our own source
    return namespace["answer"]()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources actually compiled."""
    done: list[str] = []
    real = builtins.compile

    def counting(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        done.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return done


def test_a_kept_codec_is_not_compiled_again(tmp_path: Path, compiles: list[str]) -> None:
    assert run(CodeCache(str(tmp_path)).compile(SOURCE, "<codec 1>")) == 42
    assert run(CodeCache(str(tmp_path)).compile(SOURCE, "<codec 1>")) == 42  # as a new process would
    assert compiles == [SOURCE]
    assert len(list(tmp_path.iterdir())) == 1


def test_a_file_is_used_only_for_the_source_it_holds(tmp_path: Path, compiles: list[str]) -> None:
    CodeCache(str(tmp_path)).compile(SOURCE, "<codec 1>")
    (kept,) = tmp_path.iterdir()
    other = SOURCE.replace("42", "43")
    CodeCache(str(tmp_path)).compile(other, "<codec 1>")
    other_file = next(path for path in tmp_path.iterdir() if path != kept)
    other_file.write_bytes(kept.read_bytes())  # as if the two sources had the same checksum and length
    assert run(CodeCache(str(tmp_path)).compile(other, "<codec 1>")) == 43
    assert compiles == [SOURCE, other, other]


@pytest.mark.parametrize("damage", [b"", b"garbage", b"\x00" * 40])
def test_a_damaged_file_costs_a_compile_and_is_replaced(tmp_path: Path, compiles: list[str], damage: bytes) -> None:
    cache = CodeCache(str(tmp_path))
    cache.compile(SOURCE, "<codec 1>")
    (kept,) = tmp_path.iterdir()
    kept.write_bytes(damage)
    assert run(CodeCache(str(tmp_path)).compile(SOURCE, "<codec 1>")) == 42
    assert run(CodeCache(str(tmp_path)).compile(SOURCE, "<codec 1>")) == 42
    assert compiles == [SOURCE, SOURCE]


def test_nothing_is_written_without_bytecode_writing(
    tmp_path: Path, compiles: list[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert run(CodeCache(str(tmp_path / "codecs")).compile(SOURCE, "<codec 1>")) == 42
    assert not (tmp_path / "codecs").exists()


def test_an_unwritable_place_only_costs_compiles(tmp_path: Path, compiles: list[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = CodeCache(str(blocker / "codecs"))
    assert run(cache.compile(SOURCE, "<codec 1>")) == 42
    assert run(cache.compile(SOURCE, "<codec 1>")) == 42
    assert compiles == [SOURCE, SOURCE]


def test_kept_where_python_keeps_the_bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from minibroker.server import codec_cache

    monkeypatch.setattr(sys, "pycache_prefix", None)
    package = Path(codec_cache.__file__).resolve().parent
    assert Path(codec_cache.bytecode_directory()) == package / "__pycache__" / "codecs"
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    assert codec_cache.bytecode_directory() == f"{tmp_path}{package}/codecs"


def test_a_broker_compiles_its_codecs_through_the_cache() -> None:
    from minibroker.protocol import schema
    from minibroker.testing import Broker

    with Broker():
        assert getattr(schema._compile_codec, "__self__", None).__class__ is CodeCache
