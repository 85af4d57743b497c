"""The share coordinator key ``groupId:topicId:partition`` read back into a SharePartitionKey, with the checks of
Kafka's ``SharePartitionKey.validate`` and ``getInstance``: what FindCoordinator's key type SHARE (v6, KIP-932) names.

Java's rules, not Python's: ``String.split(":")`` drops trailing empty parts, ``trim`` strips the characters up to
U+0020, ``Uuid.fromString`` takes at most 24 characters of base64url (padding optional) that decode to 16 bytes, and
``Integer.parseInt`` takes an optional sign and decimal digits within 32 bits.
"""

from __future__ import annotations

import base64
import binascii
import re

from minibroker.protocol.share_state import SharePartitionKey
from minibroker.storage.uuid import UUID_SIZE

_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))
_JAVA_INT = re.compile(r"[+-]?\d+")
_INT_RANGE = range(-(1 << 31), 1 << 31)
_UUID_MAX_CHARS = 24


def parse_coordinator_key(text: str) -> SharePartitionKey:
    """The key ``text`` names; ValueError (with Kafka's reason) for one Kafka's share coordinator refuses."""
    if not text:
        raise ValueError("Share partition key cannot be empty")
    tokens = text.split(":")
    while tokens and not tokens[-1]:
        tokens.pop()
    if len(tokens) != 3:
        raise ValueError(f"Invalid key format: expected - groupId:topicId:partition, found -  {text}")
    group_id = tokens[0].strip(_JAVA_TRIMMED)
    if not group_id:
        raise ValueError("GroupId must be alphanumeric string")
    return SharePartitionKey(group_id, java_uuid(tokens[1]), java_int(tokens[2]))


def java_uuid(text: str) -> bytes:
    """Kafka's ``Uuid.fromString``, which decodes what ``Uuid.toString`` never writes too (``==`` padding)."""
    if len(text) <= _UUID_MAX_CHARS:
        try:
            padded = text if "=" in text else text + "=" * (-len(text) % 4)
            value = base64.b64decode(padded, altchars=b"-_", validate=True)
        except binascii.Error:
            value = b""
        if len(value) == UUID_SIZE:
            return value
    raise ValueError(f"Invalid topic ID: {text}")


def java_int(text: str) -> int:
    """Kafka's ``Integer.parseInt``: no spaces, no underscores, nothing beyond 32 bits."""
    if _JAVA_INT.fullmatch(text) and int(text) in _INT_RANGE:
        return int(text)
    raise ValueError(f"Invalid partition: {text}")
