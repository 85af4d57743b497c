"""Configuration dataclasses without generated methods.

``@dataclass`` writes an ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` for each class as source code and
compiles it: for a class of 70 settings that costs a broker's start-up more than importing a module (about 30 M
instructions, a tenth of the interpreter's own start). ``config_class`` keeps what a dataclass is for here (fields
with defaults and metadata, read through ``dataclasses.fields`` by parsers and reference tables) and gives the class
generic frozen methods of ``FrozenConfig`` that loop over those fields.
"""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from typing import Any, ClassVar, TypeVar, dataclass_transform

ConfigClass = TypeVar("ConfigClass", bound=type)


class FrozenConfig:
    """Keyword construction (every field has a default), immutability, a repr of the fields marked ``repr`` and
    value equality: what ``@dataclass(frozen=True)`` generates, written once."""

    __slots__ = ()
    _defaults: ClassVar[dict[str, Any]] = {}  # every field's default, in the order of the fields
    _shown: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values: Any) -> None:
        if not values.keys() <= self._defaults.keys():
            unknown = ", ".join(sorted(values.keys() - self._defaults.keys()))
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments: {unknown}")
        object.__setattr__(self, "__dict__", {**self._defaults, **values})  # one dict for all fields: cheap to make

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._defaults)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def config_class(cls: ConfigClass) -> ConfigClass:
    """Make ``cls`` (a ``FrozenConfig`` whose fields all have plain defaults) a dataclass whose methods are
    ``FrozenConfig``'s."""
    if not issubclass(cls, FrozenConfig):
        raise TypeError(f"{cls.__name__} must derive from FrozenConfig")
    cls = dataclass(init=False, repr=False, eq=False)(cls)
    described = fields(cls)
    missing = [f.name for f in described if f.default is MISSING]
    if missing:
        raise TypeError(f"{cls.__name__}: every field needs a plain default ({', '.join(missing)} has none)")
    cls._defaults = {f.name: f.default for f in described}
    cls._shown = tuple(f.name for f in described if f.repr)
    return cls
