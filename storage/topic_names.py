"""Kafka's topic naming rules (org.apache.kafka.common.internals.Topic), as pure functions."""

from __future__ import annotations

MAX_NAME_LENGTH = 249
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's Topic.GROUP_METADATA_TOPIC_NAME
TRANSACTION_STATE_TOPIC = "__transaction_state"  # Kafka's Topic.TRANSACTION_STATE_TOPIC_NAME
SHARE_GROUP_STATE_TOPIC = "__share_group_state"  # Kafka's Topic.SHARE_GROUP_STATE_TOPIC_NAME
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")  # a set, not a regex:
# compiling one costs a start-up 0.2 ms


def validate_topic_name(name: str) -> str | None:
    """Kafka's error message for an illegal topic name, or None when the name is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
                f"topic name: {name}")
    if not _LEGAL.issuperset(name):
        return (f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
                "'.', '_' and '-'")
    return None


def is_internal(name: str) -> bool:
    """Kafka's Topic.isInternal: the coordinators' topics, not every name starting with "__"."""
    return name in INTERNAL_TOPICS


def unify_collision_chars(name: str) -> str:
    """'.' and '_' collide in metric names, so Kafka refuses topics that differ only by them."""
    return name.replace(".", "_")


def collides(first: str, second: str) -> bool:
    return unify_collision_chars(first) == unify_collision_chars(second)
