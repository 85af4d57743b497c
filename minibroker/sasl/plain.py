"""SASL PLAIN (RFC 4616): one client message ``[authzid] NUL authcid NUL passwd``, checked against the store."""

from __future__ import annotations

from minibroker.sasl.credentials import CredentialStore
from minibroker.sasl.mechanism import AuthenticationFailed

INVALID = "Authentication failed: Invalid username or password"


class PlainServer:
    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.complete = False
        self.username: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = bytes(token).split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens", "malformed PLAIN message")
        authzid, authcid, password = parts
        try:
            username = authcid.decode()
            authorization_id = authzid.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed(INVALID, "user name is not UTF-8") from None
        if not username or not password:
            raise AuthenticationFailed(INVALID, "empty user name or password")
        self.username = username
        if authorization_id and authorization_id != username:  # Kafka refuses impersonation too
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username",
                f"user {username!r} asked to act as another user",
            )
        if not self.store.check_password(username, password):
            raise AuthenticationFailed(INVALID, f"wrong password or unknown user {username!r}")
        self.complete = True
        return b""
