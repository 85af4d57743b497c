"""Message descriptions loaded on first use (issue 28: start-up near a bare asyncio process).

The generated package ``protocol.messages`` holds one module per API (its request and its response) and per family of
other messages (headers, the consumer protocol, each coordinator topic's records). Its ``__init__`` only says which
module defines each description; ``Descriptions`` imports that module the first time a description is asked for,
by name (``from protocol.messages import PRODUCE_REQUEST``, through the package's PEP 562 ``__getattr__``) or through
a ``LazyTable`` (``REQUESTS[0]``). A broker that has only answered ApiVersions has built only the headers' and
ApiVersions' descriptions; a lookup never builds another API's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any, TypeVar

from .schema import Message

K = TypeVar("K")


class Descriptions:
    """The descriptions of one generated package: the module that defines each (by constant name), imported once.

    A description, once loaded, is put in the package's namespace, so the next ``from ... import`` of it is a plain
    attribute lookup."""

    __slots__ = ("package", "namespace", "modules")

    def __init__(self, package: str, namespace: dict[str, Any], modules: Mapping[str, str]) -> None:
        self.package = package
        self.namespace = namespace
        self.modules = modules

    def attribute(self, name: str) -> Message:
        """The description called ``name`` (its module imported now if it is not yet); AttributeError if none is."""
        module = self.modules.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        message: Message = getattr(import_module(f"{self.package}.{module}"), name)
        self.namespace[name] = message
        return message

    def names(self) -> list[str]:
        """Every name the package has, loaded or not (its ``__dir__``)."""
        return sorted({*self.namespace, *self.modules})

    def table(self, constants: Mapping[K, str]) -> LazyTable[K]:
        return LazyTable(self, constants)


class LazyTable(Mapping[K, Message]):
    """A read-only mapping to descriptions (``REQUESTS``: API key to request), each loaded when first looked up.

    Looking up one key (``[]``, ``get``) loads that description only; ``in``, ``len`` and the keys load none; values,
    items and comparing load them all, in the order the generator listed them."""

    __slots__ = ("_descriptions", "_constants", "_loaded")

    def __init__(self, descriptions: Descriptions, constants: Mapping[K, str]) -> None:
        self._descriptions = descriptions
        self._constants = constants  # key -> the description's constant name in the package
        self._loaded: dict[K, Message] = {}

    def __getitem__(self, key: K) -> Message:
        try:
            return self._loaded[key]
        except KeyError:
            pass
        message = self._descriptions.attribute(self._constants[key])  # KeyError for a key the table does not have
        self._loaded[key] = message
        return message

    def __contains__(self, key: object) -> bool:
        return key in self._constants

    def __len__(self) -> int:
        return len(self._constants)

    def __iter__(self) -> Iterator[K]:
        return iter(self._constants)

    def __repr__(self) -> str:
        return f"LazyTable({dict(self)!r})"
