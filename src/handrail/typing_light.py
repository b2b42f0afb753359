"""`TYPE_CHECKING` and `NamedTuple` as the modules a hook loads use them, without
loading `typing`: importing it takes about a fifth of a bare interpreter's start, and
a hook (handrail/gate/hook.py) runs on every tool call an agent makes. Type checkers
read typing's own names here; at run time `NamedTuple` builds the same
`collections.namedtuple` class typing's does, from the class's annotations and
defaults, with its methods and constants.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False  # what type checkers take as true

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # what typing's NamedTupleMeta leaves out of the class it makes
    _OWN = frozenset(("__module__", "__annotations__", "__doc__", "__slots__", "__classcell__"))

    class _Maker(type):
        def __new__(cls, name: str, bases: tuple[type, ...], space: dict[str, object]) -> type:
            if not bases:
                return super().__new__(cls, name, bases, space)
            fields = list(space.get("__annotations__", {}))
            made = collections.namedtuple(
                name, fields, defaults=[space[f] for f in fields if f in space], module=space["__module__"]
            )
            made.__annotations__ = dict(space.get("__annotations__", {}))
            if space.get("__doc__") is not None:
                made.__doc__ = space["__doc__"]
            for key, value in space.items():
                if key not in _OWN and key not in fields:
                    setattr(made, key, value)
            return made

    class NamedTuple(metaclass=_Maker):
        """Subclassed with fields annotated, as typing.NamedTuple is."""
