"""README.md's generated tables are the ones the code generates, so documentation cannot drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.commands.reference import TABLES, readme_block

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_readme_tables_match_the_code(name: str) -> None:
    assert readme_block(README.read_text(), name) == TABLES[name](), (
        f"README.md's {name} table differs from the code: run `python tools/sync_readme_config.py`"
    )
