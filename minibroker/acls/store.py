"""ACL bindings kept in the data directory, crash-safe: each change writes the whole set to a new file, fsyncs it,
renames it over the old one and fsyncs the directory, so a crash leaves the old set or the new one, never a mix.

Kafka keeps ACLs as records of its metadata log; a set of bindings changed by hand now and then is small enough
(1,000 bindings are about 150 kB) to be rewritten whole, and one JSON file is easy to read and back up.
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields

from minibroker.acls.model import Acl
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

FILE_NAME = "acls.json"
FORMAT_VERSION = 1
_FIELDS = tuple(f.name for f in fields(Acl))


class AclFileError(ValueError):
    """The ACL file cannot be read: start-up stops rather than serve without the ACLs it holds."""


def load(data_dir: StrPath) -> list[Acl]:
    """The stored bindings, in the order they were created (none when there is no file yet)."""
    path = os.path.join(data_dir, FILE_NAME)
    try:
        stored = read_json(path)
    except (OSError, ValueError) as exc:
        raise AclFileError(f"{path}: {exc}") from None
    if stored is None:
        return []
    if not isinstance(stored, dict) or stored.get("version") != FORMAT_VERSION or not isinstance(stored.get("acls"), list):
        raise AclFileError(f"{path}: not a version {FORMAT_VERSION} ACL file")
    try:
        return [Acl(**{name: entry[name] for name in _FIELDS}) for entry in stored["acls"]]
    except (KeyError, TypeError) as exc:
        raise AclFileError(f"{path}: malformed binding ({exc})") from None


def save(data_dir: StrPath, acls: list[Acl]) -> None:
    """Replace the stored bindings (blocking: run it in an executor)."""
    write_json_atomically(os.path.join(data_dir, FILE_NAME), {"version": FORMAT_VERSION, "acls": [asdict(acl) for acl in acls]}, indent=1)
