"""The configuration classes' generic methods behave as ``@dataclass(frozen=True)``'s generated ones did."""

from __future__ import annotations

import dataclasses

import pytest

from minibroker.storage.frozen_config import FrozenConfig, config_class


@config_class
class Example(FrozenConfig):
    size: int = 3
    name: str = "a"
    secret: str = dataclasses.field(default="hidden", repr=False, metadata={"kafka": "x.secret"})


def test_keyword_construction_with_defaults_and_fields_metadata() -> None:
    example = Example(name="b")
    assert (example.size, example.name, example.secret) == (3, "b", "hidden")
    assert [f.name for f in dataclasses.fields(Example)] == ["size", "name", "secret"]
    assert dataclasses.fields(Example)[2].metadata["kafka"] == "x.secret"
    with pytest.raises(TypeError, match="unexpected keyword arguments: other"):
        Example(other=1)


def test_frozen_and_replaced() -> None:
    example = Example()
    with pytest.raises(dataclasses.FrozenInstanceError):
        example.size = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del example.size
    assert dataclasses.replace(example, size=4) == Example(size=4)


def test_repr_leaves_out_what_the_field_hides() -> None:
    assert repr(Example(size=5)) == "Example(size=5, name='a')"


def test_value_equality_and_hash() -> None:
    assert Example() == Example() and hash(Example()) == hash(Example())
    assert Example(size=1) != Example(size=2)
    assert Example() != ("a", 3)


def test_a_field_without_a_plain_default_is_refused() -> None:
    class NoDefault(FrozenConfig):
        size: int

    with pytest.raises(TypeError, match="size has none"):
        config_class(NoDefault)
