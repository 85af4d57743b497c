"""README.md's configuration reference is the one the code generates, so documentation cannot drift."""

from __future__ import annotations

from pathlib import Path

from minibroker.config_reference import markdown_table, readme_block

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_configuration_reference_matches_broker_config() -> None:
    documented = readme_block(README.read_text())
    assert documented == markdown_table(), (
        "README.md's configuration table differs from BrokerConfig: run `python tools/sync_readme_config.py`"
    )
