"""The codec's strict mode: a response is checked against its schema before it is encoded.

The encoders fill a field a message leaves out with its default, and ignore keys they do not know. That keeps the
request path fast, and it also hides a whole class of bugs: a handler that fills ``node_id`` where the schema says
``broker_id`` gets every broker written as id 0, and no client error says why. With ``MINIBROKER_STRICT_CODEC=1``
in the environment (the test suite sets it for itself and every broker it starts) each response is checked first:

- every key is a field of the schema (in some version);
- every field the version writes outside the tagged buffer is given, unless Kafka's JSON declares a default for it;
- a field the version does not have holds its default, unless Kafka marks it ignorable (Kafka's generated writers
  throw UnsupportedVersionException there: the answer cannot say what the handler meant).

A violation raises ``StrictCodecError`` and is remembered in ``VIOLATIONS``, so a test fails even when the client
retries past the dropped connection.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

from .schema import STRICT_ENV, Field, Message, default_value, in_range, snake_case, strict_enabled

VIOLATIONS: list[str] = []
_suspensions = [0]  # > 0 inside suspended()
LOG_MARKER = "strict codec:"

log = logging.getLogger(__name__)


class StrictCodecError(ValueError):
    """A response that does not match its schema (strict mode only)."""


enabled = strict_enabled  # STRICT_ENV (imported above) is the switch, set in the environment


@contextmanager
def suspended() -> Iterator[None]:
    """Responses encoded inside are not checked: for tests of the codec's own handling of partial messages."""
    _suspensions[0] += 1
    try:
        yield
    finally:
        _suspensions[0] -= 1


def problems(fields: tuple[Field, ...], version: int, value: Any, path: str) -> Iterator[str]:
    """What is wrong with ``value`` as a struct of ``fields`` at ``version``, one line per problem."""
    if not isinstance(value, dict):
        yield f"{path} is a {type(value).__name__}, not a struct"
        return
    known = {snake_case(f.name): f for f in fields}
    for key in value:
        if key not in known:
            yield f"{path} has {key!r}, which the schema does not know"
    for key, f in known.items():
        if not in_range(version, f.versions):
            if key in value and not f.ignorable and value[key] != default_value(f, version):
                yield f"{path}.{key} is {value[key]!r}, but version {version} has no {f.name}"
            continue
        if key not in value:
            if f.default is None and not in_range(version, f.tagged):
                yield f"{path} lacks {key}"
            continue
        item = value[key]
        if not f.is_struct or item is None:
            continue
        if f.element_type is None:
            yield from problems(f.fields, version, item, f"{path}.{key}")
        else:
            for index, element in enumerate(item):
                yield from problems(f.fields, version, element, f"{path}.{key}[{index}]")


def checked(message: Message, version: int, encode: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """``encode`` preceded by the check of its message."""

    def encode_checked(w: Any, value: Any) -> None:
        found = [] if _suspensions[0] else list(problems(message.fields, version, value, f"{message.name} v{version}"))
        if found:
            text = "; ".join(found)
            VIOLATIONS.append(text)
            log.error("%s %s", LOG_MARKER, text)
            raise StrictCodecError(text)
        encode(w, value)

    return encode_checked
