"""``python -m minibroker``: the same as the ``minibroker`` command."""

import sys

from minibroker.commands.cli import main

sys.exit(main())
