"""Where the package's data files live: inside the installed package, or, in a
source checkout, at the top of the repository (grammar/, workflows/, spec/)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_REPOSITORY = _PACKAGE.parents[1]


def resource(*parts: str) -> Path:
    inside = _PACKAGE.joinpath(*parts)
    if inside.exists():
        return inside
    return _REPOSITORY.joinpath(*parts)
