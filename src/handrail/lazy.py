"""The lazy-export helper: a package's `__getattr__` that imports its names on first use.
A module of its own, importing nothing of handrail, so that the packages using it
(handrail itself, checks, patterns, runs) never import the package's `__init__` from
below."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's `__getattr__` (PEP 562) that imports each name of `homes` (name -> the
    module defining it) on first use, so that importing the package loads none of them."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module  # lazy: a hook's start-up

        return getattr(import_module(home), name)

    return __getattr__
