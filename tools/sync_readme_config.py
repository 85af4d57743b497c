"""Rewrite README.md's generated tables (settings and APIs): run after adding a setting or an API."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minibroker.commands.reference import with_tables  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> int:
    text = README.read_text()
    updated = with_tables(text)
    if updated == text:
        print("README.md generated tables are up to date")
    else:
        README.write_text(updated)
        print("README.md generated tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
