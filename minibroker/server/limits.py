"""Process limits the broker needs: one file descriptor per connection, plus its segment and index files."""

from __future__ import annotations

import logging
import resource

log = logging.getLogger(__name__)

WANTED_OPEN_FILES = 4096  # a thousand connections and the files of a few hundred partitions


def raise_open_file_limit(wanted: int = WANTED_OPEN_FILES) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (the default soft limit, often 1024, is too low for many
    connections); logs a warning if even the hard limit is below ``wanted``. Returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open file limit from %d to %d: %s", soft, target, exc)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        log.warning(
            "open file limit is %d (hard limit %s): fewer than %d connections and log files can be open at once",
            soft, "unlimited" if hard == resource.RLIM_INFINITY else hard, wanted,
        )
    return soft
