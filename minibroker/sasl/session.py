"""The SASL state of one connection on a SASL listener, following Kafka's SaslServerAuthenticator.

Before authentication a connection may only send ApiVersions and SaslHandshake, then only SaslAuthenticate
(or, after a v0 SaslHandshake, raw size-prefixed SASL tokens: the KIP-43 v0 flow, which kafka-python and
aiokafka still speak to brokers that offer only v0). Anything else closes the connection, as in Kafka.

With ``connections.max.reauth.ms`` a session lives that long (KIP-368): a SaslHandshake on the authenticated
connection begins a re-authentication with the same mechanism and principal (KafkaChannel's rules: at most one a
second), and any other request after the session's end closes the connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable

from minibroker.sasl.credentials import CredentialStore
from minibroker.sasl.mechanism import AuthenticationFailed, MechanismServer
from minibroker.sasl.plain import PlainServer
from minibroker.sasl.scram import ScramServer
from minibroker.sasl.settings import PLAIN, SCRAM_HASHES

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
MIN_REAUTH_INTERVAL_MS = 1000  # KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"


@dataclass(frozen=True, slots=True)
class SaslAuthority:
    """What the broker offers on its SASL listeners: the enabled mechanisms, the users' credentials, and how long a
    session lives (``connections.max.reauth.ms``, 0: for ever) by the broker's clock."""

    mechanisms: tuple[str, ...]
    store: CredentialStore
    max_reauth_ms: int = 0
    clock: Callable[[], int] = lambda: 0

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
        self.expires_ms: int | None = None  # the end of the session (connections.max.reauth.ms), None: none
        self.lifetime_ms = 0  # what SaslAuthenticate tells the client (SessionLifetimeMs)
        self._reauth_started_ms: int | None = None
        self._previous: tuple[str, str | None] | None = None  # (mechanism, user) while re-authenticating

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

    def must_close(self, api_key: int) -> bool:
        """KafkaChannel's checks at each request of an authenticated connection whose session has an end: a
        SaslHandshake begins re-authentication (unless one began less than a second ago); any other request after
        the end closes the connection."""
        if not self.authenticated:  # re-authenticating: SaslAuthenticate follows, the phase's rules apply
            return False
        now = self.authority.clock()
        if api_key == SASL_HANDSHAKE and (
            self._reauth_started_ms is None or now - self._reauth_started_ms >= MIN_REAUTH_INTERVAL_MS
        ):
            self._reauth_started_ms = now
            self._previous = (self.mechanism or "", self.username)
            self.state = SaslState.HANDSHAKE
            return False
        return self.expires_ms is not None and now > self.expires_ms

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
        if self._previous is not None and self._previous[0] != self.mechanism:
            raise AuthenticationFailed(
                f"SASL mechanism '{self.mechanism}' requested by client is not supported for re-authentication of "
                f"mechanism '{self._previous[0]}'"
            )
        answer = self._server.evaluate(token)
        if self._server.complete:
            if self._previous is not None and self._previous[1] != self.username:
                raise AuthenticationFailed(
                    f"Cannot change principals during re-authentication from User.{self._previous[1]}: "
                    f"User.{self.username}"
                )
            self.state = SaslState.AUTHENTICATED
            self.raw_tokens = False
            self._previous = None
            max_reauth = self.authority.max_reauth_ms
            self.lifetime_ms = max_reauth
            self.expires_ms = self.authority.clock() + max_reauth if max_reauth > 0 else None
        return answer

    @property
    def reauthenticating(self) -> bool:
        return self._previous is not None
