"""Integers past 64 bits in JSON: orjson reads them as floats, the standard library
exactly. A document parsed by orjson is parsed again, exactly, only when it holds a
float that large (a walk of the parsed value is cheaper than scanning the text)."""

from __future__ import annotations

from typing import Any

_SMALLEST_WIDE = 2.0**63  # orjson keeps integers in -2**63 .. 2**64-1 exact


def may_hold_wide_integers(value: Any) -> bool:
    """Whether `value` (from orjson) holds a float that may stand for an integer past 64 bits."""
    if type(value) is float:
        return abs(value) >= _SMALLEST_WIDE
    stack = [value] if type(value) in (dict, list) else []
    while stack:
        item = stack.pop()
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append(child)
            elif kind is float and abs(child) >= _SMALLEST_WIDE:
                return True
    return False
