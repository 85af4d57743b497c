"""The SASL state of one connection on a SASL listener, following Kafka's SaslServerAuthenticator.

Before authentication a connection may only send ApiVersions and SaslHandshake, then only SaslAuthenticate
(or, after a v0 SaslHandshake, raw size-prefixed SASL tokens: the KIP-43 v0 flow, which kafka-python and
aiokafka still speak to brokers that offer only v0). Anything else closes the connection, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from minibroker.sasl.credentials import CredentialStore
from minibroker.sasl.mechanism import AuthenticationFailed, MechanismServer
from minibroker.sasl.plain import PlainServer
from minibroker.sasl.scram import ScramServer
from minibroker.sasl.settings import PLAIN, SCRAM_HASHES

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"


@dataclass(frozen=True, slots=True)
class SaslAuthority:
    """What the broker offers on its SASL listeners: the enabled mechanisms and the users' credentials."""

    mechanisms: tuple[str, ...]
    store: CredentialStore

    def new_session(self) -> SaslSession:
        """The authentication state of one new connection to a SASL listener."""
        return SaslSession(self)

    def mechanism_server(self, mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(self.store)
        if mechanism in SCRAM_HASHES:
            return ScramServer(mechanism, self.store)
        raise ValueError(f"no server for mechanism {mechanism}")


class SaslSession:
    def __init__(self, authority: SaslAuthority) -> None:
        self.authority = authority
        self.state = SaslState.HANDSHAKE
        self.raw_tokens = False  # KIP-43 v0 flow: the next frames are bare tokens, not requests
        self.mechanism: str | None = None
        self._server: MechanismServer | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED

    @property
    def username(self) -> str | None:
        return self._server.username if self._server is not None else None

    def refusal(self, api_key: int) -> str | None:
        """Why a request with this API key may not be served now (None: it may)."""
        if self.state is SaslState.HANDSHAKE and api_key not in (API_VERSIONS, SASL_HANDSHAKE):
            return f"API key {api_key} before SASL authentication (only ApiVersions and SaslHandshake are allowed)"
        if self.state is SaslState.AUTHENTICATE and api_key != SASL_AUTHENTICATE:
            return f"API key {api_key} during SASL authentication (only SaslAuthenticate is allowed)"
        return None

    def handshake(self, mechanism: str, raw_tokens: bool) -> bool:
        """Choose the mechanism; False if it is not enabled (the caller answers and closes)."""
        if mechanism not in self.authority.mechanisms:
            return False
        self.mechanism = mechanism
        self._server = self.authority.mechanism_server(mechanism)
        self.raw_tokens = raw_tokens
        self.state = SaslState.AUTHENTICATE
        return True

    def authenticate(self, token: bytes) -> bytes:
        """One client token in, the server's answer out; raises AuthenticationFailed."""
        if self._server is None or self.state is not SaslState.AUTHENTICATE:
            raise AuthenticationFailed("Unexpected SASL token", "SASL token outside the authentication phase")
        answer = self._server.evaluate(token)
        if self._server.complete:
            self.state = SaslState.AUTHENTICATED
            self.raw_tokens = False
        return answer
