"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, without channel binding.

Two round trips: client-first -> server-first (nonce, salt, iterations), client-final (proof) ->
server-final (server signature). The proof is checked against the stored credential only, so the server
never sees or keeps the password. An unknown user runs the same exchange against a fake credential and
fails at the proof, like a wrong password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from minibroker.sasl.credentials import CredentialStore, ScramCredential, hmac_digest
from minibroker.sasl.mechanism import AuthenticationFailed
from minibroker.sasl.settings import SCRAM_HASHES

NONCE_BYTES = 24


def decode_saslname(text: str) -> str:
    """RFC 5802 saslname: ``=2C`` is a comma, ``=3D`` an equals sign; any other ``=`` is malformed."""
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ValueError("bad escape in user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def attributes(parts: list[str]) -> dict[str, str]:
    """``k=value`` items of a SCRAM message, in order; a repeated or empty key is malformed."""
    result: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key or key in result:
            raise ValueError(f"malformed attribute {key!r}")
        result[key] = value
    return result


class ScramServer:
    def __init__(self, mechanism: str, store: CredentialStore) -> None:
        self.mechanism = mechanism
        self.hash_name = SCRAM_HASHES[mechanism]
        self.store = store
        self.complete = False
        self.username: str | None = None
        self._known_user = False
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._nonce = ""
        self._first_bare = ""
        self._server_first = ""

    @property
    def invalid_credentials(self) -> str:
        return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism}"

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = bytes(token).decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed(self.invalid_credentials, "SCRAM message is not UTF-8") from None
        if self.complete:
            raise AuthenticationFailed(self.invalid_credentials, "SCRAM message after the exchange ended")
        try:
            if self._credential is None:
                return self._client_first(text).encode()
            return self._client_final(text).encode()
        except ValueError as exc:
            raise AuthenticationFailed(self.invalid_credentials, f"malformed SCRAM message: {exc}") from None

    def _client_first(self, text: str) -> str:
        flag, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep1 or not sep2:
            raise ValueError("no GS2 header")
        if flag.startswith("p="):
            raise AuthenticationFailed(self.invalid_credentials, "client asked for channel binding (not offered)")
        if flag not in ("n", "y"):
            raise ValueError("bad channel binding flag")
        parts = bare.split(",")
        if parts[0].startswith("m="):
            raise ValueError("mandatory extension not supported")
        fields = attributes(parts)
        if list(fields)[:2] != ["n", "r"] or not fields["r"]:
            raise ValueError("expected n=USER,r=NONCE")
        self.username = decode_saslname(fields["n"])
        if authzid and (not authzid.startswith("a=") or decode_saslname(authzid[2:]) != self.username):
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username",
                f"user {self.username!r} asked to act as another user",
            )
        if fields.get("tokenauth", "false").lower() == "true":
            raise AuthenticationFailed(
                "Authentication failed: delegation tokens are not supported", "client asked for delegation-token SCRAM"
            )
        credential = self.store.scram(self.username, self.mechanism)
        self._known_user = credential is not None
        self._credential = credential or self.store.fake_scram(self.username, self.mechanism)
        self._gs2_header = f"{flag},{authzid},"
        self._first_bare = bare
        self._nonce = fields["r"] + secrets.token_urlsafe(NONCE_BYTES)
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first

    def _client_final(self, text: str) -> str:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ValueError("no proof")
        fields = attributes(without_proof.split(","))
        if list(fields)[:2] != ["c", "r"]:
            raise ValueError("expected c=...,r=...")
        try:
            binding = base64.b64decode(fields["c"], validate=True)
            proof = base64.b64decode(proof_text, validate=True)
        except binascii.Error:
            raise ValueError("bad base64") from None
        if binding != self._gs2_header.encode():
            raise ValueError("channel binding data differs from the GS2 header")
        if fields["r"] != self._nonce:
            raise ValueError("nonce differs from the server's")
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        client_signature = hmac_digest(self.hash_name, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ValueError("proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        if not hmac.compare_digest(stored_key, credential.stored_key) or not self._known_user:
            raise AuthenticationFailed(self.invalid_credentials, f"wrong password or unknown user {self.username!r}")
        self.complete = True
        server_signature = hmac_digest(self.hash_name, credential.server_key, auth_message)
        return "v=" + base64.b64encode(server_signature).decode()
