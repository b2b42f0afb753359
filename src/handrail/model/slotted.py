"""`Slotted`: the base of the value types a hook process or a server's start-up makes,
in place of a `typing.NamedTuple` or a dataclass. Making a NamedTuple class costs about
700K instructions (its `__new__` is evaluated from source), a class of slots about 70K;
a hook makes a dozen of them on every tool call. `dataclasses` loads `inspect` and
`ast`, several milliseconds a server would pay before its first answer. What callers
used of either is kept: equality and a hash over the fields, its repr, `_replace`;
and, for `Frozen`, that a value cannot be changed once made."""

from collections.abc import Mapping
from typing import Any, ClassVar, Self


class Slotted:
    """Fields are the subclass's `__slots__` (sorted, as ruff keeps them); its `__init__`
    takes each by name. `_uncompared` names the fields equality, the hash and the repr
    leave out (a loader, a cache), as a dataclass's `field(compare=False)`."""

    __slots__: tuple[str, ...] = ()
    _uncompared: ClassVar[frozenset[str]] = frozenset()
    _compared: ClassVar[tuple[str, ...]] = ()  # the fields that are compared, set once per class

    def __init_subclass__(cls) -> None:
        cls._compared = tuple(name for name in cls.__slots__ if name not in cls._uncompared)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slotted) and type(other) is type(self) and _values(self) == _values(other)

    def __hash__(self) -> int:
        return hash(_values(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._compared)
        return f"{type(self).__name__}({fields})"

    def _replace(self, **changes: Any) -> Self:
        return type(self)(**{name: getattr(self, name) for name in self.__slots__} | changes)


class Frozen(Slotted):
    """A Slotted value that is made once: its `__init__` sets the fields with `_fill`,
    and assigning or deleting one afterwards raises AttributeError (as a frozen
    dataclass's FrozenInstanceError, an AttributeError, does)."""

    __slots__ = ()

    def _fill(self, given: Mapping[str, Any]) -> None:
        """Each field from `given` (an `__init__`'s `locals()`: its parameters, a field each)."""
        name: str
        for name in self.__slots__:
            object.__setattr__(self, name, given[name])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is made once: {name} is given at construction")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is made once: {name} cannot be deleted")


def _values(value: Slotted) -> tuple[Any, ...]:
    return tuple(getattr(value, name) for name in value._compared)
