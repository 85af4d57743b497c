"""Rewrite README.md's configuration reference from ``BrokerConfig`` (run after adding or changing a setting)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minibroker.config_reference import with_table  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> int:
    text = README.read_text()
    updated = with_table(text)
    if updated == text:
        print("README.md configuration reference is up to date")
    else:
        README.write_text(updated)
        print("README.md configuration reference rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
