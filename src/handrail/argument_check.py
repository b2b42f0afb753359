"""A quick yes for the arguments most calls send, before the full schema validator.

The tools' input schemas are flat: objects of strings with a pattern and bounds, an
array of such strings, an object taken as is. `quick_check` turns such a schema into
one predicate that answers True only for arguments the schema accepts; anything else
(False) goes to the full validator (fastjsonschema), which words the error. The full
validator costs a few microseconds per call and, for `uniqueItems`, a reference cycle
per call that the garbage collector must then find; this costs a fraction of that.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Accept = Callable[[Any], bool]

# the keywords a quick check understands; a schema with any other gets none
_KNOWN = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "pattern",
        "minLength",
        "maxLength",
        "items",
        "uniqueItems",
    }
)
# `^[...]+$`: one character class, repeated. What fullmatches the class run is what
# the validator's search accepts (it reads `$` as the end of the text).
_CLASS_RUN = re.compile(r"\^(\[[^\]\\]*\])\+\$")


def quick_check(schema: Mapping[str, Any]) -> Accept | None:
    """A predicate True only for values `schema` accepts; None when the schema uses
    more than this module knows (the full validator then decides every call)."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


class _Unsupported(Exception):
    pass


def _compile(schema: Mapping[str, Any]) -> Accept:
    if not isinstance(schema, Mapping) or not _KNOWN.issuperset(schema):
        raise _Unsupported
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind == "array":
        return _array(schema)
    if kind == "object":
        return _object(schema)
    raise _Unsupported


def _string(schema: Mapping[str, Any]) -> Accept:
    if set(schema) - {"type", "description", "pattern", "minLength", "maxLength"}:
        raise _Unsupported
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    if type(shortest) is not int or (longest is not None and type(longest) is not int):
        raise _Unsupported
    most = longest if longest is not None else float("inf")
    pattern = schema.get("pattern")
    if pattern is None:
        return lambda v: type(v) is str and shortest <= len(v) <= most
    run = _CLASS_RUN.fullmatch(pattern) if isinstance(pattern, str) else None
    if run is None:
        raise _Unsupported
    whole = re.compile(run.group(1) + "+").fullmatch
    return lambda v: type(v) is str and shortest <= len(v) <= most and whole(v) is not None


def _array(schema: Mapping[str, Any]) -> Accept:
    if set(schema) - {"type", "description", "items", "uniqueItems"}:
        raise _Unsupported
    items = schema.get("items")
    if not isinstance(items, Mapping) or items.get("type") != "string":
        raise _Unsupported  # unique items compared as strings only
    item = _string(items)
    unique = schema.get("uniqueItems", False)
    if unique is not True and unique is not False:
        raise _Unsupported

    def accept(value: Any) -> bool:
        if type(value) is not list:
            return False
        for entry in value:
            if not item(entry):
                return False
        return not unique or len(set(value)) == len(value)

    return accept


def _object(schema: Mapping[str, Any]) -> Accept:
    if set(schema) - {"type", "description", "properties", "required", "additionalProperties"}:
        raise _Unsupported
    extra = schema.get("additionalProperties", True)
    if extra is not True and extra is not False:
        raise _Unsupported
    properties = {name: _compile(sub) for name, sub in schema.get("properties", {}).items()}
    required = frozenset(schema.get("required", ()))
    if not all(isinstance(name, str) for name in required):
        raise _Unsupported
    names = frozenset(properties)
    checks = tuple(properties.items())
    closed = not extra

    def accept(value: Any) -> bool:
        if type(value) is not dict:
            return False
        keys = value.keys()
        if not required <= keys or (closed and not keys <= names):
            return False
        for name, check in checks:
            entry = value.get(name, _ABSENT)
            if entry is not _ABSENT and not check(entry):
                return False
        return True

    return accept


_ABSENT = object()
