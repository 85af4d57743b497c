"""JSON Schema compatibility as Confluent's registry decides it (json-schema-provider's `SchemaDiff`): the
differences between an original and an updated schema, each a `Difference` type at a JSON path, and the
update is compatible when every difference is in `COMPATIBLE_CHANGES` (Confluent's default, strict policy).

A reader schema reads a writer's when the differences from the writer (original) to the reader (update) are
compatible; the levels apply that as for every type (`levels`, `formats.SchemaFormat.check`). Messages are Confluent's
`Difference.toString()`, ``{errorType:"...", description:"...'}`` (its closing quote included).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from minibroker.registry import jackson
from minibroker.registry.java_order import key_union_order, map_order
from minibroker.registry.json_model import Node
from minibroker.registry.json_schema import JsonSchema

COMPATIBLE_CHANGES = frozenset("""
    ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
    MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
    MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
    EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
    MULTIPLE_OF_REMOVED
    REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED
    DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
    MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
    UNEVALUATED_PROPERTIES_ADDED UNEVALUATED_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED MAX_CONTAINS_INCREASED
    MAX_CONTAINS_REMOVED MIN_CONTAINS_DECREASED MIN_CONTAINS_REMOVED UNIQUE_ITEMS_REMOVED ADDITIONAL_ITEMS_ADDED
    ADDITIONAL_ITEMS_EXTENDED UNEVALUATED_ITEMS_ADDED UNEVALUATED_ITEMS_EXTENDED
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
    ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
""".split())

# Difference.error(): the message templates by group of types ("%s": the reader's word, then the writer's).
_TEMPLATES: list[tuple[frozenset[str], str]] = [(frozenset(types.split()), text) for types, text in (
    ("MAXIMUM_ADDED MINIMUM_ADDED EXCLUSIVE_MAXIMUM_ADDED EXCLUSIVE_MINIMUM_ADDED MULTIPLE_OF_ADDED "
     "MAX_LENGTH_ADDED MIN_LENGTH_ADDED PATTERN_ADDED REQUIRED_ATTRIBUTE_ADDED MAX_PROPERTIES_ADDED "
     "MIN_PROPERTIES_ADDED DEPENDENCY_ARRAY_ADDED DEPENDENCY_SCHEMA_ADDED MAX_ITEMS_ADDED MIN_ITEMS_ADDED "
     "MAX_CONTAINS_ADDED MIN_CONTAINS_ADDED UNIQUE_ITEMS_ADDED ADDITIONAL_ITEMS_REMOVED "
     "ADDITIONAL_PROPERTIES_REMOVED UNEVALUATED_PROPERTIES_REMOVED UNEVALUATED_ITEMS_REMOVED",
     "The keyword at path '{path}' in the {0} schema is not present in the {1} schema"),
    ("MIN_LENGTH_INCREASED MINIMUM_INCREASED EXCLUSIVE_MINIMUM_INCREASED MIN_PROPERTIES_INCREASED "
     "MULTIPLE_OF_EXPANDED MIN_ITEMS_INCREASED MIN_CONTAINS_INCREASED",
     "The value at path '{path}' in the {0} schema is more than its value in the {1} schema"),
    ("MAX_LENGTH_DECREASED MAXIMUM_DECREASED MAX_ITEMS_DECREASED MAX_CONTAINS_DECREASED "
     "EXCLUSIVE_MAXIMUM_DECREASED MAX_PROPERTIES_DECREASED",
     "The value at path '{path}' in the {0} schema is less than its value in the {1} schema"),
    ("PATTERN_CHANGED MULTIPLE_OF_CHANGED DEPENDENCY_ARRAY_CHANGED",
     "The value at path '{path}' is different between the {0} and {1} schema"),
    ("ADDITIONAL_ITEMS_NARROWED ENUM_ARRAY_NARROWED SUM_TYPE_NARROWED ADDITIONAL_PROPERTIES_NARROWED "
     "UNEVALUATED_PROPERTIES_NARROWED UNEVALUATED_ITEMS_NARROWED",
     "An array or combined type at path '{path}' has fewer elements in the {0} schema than the {1} schema"),
    ("DEPENDENCY_ARRAY_EXTENDED PRODUCT_TYPE_EXTENDED SUM_TYPE_EXTENDED NOT_TYPE_EXTENDED",
     "An array or combined type at path '{path}' has more elements in the {0} schema than the {1} schema"),
    ("TYPE_CHANGED TYPE_NARROWED COMBINED_TYPE_CHANGED COMBINED_TYPE_SUBSCHEMAS_CHANGED ENUM_ARRAY_CHANGED",
     "A type at path '{path}' is different between the {0} schema and the {1} schema"),
    ("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL "
     "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
     "The {0} schema has an open content model and has a property or item at path '{path}' which is missing "
     "in the {1} schema"),
    ("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
     "The {0} schema has an unopen content model and has a required property at path '{path}' which is "
     "missing in the {1} schema"),
    ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
     "The {0} has a closed content model and is missing a property or item present at path '{path}' in the "
     "{1} schema"),
    ("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
     "A property or item is missing in the {0} schema but present at path '{path}' in the {1} schema and is "
     "not covered by its partially open content model"),
    ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
     "The {0} schema has a property or item at path '{path}' which is missing in the {1} schema and is not "
     "covered by its partially open content model"),
)]

Difference = tuple[str, str]  # (type, JSON path)


def describe(difference: Difference, reader: str, writer: str) -> str:
    kind, path = difference
    text = next((t for types, t in _TEMPLATES if kind in types), "")
    return f'{{errorType:"{kind}", description:"{text.format(reader, writer, path=path)}\'}}'


def reads(reader: JsonSchema, writer: JsonSchema, reader_word: str, writer_word: str) -> list[str]:
    """`reader.isBackwardCompatible(writer)`: the differences from the writer (original) to the reader (update)
    that are not compatible."""
    return [describe(d, reader_word, writer_word) for d in compare(writer.root, reader.root)
            if d[0] not in COMPATIBLE_CHANGES]


def compare(original: Node | None, update: Node | None) -> list[Difference]:
    """Every difference from `original` to `update`. Pairs met again while being compared (recursive schemas)
    count as compatible, then the pass is repeated with the pairs found incompatible until it settles."""
    seed: dict[tuple[int, int], list[Difference]] = {}
    while True:
        run = _Run(seed)
        ctx = _Context(run, [])
        _compare(ctx, original, update)
        incompatible = {k: v for k, v in run.memo.items() if any(t not in COMPATIBLE_CHANGES for t, _ in v)}
        if not run.optimistic or incompatible.keys() == seed.keys():
            return ctx.diffs
        seed = incompatible


class _Run:
    """What one pass shares between its contexts: the memo, the pairs in progress, the seed."""

    def __init__(self, seed: dict[tuple[int, int], list[Difference]]) -> None:
        self.memo: dict[tuple[int, int], list[Difference]] = {}
        self.in_progress: set[tuple[int, int]] = set()
        self.seed = seed
        self.optimistic = False


class _Context:
    def __init__(self, run: _Run, path: list[str]) -> None:
        self.run, self.path, self.diffs = run, path, []

    def sub(self) -> _Context:
        return _Context(self.run, list(self.path))

    def add(self, kind: str, attribute: str | None = None) -> None:
        self.diffs.append((kind, "#/" + "/".join(self.path + ([attribute] if attribute else []))))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_CHANGES for kind, _ in self.diffs)

    def enter(self, segment: str) -> _Path:
        return _Path(self, segment)

    def memoized(self, original: Node, update: Node, compare_pair: Callable[[_Context], None]) -> list[Difference]:
        key = (id(original), id(update))
        if key in self.run.memo:
            return self.run.memo[key]
        if key in self.run.in_progress:
            if key in self.run.seed:
                return self.run.seed[key]
            self.run.optimistic = True
            return []
        self.run.in_progress.add(key)
        try:
            pair = _Context(self.run, [])
            compare_pair(pair)
            self.run.memo[key] = list(pair.diffs)
            return pair.diffs
        finally:
            self.run.in_progress.discard(key)

    def add_rebased(self, diffs: list[Difference]) -> None:
        if not self.path:
            self.diffs += diffs
            return
        prefix = "#/" + "/".join(self.path)
        self.diffs += [(kind, prefix if len(path) <= 2 else prefix + "/" + path[2:]) for kind, path in diffs]


class _Path:
    def __init__(self, ctx: _Context, segment: str) -> None:
        self.ctx, self.segment = ctx, segment

    def __enter__(self) -> None:
        self.ctx.path.append(self.segment)

    def __exit__(self, *exc: object) -> None:
        self.ctx.path.pop()


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    o, u = _referred(original), _referred(update)
    ctx.add_rebased(ctx.memoized(o, u, lambda pair: _compare_types(pair, o, u)))


def _referred(node: Node) -> Node:
    while node.kind == "ref":
        node = node.target
    return node


def _empty(node: Node | None) -> bool:
    """everit's `instanceof EmptySchema` (TrueSchema is one)."""
    return node is not None and node.kind in ("empty", "true")


def _compare_types(ctx: _Context, original: Node, update: Node) -> None:
    if original.kind != "combined" and update.kind == "combined":
        if _branch_matches(ctx, update, lambda branch: (original, branch), "SUM_TYPE_EXTENDED", ("anyOf", "oneOf")):
            return
    elif original.kind == "combined" and update.kind != "combined":
        if _branch_matches(ctx, original, lambda branch: (branch, update), "PRODUCT_TYPE_NARROWED", ("allOf",)):
            return
    if original.kind != update.kind:
        if original.kind == "false" or _empty(update):
            return
        if original.unprocessed.get("connect.type") == "bytes" == update.unprocessed.get("connect.type"):
            return
        ctx.add("TYPE_CHANGED")
        return
    for attribute, kind in (("id", "ID_CHANGED"), ("title", "TITLE_CHANGED"), ("description", "DESCRIPTION_CHANGED")):
        if getattr(original, attribute) != getattr(update, attribute):
            ctx.add(kind)
    if original.has_default != update.has_default or (original.has_default and not _same(original.default, update.default)):
        ctx.add("DEFAULT_CHANGED")
    compare_kind = _BY_KIND.get(original.kind)
    if compare_kind is not None:
        compare_kind(ctx, original, update)


def _branch_matches(
    ctx: _Context, combined: Node, pair: Callable[[Node], tuple[Node, Node]], change: str, criteria: tuple[str, ...],
) -> bool:
    """A single-branch combined schema stands for its branch; a sum (update) or product (original) type
    is compatible with the plain schema when one of its branches is."""
    if len(combined.subschemas) == 1:
        sub = ctx.sub()
        _compare(sub, *pair(combined.subschemas[0]))
        if sub.compatible():
            ctx.diffs += sub.diffs
            return True
    elif combined.criterion in criteria:
        for branch in combined.subschemas:
            sub = ctx.sub()
            _compare(sub, *pair(branch))
            if sub.compatible():
                ctx.diffs += sub.diffs
                ctx.add(change)
                return True
    return False


def _same(a: Any, b: Any) -> bool:
    return jackson.write(a) == jackson.write(b)


def _limit(ctx: _Context, name: str, old: Any, new: Any, prefix: str, lower: Any = None) -> None:
    """The ADDED / REMOVED / INCREASED / DECREASED difference of a numeric keyword, compared as Java doubles.
    `lower` is what a decrease is measured against when not `new` (Confluent's exclusiveMaximum quirk)."""
    if old == new:
        return
    if old is None:
        ctx.add(f"{prefix}_ADDED", name)
    elif new is None:
        ctx.add(f"{prefix}_REMOVED", name)
    elif float(old) < float(new):
        ctx.add(f"{prefix}_INCREASED", name)
    elif float(old) > float(new if lower is None else lower):
        ctx.add(f"{prefix}_DECREASED", name)


def _string(ctx: _Context, original: Node, update: Node) -> None:
    _limit(ctx, "maxLength", original.max_length, update.max_length, "MAX_LENGTH")
    _limit(ctx, "minLength", original.min_length, update.min_length, "MIN_LENGTH")
    if original.pattern is None and update.pattern is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif original.pattern is not None and update.pattern is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif original.pattern != update.pattern:
        ctx.add("PATTERN_CHANGED", "pattern")


def _number(ctx: _Context, original: Node, update: Node) -> None:
    _limit(ctx, "maximum", original.maximum, update.maximum, "MAXIMUM")
    _limit(ctx, "minimum", original.minimum, update.minimum, "MINIMUM")
    # Confluent measures a lowered exclusiveMaximum against the update's maximum (when it has one).
    _limit(ctx, "exclusiveMaximum", original.exclusive_maximum, update.exclusive_maximum, "EXCLUSIVE_MAXIMUM",
           update.maximum)
    _limit(ctx, "exclusiveMinimum", original.exclusive_minimum, update.exclusive_minimum, "EXCLUSIVE_MINIMUM")
    old, new = _decimal(original.multiple_of), _decimal(update.multiple_of)
    if old != new or (old is not None and not old.is_finite()):
        if old is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif new is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif not (old.is_finite() and new.is_finite()):
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
        elif old != 0 and new % old == 0:
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif new != 0 and old % new == 0:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.requires_integer != update.requires_integer:
        ctx.add("TYPE_EXTENDED" if original.requires_integer else "TYPE_NARROWED")


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(value)


def _enum(ctx: _Context, original: Node, update: Node) -> None:
    old, new = {jackson.write(v) for v in original.values}, {jackson.write(v) for v in update.values}
    if old != new:
        ctx.add("ENUM_ARRAY_EXTENDED" if new >= old else "ENUM_ARRAY_NARROWED" if old >= new else "ENUM_ARRAY_CHANGED",
                "enum")


def _const(ctx: _Context, original: Node, update: Node) -> None:
    if not _same(original.value, update.value):
        ctx.add("ENUM_ARRAY_CHANGED", "const")


def _not(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("not"):
        sub = ctx.sub()
        _compare(sub, update.must_not, original.must_not)
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")


def _combined(ctx: _Context, original: Node, update: Node) -> None:
    if original.criterion != update.criterion:
        singleton_o, singleton_u = len(original.subschemas) == 1, len(update.subschemas) == 1
        if (update.criterion == "anyOf" or (singleton_o and singleton_u)
                or (singleton_o and update.criterion == "oneOf") or (singleton_u and original.criterion == "allOf")):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    olds, news = _distinct(original.subschemas), _distinct(update.subschemas)
    if len(olds) < len(news):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(olds) > len(news):
        ctx.add("SUM_TYPE_NARROWED" if original.criterion in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED")
    edges: dict[tuple[int, int], list[Difference]] = {}
    for i, old in enumerate(olds):
        with ctx.enter(f"{original.criterion}/{i}"):
            for j, new in enumerate(news):
                sub = ctx.sub()
                _compare(sub, old, new)
                if sub.compatible():
                    edges[(i, j)] = sub.diffs
    matching = _maximum_matching(len(olds), len(news), edges)
    for edge in matching:
        ctx.diffs += edges[edge]
    if len(matching) < min(len(olds), len(news)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _distinct(nodes: list[Node]) -> list[Node]:
    """The subschemas with equal ones collapsed (Confluent puts them in a set)."""
    seen: dict[str, Node] = {}
    for node in nodes:
        seen.setdefault(jackson.write(node.raw) if node.raw is not None else f"#{id(node)}", node)
    return list(seen.values())


def _maximum_matching(left: int, right: int, edges: dict[tuple[int, int], Any]) -> list[tuple[int, int]]:
    """A maximum bipartite matching over the compatible (original, update) pairs (augmenting paths)."""
    match_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in range(right):
            if (i, j) in edges and j not in visited:
                visited.add(j)
                if j not in match_right or augment(match_right[j], visited):
                    match_right[j] = i
                    return True
        return False

    for i in range(left):
        augment(i, set())
    return sorted((i, j) for j, i in match_right.items())


def _additional(ctx: _Context, keyword: str, original: Node, update: Node, prefix: str) -> None:
    """additionalProperties / additionalItems: opened or closed, a schema added or dropped, or both schemas."""
    with ctx.enter(keyword):
        if original.additional != update.additional:
            ctx.add(f"{prefix}_ADDED" if update.additional else f"{prefix}_REMOVED")
        elif original.additional_schema is None and update.additional_schema is not None:
            ctx.add(f"{prefix}_NARROWED")
        elif update.additional_schema is None and original.additional_schema is not None:
            ctx.add(f"{prefix}_EXTENDED")
        else:
            _compare(ctx, original.additional_schema, update.additional_schema)


def _open(node: Node) -> bool:
    """Whether any property or item beyond those named may stand, unconstrained."""
    return (node.additional and node.additional_schema is None and not node.pattern_properties
            and (node.unevaluated is None or _empty(node.unevaluated)))


def _partially_open(node: Node, name: str | None = None) -> Node | None:
    """The schema a property called `name` (or an item past the tuple, without a name) must match, if any."""
    for pattern, schema in node.pattern_properties:
        if re.search(pattern, name):
            return schema
    if node.additional_schema is not None:
        return node.additional_schema
    if node.additional and node.unevaluated is not None and node.unevaluated.kind not in ("false", "empty", "true"):
        return node.unevaluated
    return None


def _object(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("required"):
        for name in map_order(original.properties):
            if name in update.properties:
                was, now = name in original.required, name in update.required
                if was and not now:
                    ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
                elif now and not was:
                    ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if update.properties[name].has_default
                            else "REQUIRED_ATTRIBUTE_ADDED", name)
    with ctx.enter("properties"):
        for name in key_union_order(original.properties, update.properties):
            with ctx.enter(name):
                _property(ctx, original, update, name)
    with ctx.enter("dependencies"):
        for name in key_union_order(original.property_dependencies, update.property_dependencies):
            old, new = original.property_dependencies.get(name), update.property_dependencies.get(name)
            if new is None:
                ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
            elif old is None:
                ctx.add("DEPENDENCY_ARRAY_ADDED", name)
            elif set(old) != set(new):
                ctx.add("DEPENDENCY_ARRAY_EXTENDED" if set(new) >= set(old) else
                        "DEPENDENCY_ARRAY_NARROWED" if set(old) >= set(new) else "DEPENDENCY_ARRAY_CHANGED", name)
        for name in key_union_order(original.schema_dependencies, update.schema_dependencies):
            with ctx.enter(name):
                old_schema, new_schema = original.schema_dependencies.get(name), update.schema_dependencies.get(name)
                if new_schema is None:
                    ctx.add("DEPENDENCY_SCHEMA_REMOVED")
                elif old_schema is None:
                    ctx.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    _compare(ctx, old_schema, new_schema)
    _additional(ctx, "additionalProperties", original, update, "ADDITIONAL_PROPERTIES")
    _unevaluated(ctx, "unevaluatedProperties", original.unevaluated, update.unevaluated, "UNEVALUATED_PROPERTIES")
    _limit(ctx, "maxProperties", original.max_properties, update.max_properties, "MAX_PROPERTIES")
    _limit(ctx, "minProperties", original.min_properties, update.min_properties, "MIN_PROPERTIES")


def _property(ctx: _Context, original: Node, update: Node, name: str) -> None:
    """A property only in the original needs the update open to it; one only in the update needs the
    original closed to it (or open with an empty schema), as Confluent's content-model rules say."""
    old, new = original.properties.get(name), update.properties.get(name)
    if new is None:
        if _open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partially_open(update, name)
        if partial is not None:
            _covered(ctx, old, partial, "PROPERTY_REMOVED")
        elif old is not None and old.kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    elif old is None:
        required = name in update.required
        if _open(original):
            if _empty(new):
                ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            elif required:
                ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if new.has_default
                        else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            else:
                ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        partial = _partially_open(original, name)
        if partial is not None:
            _covered(ctx, partial, new, "PROPERTY_ADDED")
        if required:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if new.has_default
                    else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        _compare(ctx, old, new)


def _covered(ctx: _Context, original: Node | None, update: Node | None, change: str) -> None:
    """Compares a property or item with the schema a partially open content model gives it: its differences,
    then whether the model covers it."""
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs += sub.diffs
    ctx.add(f"{change}_{'IS_COVERED' if sub.compatible() else 'NOT_COVERED'}_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _unevaluated(ctx: _Context, keyword: str, old: Node | None, new: Node | None, prefix: str) -> None:
    if old is None and new is None:
        return
    with ctx.enter(keyword):
        if old is None:
            ctx.add(f"{prefix}_REMOVED" if new.kind == "false" else f"{prefix}_NARROWED")
        elif new is None:
            ctx.add(f"{prefix}_ADDED" if old.kind == "false" else f"{prefix}_EXTENDED")
        elif old.kind == "false" and new.kind != "false":
            ctx.add(f"{prefix}_ADDED")
        elif old.kind != "false" and new.kind == "false":
            ctx.add(f"{prefix}_REMOVED")
        elif _empty(old) and not _empty(new):
            ctx.add(f"{prefix}_NARROWED")
        elif not _empty(old) and _empty(new):
            ctx.add(f"{prefix}_EXTENDED")
        else:
            _compare(ctx, old, new)


def _array(ctx: _Context, original: Node, update: Node) -> None:
    with ctx.enter("items"):
        _compare(ctx, original.items, update.items)
    olds, news = original.item_list or [], update.item_list or []
    for index in range(max(len(olds), len(news))):
        with ctx.enter(f"items/{index}"):
            if index < len(olds) and index < len(news):
                _compare(ctx, olds[index], news[index])
            elif index < len(olds):
                partial = _partially_open(update)
                if _open(update):
                    ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
                elif partial is not None:
                    _covered(ctx, olds[index], partial, "ITEM_REMOVED")
                else:
                    ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL" if olds[index].kind == "false"
                            else "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
            else:
                partial = _partially_open(original)
                if _open(original):
                    ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if _empty(news[index])
                            else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
                elif partial is not None:
                    _covered(ctx, partial, news[index], "ITEM_ADDED")
                else:
                    ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    _additional(ctx, "additionalItems", original, update, "ADDITIONAL_ITEMS")
    _unevaluated(ctx, "unevaluatedItems", original.unevaluated, update.unevaluated, "UNEVALUATED_ITEMS")
    _limit(ctx, "maxItems", original.max_items, update.max_items, "MAX_ITEMS")
    _limit(ctx, "minItems", original.min_items, update.min_items, "MIN_ITEMS")
    if original.unique_items != update.unique_items:
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.unique_items else "UNIQUE_ITEMS_ADDED", "uniqueItems")
    for keyword, prefix in (("maxContains", "MAX_CONTAINS"), ("minContains", "MIN_CONTAINS")):
        _limit(ctx, keyword, _count(original, keyword), _count(update, keyword), prefix)


def _count(node: Node, keyword: str) -> int | None:
    value = node.unprocessed.get(keyword)
    return int(value) if isinstance(value, (int, Decimal)) and not isinstance(value, bool) else None


_BY_KIND: dict[str, Callable[[_Context, Node, Node], None]] = {
    "string": _string, "number": _number, "const": _const, "enum": _enum, "combined": _combined,
    "not": _not, "object": _object, "array": _array,
}
