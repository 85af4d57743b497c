"""``ssl.principal.mapping.rules`` as Kafka's SslPrincipalMapper reads and applies them, so a Kafka configuration
gives the same principals: a comma-separated list of ``RULE:pattern/replacement/`` (``/L`` or ``/U`` after it: the
result in lower or upper case) and ``DEFAULT`` (the subject unchanged), tried in order on a client certificate's
subject (RFC 2253, ``CN=client,O=Org``); the first rule whose pattern matches the whole subject names the principal.

The grammar is Kafka's, with its corner cases: ``\\`` escapes a character (``\\/`` a slash) in a pattern or
replacement, commas may appear inside them, empty rules are skipped, and a rule with anything left over is refused
(``DEFAULT/L``, ``rule:...``, ``RULE:a/b/L/U``). Patterns are Python regular expressions, which read Kafka's documented
patterns (groups, classes, lazy quantifiers, anchors) as Java does; replacements use Java's syntax (``$1``, ``${name}``,
``\\$`` for a dollar), and ``$N`` naming a group the pattern lacks is kept as text, as Kafka keeps it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minibroker.config.settings import ConfigError

_PART = r"(?:\\.|[^\\/])*"  # a pattern or a replacement: escaped characters, or anything but a backslash or slash
_RULE = (
    rf"(?P<default>DEFAULT)"
    rf"|RULE:(?P<pattern>{_PART})/(?P<replacement>{_PART})/(?P<case>[LU]?).*?"
    rf"|(?P<other>.*?)"
)
_SPLIT = re.compile(rf"\s*(?P<rule>{_RULE})\s*(?:,\s*|$)", re.ASCII)
_PARSE = re.compile(_RULE, re.ASCII)
_JAVA_BLANKS = "".join(map(chr, range(33)))  # what Java's String.trim() removes
DIGITS = "0123456789"


class MappingError(Exception):
    """The subject cannot be mapped (no rule applies, or a replacement fails on it): Kafka closes the connection."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, subject: str) -> str | None:
        """The mapped name, or None when the pattern does not match the whole subject."""
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        name = self.pattern.sub(lambda match: expand(self.replacement, match), subject)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name

    def __str__(self) -> str:
        """As Kafka writes a rule in its messages."""
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (f"/{self.case}" if self.case else "")


@dataclass(frozen=True)
class PrincipalMapper:
    rules: tuple[Rule, ...]

    def name(self, subject: str) -> str:
        """The short name of a certificate subject; MappingError when no rule applies."""
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        raise MappingError(f"No rules apply to {subject}, rules [{', '.join(map(str, self.rules))}]")


def parse_rules(text: str) -> PrincipalMapper:
    """Kafka's SslPrincipalMapper.fromRules; ConfigError where Kafka refuses to start (IllegalArgumentException)."""
    rules = []
    for split in _SPLIT.finditer(text.strip(_JAVA_BLANKS)):
        raw = split.group("rule")
        parsed = _PARSE.match(raw)
        assert parsed is not None  # the last alternative matches the empty string
        if parsed.end() != len(raw):
            raise ConfigError(
                f"ssl.principal.mapping.rules: Invalid rule: `{raw}`, unmatched substring: `{raw[parsed.end():]}`"
            )
        if parsed.group("default") is not None:
            rules.append(Rule(None))
        elif parsed.group("pattern") is not None:
            try:
                pattern = re.compile(parsed.group("pattern"))
            except re.error as exc:
                raise ConfigError(f"ssl.principal.mapping.rules: invalid pattern in `{raw}`: {exc}") from None
            rules.append(Rule(pattern, parsed.group("replacement"), parsed.group("case")))
    return PrincipalMapper(tuple(rules))


def expand(replacement: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement for one match: ``\\x`` is x, ``$N`` group N (further digits taken while they
    name a group), ``${name}`` a named group; a ``$N`` beyond the pattern's groups stays text when it has groups
    (Kafka's escapeLiteralBackReferences) and is an error when it has none, as in Java."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\":
            if i + 1 == len(replacement):
                raise MappingError(f"character to be escaped is missing in replacement {replacement!r}")
            out.append(replacement[i + 1])
            i += 2
        elif char != "$":
            out.append(char)
            i += 1
        elif replacement.startswith("{", i + 1):
            end = replacement.find("}", i + 2)
            if end < 0:
                raise MappingError(f"named capturing group is missing trailing '}}' in replacement {replacement!r}")
            out.append(group_text(match, replacement[i + 2:end]))
            i = end + 1
        elif i + 1 < len(replacement) and replacement[i + 1] in DIGITS:
            number, i = int(replacement[i + 1]), i + 2
            if number > groups and groups > 0:
                out.append("$" + str(number))
                continue
            while i < len(replacement) and replacement[i] in DIGITS and number * 10 + int(replacement[i]) <= groups:
                number, i = number * 10 + int(replacement[i]), i + 1
            out.append(group_text(match, number))
        else:
            raise MappingError(f"Illegal group reference in replacement {replacement!r}")
    return "".join(out)


def group_text(match: re.Match[str], group: int | str) -> str:
    """A group's text ("" when it took no part in the match, as Java appends nothing)."""
    try:
        return match.group(group) or ""
    except IndexError:
        raise MappingError(f"No group {group}") from None
