"""The SASL settings (``sasl.enabled.mechanisms``, ``sasl.users``) parsed and checked: plain text only, so the
configuration can be validated at start-up without loading the hashing and credential modules."""

from __future__ import annotations

from minibroker.config.settings import ConfigError

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = (PLAIN, *SCRAM_HASHES)
# The SCRAM mechanisms by the number the admin APIs give them (Kafka's ScramMechanism.type; 0 is UNKNOWN), and the
# iterations AlterUserScramCredentials accepts (its ScramMechanism.minIterations, ScramControlManager.MAX_ITERATIONS).
SCRAM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


def parse_mechanisms(text: str) -> list[str]:
    """``sasl.enabled.mechanisms`` as a list; unknown mechanisms are configuration errors."""
    mechanisms = [item.strip().upper() for item in text.split(",") if item.strip()]
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unknown)} not supported (supported: {', '.join(MECHANISMS)})")
    return mechanisms


def parse_users(text: str) -> dict[str, str]:
    """``alice:secret,bob:pw`` -> {user: password}. Error messages name entries by position, never by content,
    since the content holds passwords."""
    users: dict[str, str] = {}
    for position, item in enumerate((part for part in text.split(",") if part.strip()), 1):
        user, sep, password = item.partition(":")
        user = user.strip()
        if not sep or not user or not password:
            raise ConfigError(f"sasl.users: entry {position} is not USER:PASSWORD with both parts non-empty")
        if user in users:
            raise ConfigError(f"sasl.users: user {user!r} appears twice")
        users[user] = password
    return users
