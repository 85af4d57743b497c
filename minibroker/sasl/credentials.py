"""Users and their SCRAM credentials: derived once at start-up from ``sasl.users``, then changed by
AlterUserScramCredentials.

Only RFC 5802's salted, iterated form is kept (salt, iterations, StoredKey, ServerKey per mechanism), as
Kafka keeps SCRAM credentials; PLAIN logins are checked against the SCRAM-SHA-256 credential ``sasl.users``
gave, so no password stays in memory after start-up. The credentials set over the API (and deletions) lie
over those of ``sasl.users``, user and mechanism by user and mechanism. Unknown users get a fake credential
that is stable for the process, so a SCRAM exchange for them looks the same as one with a wrong password (no
user enumeration).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Mapping

from minibroker.sasl.settings import SCRAM_HASHES

SCRAM_ITERATIONS = 4096  # Kafka's default (and minimum) for SCRAM-SHA-256/512
SALT_BYTES = 32
PLAIN_CHECK_MECHANISM = "SCRAM-SHA-256"

CredentialKey = tuple[str, str]  # (user, mechanism)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's credential for one mechanism; its repr shows only the iterations, as Kafka's hides the rest."""

    salt: bytes = field(repr=False)
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)


def salted_password(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)


def hmac_digest(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def derive(hash_name: str, password: str, salt: bytes, iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    """RFC 5802 section 3: SaltedPassword -> ClientKey -> StoredKey, and ServerKey."""
    return from_salted_password(hash_name, salted_password(hash_name, password.encode(), salt, iterations), salt, iterations)


def from_salted_password(hash_name: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """What the server keeps of a SaltedPassword (an AlterUserScramCredentials upsertion carries one, as the client
    derived it): StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")."""
    client_key = hmac_digest(hash_name, salted, b"Client Key")
    return ScramCredential(
        salt, iterations, hashlib.new(hash_name, client_key).digest(), hmac_digest(hash_name, salted, b"Server Key")
    )


class CredentialStore:
    """Every user's SCRAM credential for each SCRAM mechanism: ``sasl.users``' under the ``overrides`` (None: the
    credential was deleted)."""

    def __init__(
        self, users: Mapping[str, str], iterations: int = SCRAM_ITERATIONS,
        overrides: Mapping[CredentialKey, ScramCredential | None] | None = None,
    ) -> None:
        self.iterations = iterations
        self._settings = {
            (user, mechanism): derive(hash_name, password, secrets.token_bytes(SALT_BYTES), iterations)
            for user, password in users.items()
            for mechanism, hash_name in SCRAM_HASHES.items()
        }
        self.overrides: dict[CredentialKey, ScramCredential | None] = dict(overrides or {})
        self._fake_secret = secrets.token_bytes(32)

    def scram(self, user: str, mechanism: str) -> ScramCredential | None:
        key = (user, mechanism)
        return self.overrides[key] if key in self.overrides else self._settings.get(key)

    def credentials(self) -> dict[CredentialKey, ScramCredential]:
        """Every credential in force, ``sasl.users``' first."""
        keys = dict.fromkeys((*self._settings, *self.overrides))
        return {key: credential for key in keys if (credential := self.scram(*key)) is not None}

    def fake_scram(self, user: str, mechanism: str) -> ScramCredential:
        """A credential no password matches, with a salt that is the same on every attempt for ``user``."""
        hash_name = SCRAM_HASHES[mechanism]
        salt = hmac_digest("sha256", self._fake_secret, f"{mechanism}\0{user}".encode())
        size = hashlib.new(hash_name).digest_size
        return ScramCredential(salt, self.iterations, secrets.token_bytes(size), secrets.token_bytes(size))

    def check_password(self, user: str, password: bytes) -> bool:
        """PLAIN: recompute StoredKey from the password and the user's salt (as costly for unknown users)."""
        hash_name = SCRAM_HASHES[PLAIN_CHECK_MECHANISM]
        credential = self._settings.get((user, PLAIN_CHECK_MECHANISM))
        known = credential is not None
        if credential is None:
            credential = self.fake_scram(user, PLAIN_CHECK_MECHANISM)
        salted = salted_password(hash_name, password, credential.salt, credential.iterations)
        stored_key = hashlib.new(hash_name, hmac_digest(hash_name, salted, b"Client Key")).digest()
        return hmac.compare_digest(stored_key, credential.stored_key) and known
