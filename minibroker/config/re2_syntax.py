"""Regular expressions as Kafka reads them (Google's RE2/J), with Python's ``re``: the two agree on the common syntax
(classes, alternation, anchors, greedy and lazy quantifiers, groups), and RE2 refuses what needs backtracking --
backreferences, lookarounds, conditionals, atomic groups and possessive quantifiers -- which Python would accept."""

from __future__ import annotations

import re
from collections.abc import Iterator
from re import _parser  # the stdlib's own parse of a pattern: the exact way to find those constructs
from typing import Any

_NOT_IN_RE2 = {
    _parser.GROUPREF: "backreferences", _parser.GROUPREF_EXISTS: "conditionals", _parser.ASSERT: "lookarounds",
    _parser.ASSERT_NOT: "lookarounds", _parser.ATOMIC_GROUP: "atomic groups",
    _parser.POSSESSIVE_REPEAT: "possessive quantifiers",
}


def compile_re2(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled; ``re.error`` if Python's syntax or RE2's refuses it."""
    _refuse_backtracking(_parser.parse(pattern))
    return re.compile(pattern)


def _refuse_backtracking(parsed: _parser.SubPattern) -> None:
    for op, argument in parsed:
        if op in _NOT_IN_RE2:
            raise re.error(f"{_NOT_IN_RE2[op]} are not supported (RE2 syntax)")
        for nested in _subpatterns(argument):
            _refuse_backtracking(nested)


def _subpatterns(value: Any) -> Iterator[_parser.SubPattern]:
    """The sub-patterns inside an item's argument (a group's body, a repeat's, each branch of an alternation)."""
    if isinstance(value, _parser.SubPattern):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _subpatterns(item)
