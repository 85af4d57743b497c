"""The SCRAM credentials set or deleted with AlterUserScramCredentials, kept in the data directory so they survive
a restart (Kafka keeps them as UserScramCredentialRecord and RemoveUserScramCredentialRecord in its metadata log).

One JSON file, rewritten whole on each change (new file, fsync, rename, fsync of the directory), readable by its
owner only: it holds salts, StoredKeys and ServerKeys (never a password), base64-encoded. A deletion is kept too,
as an entry without a credential, so that a credential ``sasl.users`` gives stays deleted after a restart.
"""

from __future__ import annotations

import base64
import os
from typing import Mapping

from minibroker.sasl.credentials import CredentialKey, ScramCredential
from minibroker.sasl.settings import SCRAM_HASHES
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

FILE_NAME = "scram-credentials.json"
FORMAT_VERSION = 1
OWNER_ONLY = 0o600

Overrides = Mapping[CredentialKey, ScramCredential | None]


class CredentialFileError(ValueError):
    """The file cannot be read: start-up stops rather than serve with credentials it deleted or replaced."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def entry(key: CredentialKey, credential: ScramCredential | None) -> dict[str, object]:
    user, mechanism = key
    if credential is None:
        return {"user": user, "mechanism": mechanism, "deleted": True}
    return {
        "user": user, "mechanism": mechanism, "iterations": credential.iterations, "salt": _b64(credential.salt),
        "stored_key": _b64(credential.stored_key), "server_key": _b64(credential.server_key),
    }


def parse_entry(item: dict[str, object]) -> tuple[CredentialKey, ScramCredential | None]:
    """One stored entry; KeyError, TypeError or ValueError for a malformed one."""
    user, mechanism = item["user"], item["mechanism"]
    if not isinstance(user, str) or mechanism not in SCRAM_HASHES:
        raise ValueError("bad user or mechanism")
    if item.get("deleted") is True:
        return (user, mechanism), None
    iterations = item["iterations"]
    if not isinstance(iterations, int):
        raise ValueError("bad iterations")
    salt, stored_key, server_key = (base64.b64decode(item[name], validate=True) for name in ("salt", "stored_key", "server_key"))
    return (user, mechanism), ScramCredential(salt, iterations, stored_key, server_key)


def load(data_dir: StrPath) -> dict[CredentialKey, ScramCredential | None]:
    """The stored changes, in the order they were made (none when there is no file yet)."""
    path = os.path.join(data_dir, FILE_NAME)
    try:
        stored = read_json(path)
    except (OSError, ValueError) as exc:
        raise CredentialFileError(f"{path}: {exc}") from None
    if stored is None:
        return {}
    if not isinstance(stored, dict) or stored.get("version") != FORMAT_VERSION or not isinstance(stored.get("credentials"), list):
        raise CredentialFileError(f"{path}: not a version {FORMAT_VERSION} SCRAM credential file")
    try:
        return dict(parse_entry(item) for item in stored["credentials"])
    except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
        # the kind of fault only: the entry's content is secret
        raise CredentialFileError(f"{path}: malformed entry ({type(exc).__name__})") from None


def save(data_dir: StrPath, overrides: Overrides) -> None:
    """Replace the stored changes (blocking: run it in an executor)."""
    document = {"version": FORMAT_VERSION, "credentials": [entry(k, c) for k, c in overrides.items()]}
    write_json_atomically(os.path.join(data_dir, FILE_NAME), document, OWNER_ONLY, indent=1)
