"""What every server-side mechanism offers a session: feed client tokens, get challenges, learn the user."""

from __future__ import annotations

from typing import Protocol


class AuthenticationFailed(Exception):
    """The exchange failed. ``str()`` is the message for the client (SaslAuthenticate's ErrorMessage);
    ``reason`` is a more precise line for the broker log. Neither ever contains a password."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class MechanismServer(Protocol):
    complete: bool  # True once the client is authenticated
    username: str | None  # the authenticated (or claimed, while in progress) user

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to one client token; raises AuthenticationFailed."""
        ...
