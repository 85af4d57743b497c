"""Kafka's Uuid: 16 bytes shown as 22 characters of unpadded base64url (topic ids, cluster and directory ids)."""

from __future__ import annotations

import base64
import binascii
import os

UUID_SIZE = 16
ZERO_UUID = bytes(UUID_SIZE)
# Uuid(0, 1) is the metadata topic id; ids 0..99 are reserved by Kafka (ZERO, ONE, MIGRATING, ...).
_RESERVED_LOW = 100


def uuid_to_str(value: bytes) -> str:
    """Kafka's Uuid.toString(): base64url of the 16 bytes without '=' padding."""
    if len(value) != UUID_SIZE:
        raise ValueError(f"a Uuid has 16 bytes, got {len(value)}")
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> bytes:
    """Kafka's Uuid.fromString(): 22 base64url characters back to 16 bytes."""
    if len(text) != 22:
        raise ValueError(f"a Uuid string has 22 characters, got {text!r}")
    try:
        value = base64.b64decode(text + "==", altchars=b"-_", validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not a base64url Uuid: {text!r}") from exc
    if uuid_to_str(value) != text:
        raise ValueError(f"not a canonical Uuid string: {text!r}")
    return value


def check_uuid_string(text: str) -> None:
    """Kafka's Uuid.fromString as it accepts an id a person types (kafka-storage format's cluster id): at most 24
    base64url characters, padding optional, that decode to 16 bytes. Unused trailing bits are not checked, as Java's
    decoder does not check them, so Testcontainers' cluster id MkU3OEVBNTcwNTJENDM2Qk is valid. ValueError if not."""
    if len(text) > 24:
        raise ValueError(f"{text!r} is too long to be a base64 Uuid")
    digits = text.rstrip("=")
    if not (digits.isascii() and digits.replace("-", "").replace("_", "").isalnum()) or len(text) - len(digits) > 2:
        raise ValueError(f"{text!r} is not base64url")
    try:
        value = base64.b64decode(digits + "=" * (-len(digits) % 4), altchars=b"-_", validate=True)
    except binascii.Error as exc:
        raise ValueError(f"{text!r} is not base64url") from exc
    if len(value) != UUID_SIZE:
        raise ValueError(f"{text!r} decodes to {len(value)} bytes, not the 16 of a Uuid")


def random_uuid() -> bytes:
    """A version-4 random id like Uuid.randomUuid(): never reserved, never shown with a leading '-'."""
    while True:
        raw = bytearray(os.urandom(UUID_SIZE))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        value = bytes(raw)
        if int.from_bytes(value, "big") >= _RESERVED_LOW and not uuid_to_str(value).startswith("-"):
            return value
