"""Generate ``minibroker/config/kafka_settings.py`` from Apache Kafka's Java source: broker setting names, types, defaults
and validators, read off the ``define`` calls of the config classes that ``AbstractKafkaConfig.CONFIG_DEF`` merges;
the same for the topic configs (LogConfig) and the group configs (GroupConfig, with the broker settings they follow).

Only facts are kept. The Java expressions that give defaults and validators are evaluated by a small
interpreter of what those classes use (literals, arithmetic, constants, enums, ``TimeUnit``, ``List.of``,
``ConfigDef`` validators); the few values Kafka computes with streams are given in ``COMPUTED``. Run from the
repository root with a checkout of Kafka (``git archive`` of a release tag is enough):

    python tools/gen_kafka_settings.py /path/to/kafka 4.3.1
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The classes whose CONFIG_DEF AbstractKafkaConfig merges, with the statement that builds it when it is not
# ``CONFIG_DEF = ...`` (LogConfig also defines the topic configs; RemoteLogManagerConfig builds its own in a method).
CONFIG_CLASSES = {
    "RemoteLogManagerConfig": "return new ConfigDef()", "ServerConfigs": None, "KRaftConfigs": None,
    "MetadataLogConfig": None, "SocketServerConfigs": None, "ReplicationConfigs": None,
    "GroupCoordinatorConfig": None, "CleanerConfig": None, "LogConfig": "SERVER_CONFIG_DEF =",
    "ShareGroupConfig": None, "ShareCoordinatorConfig": None, "TransactionLogConfig": None,
    "TransactionStateManagerConfig": None, "QuorumConfig": None, "MetricConfigs": None, "QuotaConfig": None,
    "BrokerSecurityConfigs": None, "DelegationTokenManagerConfigs": None, "AddPartitionsToTxnConfig": None,
}
# Constants Kafka computes with streams or from JVM defaults, as Java expressions of their values.
COMPUTED = {
    ("SocketServerConfigs", "LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT"):
        '"SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"',
    ("GroupCoordinatorConfig", "CONSUMER_GROUP_ASSIGNORS_DEFAULT"): 'List.of("uniform", "range")',
    ("GroupCoordinatorConfig", "SHARE_GROUP_ASSIGNORS_DEFAULT"): '"simple"',
    ("GroupConfig", "SHARE_AUTO_OFFSET_RESET_DEFAULT"): '"latest"',
}
JVM_DEFAULTS = {"KeyManagerFactory": "SunX509", "TrustManagerFactory": "PKIX"}
# Settings whose default or validator is code of another module: (type, default, validator spec).
READ_OFF = {
    "group.coordinator.rebalance.protocols": ("LIST", "classic,consumer,streams", "list-in:consumer,classic,share,streams;nodup;nonempty"),
    "compression.gzip.level": ("INT", "-1", "other:gzip-level"),
    "compression.lz4.level": ("INT", "9", "range:1:17"),
    "compression.zstd.level": ("INT", "3", "range:-131072:22"),
}
TYPES = {"INT", "LONG", "SHORT", "DOUBLE", "BOOLEAN", "STRING", "LIST", "CLASS", "PASSWORD"}
UNIT_MS = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
LIMITS = {"Long": (-(2**63), 2**63 - 1), "Integer": (-(2**31), 2**31 - 1), "Short": (-(2**15), 2**15 - 1)}
TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:\\.|[^"\\])*")|(?P<num>\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?[lLdDfF]?)'
    r"|(?P<id>[A-Za-z_$][\w$]*)|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%(),.?:<>!\[\]{}]))"
)
NO_DEFAULT = object()


class Unsupported(Exception):
    """An expression this interpreter does not evaluate: add it to COMPUTED or READ_OFF."""


@dataclass(frozen=True)
class EnumConstant:
    enum: str
    name: str


@dataclass(frozen=True)
class Validator:
    spec: str


@dataclass(frozen=True)
class Unit:
    name: str


def balanced_end(text: str, start: int, stop: str) -> int:
    """Index of the first ``stop`` character at bracket depth 0 from ``start``, outside string literals."""
    depth, quote, i = 0, None, start
    while True:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0 and c in stop:
                return i
            depth -= 1
        elif c in stop and depth == 0:
            return i
        i += 1


def without_comments(source: str) -> str:
    """Java source without its comments (string and character literals kept as they are)."""
    out, i = [], 0
    pattern = re.compile(r""""{3}[\s\S]*?"{3}|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|//[^\n]*|/\*[\s\S]*?\*/""")
    for m in pattern.finditer(source):
        out.append(source[i : m.start()])
        out.append(" " if m.group().startswith("/") else m.group())
        i = m.end()
    out.append(source[i:])
    return "".join(out)


def split_arguments(text: str) -> list[str]:
    parts, start = [], 0
    while start < len(text):
        end = balanced_end(text + ",", start, ",")
        parts.append(text[start:end].strip())
        start = end + 1
    return [part for part in parts if part]


class JavaSources:
    """The classes of a Kafka checkout by simple name: comment-free text, constants and enum constants."""

    def __init__(self, root: Path) -> None:
        self.paths: dict[str, Path] = {}
        for path in sorted(root.glob("**/src/main/java/**/*.java")):
            self.paths.setdefault(path.stem, path)
        self._text: dict[str, str] = {}

    def text(self, cls: str) -> str:
        if cls not in self._text:
            if cls not in self.paths:
                raise Unsupported(f"no class {cls}")
            self._text[cls] = without_comments(self.paths[cls].read_text())
        return self._text[cls]

    def constant(self, cls: str, name: str) -> str | None:
        """The initializer of a static final field (or an interface field) of ``cls``."""
        if (cls, name) in COMPUTED:
            return COMPUTED[(cls, name)]
        text = self.text(cls)
        m = re.search(rf"static\s+final\s+[\w<>,.\[\]? ]+?\s+{name}\s*=", text) or re.search(
            rf"^\s*(?:public\s+)?(?:int|long|short|byte|String)\s+{name}\s*=", text, re.M
        )
        return None if m is None else text[m.end() : balanced_end(text, m.end(), ";")].strip()

    def static_imports(self, cls: str, name: str) -> list[str]:
        """Classes whose static members ``cls`` imports by this name or by ``*``."""
        return re.findall(rf"import\s+static\s+[\w.]+\.(\w+)\.(?:{name}|\*)\s*;", self.text(cls))

    def enum_holder(self, enum: str) -> tuple[str, str]:
        """(class whose file defines ``enum``, the text of the enum's body)."""
        candidates = [enum] if enum in self.paths else [c for c, p in self.paths.items() if f"enum {enum}" in p.read_text()]
        for cls in candidates:
            text = self.text(cls)
            m = re.search(rf"enum\s+{enum}\b[^{{]*\{{", text)
            if m:
                return cls, text[m.end() :]
        raise Unsupported(f"enum {enum}")

    def enum_constants(self, enum: str) -> list[tuple[str, list[str]]]:
        """Each constant of ``enum`` with its constructor arguments."""
        _, body = self.enum_holder(enum)
        constants = []
        for item in split_arguments(body[: balanced_end(body, 0, ";}")]):
            name = re.match(r"\s*(\w+)", item).group(1)
            opening = item.find("(")
            arguments = split_arguments(item[opening + 1 : balanced_end(item, opening + 1, ")")]) if opening > 0 else []
            constants.append((name, arguments))
        return constants

    def enum_arguments(self, enum: str, constant: str) -> tuple[str, list[str], list[str]]:
        """(class holding the enum, constructor parameter names, the constant's constructor arguments)."""
        holder, _ = self.enum_holder(enum)
        ctor = re.search(rf"\b{enum}\s*\(([^)]*)\)\s*\{{", self.text(holder))
        params = [p.split()[-1] for p in split_arguments(ctor.group(1))] if ctor else []
        return holder, params, dict(self.enum_constants(enum)).get(constant, [])

    def fqn(self, cls: str) -> str:
        return re.search(r"package\s+([\w.]+);", self.text(cls)).group(1) + "." + cls


def java_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, EnumConstant):
        return value.name
    return str(value)


class Expression:
    """A recursive-descent evaluator of one Java expression, in the scope of class ``cls``."""

    def __init__(self, sources: JavaSources, cls: str, text: str) -> None:
        self.sources, self.cls = sources, cls
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise Unsupported(f"cannot read {text[pos:pos + 30]!r}")
            self.tokens.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
        self.i = 0

    def value(self) -> Any:
        v = self.ternary()
        if self.i != len(self.tokens):
            raise Unsupported(f"trailing {self.tokens[self.i:]}")
        return v

    def peek(self, k: int = 0) -> str | None:
        return self.tokens[self.i + k][1] if self.i + k < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        _, text = self.tokens[self.i]
        if expected is not None and text != expected:
            raise Unsupported(f"expected {expected}, found {text}")
        self.i += 1
        return text

    def ternary(self) -> Any:
        condition = self.binary(0)
        if self.peek() != "?":
            return condition
        self.take()
        yes = self.ternary()
        self.take(":")
        no = self.ternary()
        return yes if condition else no

    LEVELS = (("||", "&&"), ("==", "!=", "<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Any:
        if level == len(self.LEVELS):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in self.LEVELS[level]:
            op = self.take()
            w = self.binary(level + 1)
            if op == "+" and (isinstance(v, str) or isinstance(w, str)):
                v = java_str(v) + java_str(w)
            elif op == "/" and isinstance(v, int) and isinstance(w, int):
                v = int(v / w)
            else:
                v = {"||": lambda: v or w, "&&": lambda: v and w, "==": lambda: v == w, "!=": lambda: v != w,
                     "<": lambda: v < w, ">": lambda: v > w, "<=": lambda: v <= w, ">=": lambda: v >= w,
                     "+": lambda: v + w, "-": lambda: v - w, "*": lambda: v * w, "/": lambda: v / w,
                     "%": lambda: v % w}[op]()
        return v

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return -self.unary()
        if self.peek() == "(" and self.peek(2) == ")" and self.peek(1) in ("int", "long", "short", "byte", "double", "float"):
            self.take()
            cast = self.take()
            self.take(")")
            v = self.unary()
            return float(v) if cast in ("double", "float") else int(v)
        return self.postfix()

    def arguments(self) -> list[Any]:
        self.take("(")
        values = []
        while self.peek() != ")":
            values.append(self.ternary())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return values

    def postfix(self) -> Any:
        kind, text = self.tokens[self.i]
        if text == "(":
            self.take()
            v = self.ternary()
            self.take(")")
        elif kind == "str":
            self.take()
            v = bytes(text[1:-1], "utf-8").decode("unicode_escape")
        elif kind == "num":
            self.take()
            digits = text.replace("_", "").rstrip("lLdDfF")
            v = float(digits) if "." in digits or "e" in digits.lower() or text[-1] in "dDfF" else int(digits)
        elif text == "new":
            self.take()
            name = self.dotted()
            if self.peek() == "[":
                self.take("[")
                self.ternary()
                self.take("]")
                return None
            self.arguments()
            parts = name.split(".")
            short = ".".join(parts[-2:]) if parts[-1] == "Validator" else parts[-1]  # a nested Validator: its class
            v = Validator("nonempty" if short == "NonEmptyString" else f"other:{short}")
        else:
            name = self.dotted()
            v = self.call(name, self.arguments()) if self.peek() == "(" else self.resolve(name)
        while self.peek() == ".":
            self.take()
            member = self.take()
            v = self.method(v, member, self.arguments()) if self.peek() == "(" else self.field(v, member)
        return v

    def dotted(self) -> str:
        parts = [self.take()]
        while self.peek() == "." and self.tokens[self.i + 1][0] == "id":
            if self.peek(2) == "(":  # a method name ends the dotted name
                self.take()
                parts.append(self.take())
                break
            self.take()
            parts.append(self.take())
        return ".".join(parts)

    def evaluate_in(self, cls: str, text: str) -> Any:
        return Expression(self.sources, cls, text).value()

    def resolve(self, name: str) -> Any:
        parts = name.split(".")
        last = parts[-1]
        if name in ("true", "false"):
            return name == "true"
        if name == "null":
            return None
        if last == "NO_DEFAULT_VALUE":
            return NO_DEFAULT
        if last in ("MAX_VALUE", "MIN_VALUE") and len(parts) > 1:
            if parts[-2] == "Double":
                return 1.7976931348623157e308
            return LIMITS[parts[-2]][1 if last == "MAX_VALUE" else 0]
        if last in TYPES and (len(parts) == 1 or parts[-2] == "Type"):
            return last
        if last in ("HIGH", "MEDIUM", "LOW"):
            return ("importance", last)
        if len(parts) > 1 and parts[-2] == "TimeUnit":
            return Unit(last)
        if last == "class":
            return parts[-2]
        if len(parts) == 1:
            for cls in (self.cls, *self.sources.static_imports(self.cls, last)):
                text = cls in self.sources.paths and self.sources.constant(cls, last)
                if text:
                    return self.evaluate_in(cls, text)
            raise Unsupported(f"{self.cls}: {name}")
        owner = parts[-2]
        if owner in self.sources.paths:
            text = self.sources.constant(owner, last)
            if text:
                return self.evaluate_in(owner, text)
            return EnumConstant(owner, last)
        try:
            self.sources.enum_holder(owner)
            return EnumConstant(owner, last)  # a constant of a nested enum
        except Unsupported:
            base = self.resolve(".".join(parts[:-1]))
        return self.field(base, last)

    def call(self, name: str, args: list[Any]) -> Any:
        parts = name.split(".")
        fn, owner = parts[-1], parts[-2] if len(parts) > 1 else ""
        if fn == "atLeast":
            return Validator(f"range:{args[0]}:")
        if fn == "between":
            return Validator(f"range:{args[0]}:{args[1]}")
        if fn == "in" and owner == "ValidList":
            nonempty = bool(args) and args[0] is False
            values = args[1:] if args and isinstance(args[0], bool) else args
            return Validator(f"list-in:{','.join(flatten(values))};nodup" + (";nonempty" if nonempty else ""))
        if fn == "anyNonDuplicateValues":
            return Validator("list-in:;nodup" + ("" if args[0] else ";nonempty"))
        if fn == "in":
            kind = "in-ci" if owner == "CaseInsensitiveValidString" else "in"
            return Validator(f"{kind}:{','.join(flatten(args))}")
        if fn in ("of", "asList", "singletonList"):
            return list(args)
        if fn in ("emptyList", "emptySet"):
            return []
        if fn == "join" and owner == "String":
            return args[0].join(flatten(args[1:]))
        if fn == "join" and owner == "Utils":
            return args[1].join(flatten(args[0]))
        if fn == "valueOf" and owner in ("Integer", "Long", "Double"):
            return args[0]
        if fn == "enumOptions":
            return [self.method(EnumConstant(args[0], c), "toString", []) for c, _ in self.sources.enum_constants(args[0])]
        if fn == "names" and len(parts) == 2:
            return [self.field(EnumConstant(owner, c), "name") for c, _ in self.sources.enum_constants(owner)]
        if fn == "documentValidValues":
            return ["consumer", "classic", "share", "streams"]
        if fn == "getDefaultAlgorithm":
            return JVM_DEFAULTS[owner]
        if fn == "serverSynonym":
            return server_synonyms(self.sources)[args[0]]
        if fn == "getName" and len(parts) > 2 and parts[-2] == "class":
            return self.sources.fqn(parts[-3])
        if len(parts) > 1:
            return self.method(self.resolve(".".join(parts[:-1])), fn, args)
        raise Unsupported(f"call {name}")

    def method(self, v: Any, name: str, args: list[Any]) -> Any:
        if isinstance(v, Unit) and name.startswith("to"):
            target = {"toMillis": 1, "toSeconds": 1000, "toMinutes": 60_000, "toHours": 3_600_000}[name]
            return int(args[0] * UNIT_MS[v.name] / target)
        if isinstance(v, EnumConstant) and name == "name":
            return v.name
        if isinstance(v, EnumConstant) and name == "toString":
            holder, _, arguments = self.sources.enum_arguments(v.enum, v.name)
            body = re.search(rf"enum\s+{v.enum}\b.*?String toString\(\)\s*\{{\s*return\s+([^;]+);", self.sources.text(holder), re.S)
            if body is None:
                return v.name
            if "toLowerCase" in body.group(1):
                return v.name.lower()
            return self.evaluate_in(holder, arguments[0])
        if isinstance(v, str) and name in ("toLowerCase", "toUpperCase"):
            return v.lower() if name == "toLowerCase" else v.upper()
        if isinstance(v, list) and name in ("stream", "toArray"):
            return v
        if isinstance(v, (int, float)) and name == "doubleValue":
            return float(v)
        raise Unsupported(f"method {v!r}.{name}")

    def field(self, v: Any, name: str) -> Any:
        if isinstance(v, EnumConstant):
            holder, params, arguments = self.sources.enum_arguments(v.enum, v.name)
            if name in params:
                return self.evaluate_in(holder, arguments[params.index(name)])
        raise Unsupported(f"field {v!r}.{name}")


def flatten(values: list[Any]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(flatten(v) if isinstance(v, list) else [java_str(v)])
    return out


def server_synonyms(sources: JavaSources) -> dict[str, str]:
    """Topic config -> the broker setting that gives its default, from ServerTopicConfigSynonyms."""
    text = sources.text("ServerTopicConfigSynonyms")
    start = text.index("(", text.index("ALL_TOPIC_CONFIG_SYNONYMS = Utils.mkMap")) + 1
    prefixes = {"sameName": "", "single": "", "sameNameWithLogPrefix": "log.", "singleWithLogPrefix": "log.",
                "listWithLogPrefix": "log.", "sameNameWithLogCleanerPrefix": "log.cleaner.",
                "singleWithLogCleanerPrefix": "log.cleaner."}
    synonyms = {}
    for entry in split_arguments(text[start : balanced_end(text, start, ")")]):
        kind, arguments = re.match(r"(\w+)\((.*)\)$", entry, re.S).groups()
        args = split_arguments(arguments)
        topic = Expression(sources, "ServerTopicConfigSynonyms", args[0]).value()
        first = args[1] if len(args) > 1 else None
        if first and first.startswith("new ConfigSynonym"):
            first = split_arguments(first[first.index("(") + 1 : -1])[0]
        name = Expression(sources, "ServerTopicConfigSynonyms", first).value() if first else topic
        synonyms[topic] = prefixes[kind] + name
    return synonyms


def properties_value(value: Any, kind: str, sources: JavaSources) -> str | None:
    """A default as a properties file would write it (None: Kafka has none)."""
    if value is NO_DEFAULT or value is None:
        return None
    if kind == "LIST" and isinstance(value, list):
        return ",".join(flatten(value))
    if kind == "DOUBLE":
        return str(float(value))
    if kind == "CLASS" and value in sources.paths:
        return sources.fqn(value)
    return java_str(value)


def definitions(
    sources: JavaSources, cls: str, statement: str, found: dict[str, tuple[str, str | None, str]], internal: set[str],
) -> None:
    """The ``define`` calls of the ConfigDef that ``statement`` (a regular expression) starts in class ``cls``."""
    text = sources.text(cls)
    start = re.search(statement, text).start()
    body = text[start : balanced_end(text, start, ";")]
    for m in re.finditer(r"\.\s*(define|defineInternal)\s*\(", body):
        args = split_arguments(body[m.end() : balanced_end(body, m.end(), ")")])

        def evaluate(text: str) -> Any:
            return Expression(sources, cls, text).value()

        importance = next((k for k, a in enumerate(args) if re.search(r"\b(HIGH|MEDIUM|LOW)$", a)), len(args))
        name, kind = evaluate(args[0]), evaluate(args[1])
        if m.group(1) == "defineInternal":
            internal.add(name)
        if name in READ_OFF:
            found.setdefault(name, READ_OFF[name])
            continue
        middle = [evaluate(a) for a in args[2:importance]]
        default = middle[0] if middle else NO_DEFAULT
        validator = middle[1].spec if len(middle) > 1 and isinstance(middle[1], Validator) else ""
        found.setdefault(name, (kind, properties_value(default, kind, sources), validator))


def settings(sources: JavaSources) -> tuple[dict[str, tuple[str, str | None, str]], set[str]]:
    found: dict[str, tuple[str, str | None, str]] = {}
    internal: set[str] = set()
    for cls, statement in CONFIG_CLASSES.items():
        definitions(sources, cls, re.escape(statement or "CONFIG_DEF ="), found, internal)
    found.update(READ_OFF)
    return found, internal


def topic_settings(sources: JavaSources) -> dict[str, tuple[str, str | None, str]]:
    """LogConfig's topic-level ConfigDef (the static block that fills ``CONFIG``)."""
    found: dict[str, tuple[str, str | None, str]] = {}
    definitions(sources, "LogConfig", r"\bCONFIG\s*\.\s*define\s*\(", found, set())
    return found


def group_settings(sources: JavaSources) -> dict[str, tuple[str, str | None, str, str | None]]:
    """GroupConfig's ConfigDef (the group-level configs of KIP-848/932/1071), each with the broker setting that
    gives its default (``ALL_GROUP_CONFIG_SYNONYMS``; None: GroupConfig's own default)."""
    found: dict[str, tuple[str, str | None, str]] = {}
    definitions(sources, "GroupConfig", re.escape("CONFIG_DEF ="), found, set())
    text = sources.text("GroupConfig")
    start = text.index("ALL_GROUP_CONFIG_SYNONYMS")
    body = text[start : balanced_end(text, start, ";")]
    synonyms: dict[str, str | None] = {}
    for entry in re.finditer(r"Map\.entry\(\s*(\w+)\s*,\s*Optional\.(?:of\(\s*([\w.]+)\s*\)|empty\(\))\s*\)", body):
        name = Expression(sources, "GroupConfig", entry.group(1)).value()
        synonyms[name] = Expression(sources, "GroupConfig", entry.group(2)).value() if entry.group(2) else None
    return {name: (*spec, synonyms.get(name)) for name, spec in found.items()}


def table_rows(table: dict[str, tuple[str | None, ...]]) -> list[str]:
    """One line per setting, by name: ``"name": (its facts, None where Kafka has none),``."""
    return [
        f"    {json.dumps(name)}: ({', '.join('None' if fact is None else json.dumps(fact) for fact in table[name])}),"
        for name in sorted(table)
    ]


def render(
    found: dict[str, tuple[str, str | None, str]], internal: set[str], topics: dict[str, tuple[str, str | None, str]],
    groups: dict[str, tuple[str, str | None, str, str | None]], version: str,
) -> str:
    lines = [
        f'"""Apache Kafka {version}\'s broker settings: facts read off its own definitions (``AbstractKafkaConfig.CONFIG_DEF``),',
        "and its topic (LogConfig) and group (GroupConfig) configs.",
        "",
        "name -> (ConfigDef type, default as a properties value or None when Kafka has none, validator spec as",
        "``config.values`` reads it). Generated by ``tools/gen_kafka_settings.py``; do not edit by hand.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'KAFKA_VERSION = "{version}"',
        "",
        "BROKER_SETTINGS: dict[str, tuple[str, str | None, str]] = {",
    ]
    lines += table_rows(found)
    lines += ["}", "", "# Defined with defineInternal: known to Kafka, absent from its documentation.", "INTERNAL_SETTINGS = frozenset(", "    {"]
    lines += [f"        {json.dumps(name)}," for name in sorted(internal)]
    lines += ["    }", ")", "", "# Topic configs (LogConfig): name -> (type, default, validator spec).",
              "TOPIC_SETTINGS: dict[str, tuple[str, str | None, str]] = {"]
    lines += table_rows(topics)
    lines += ["}", "", "# Group configs (GroupConfig): name -> (type, default, validator spec, broker setting giving its",
              "# default or None).", "GROUP_SETTINGS: dict[str, tuple[str, str | None, str, str | None]] = {"]
    lines += table_rows(groups)
    lines += ["}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kafka", type=Path, help="a checkout of Apache Kafka's source")
    parser.add_argument("version", help="the Kafka release it is, e.g. 4.3.1")
    parser.add_argument("--out", type=Path, default=Path("minibroker/config/kafka_settings.py"))
    args = parser.parse_args()
    sources = JavaSources(args.kafka)
    found, internal = settings(sources)
    topics, groups = topic_settings(sources), group_settings(sources)
    args.out.write_text(render(found, internal, topics, groups, args.version))
    print(f"{args.out}: {len(found)} settings, {len(internal)} internal, {len(topics)} topic, {len(groups)} group")


if __name__ == "__main__":
    main()
