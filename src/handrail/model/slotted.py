"""`Slotted`: the base of the value types a hook process makes, in place of a
`typing.NamedTuple`. Making a NamedTuple class costs about 700K instructions (its
`__new__` is evaluated from source), a class of slots about 70K; a hook makes a dozen of
them on every tool call. What callers used of the NamedTuple is kept: equality and a hash
over the fields, its repr, `_replace`."""

from typing import Any, Self


class Slotted:
    """Fields are the subclass's `__slots__` (sorted, as ruff keeps them); its `__init__`
    takes each by name."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slotted) and type(other) is type(self) and _values(self) == _values(other)

    def __hash__(self) -> int:
        return hash(_values(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def _replace(self, **changes: Any) -> Self:
        return type(self)(**{name: getattr(self, name) for name in self.__slots__} | changes)


def _values(value: Slotted) -> tuple[Any, ...]:
    return tuple(getattr(value, name) for name in value.__slots__)
