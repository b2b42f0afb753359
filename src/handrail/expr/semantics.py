"""What conditions mean at run time: variable lookup, lenient equality, comparisons.

Compatible with WorkRail's classic evaluator: strings compare without regard to case
or surrounding spaces, numeric strings equal their numbers, "true"/"yes"/"1" equal
true, and a missing variable fails every comparison except `not_equals` and
`equals: null`. Nothing here raises: a type mismatch is simply false.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from handrail.expr.ast import All, Any_, Compare, Const, Expr, Not, Truthy
from handrail.patterns import compile_pattern


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
Predicate = Callable[[Mapping[str, Any]], bool]

_TRUE_WORDS = frozenset({"true", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "no", "0"})


def lookup(context: Mapping[str, Any], path: str) -> Any:
    """Read a dotted path; lists take numeric parts, and `length` of a list or string."""
    if "." not in path:
        if type(context) is dict:  # the common case, without the ABC check below
            return context.get(path, MISSING)
        return context.get(path, MISSING) if isinstance(context, Mapping) else MISSING
    value: Any = context
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, list | tuple | str) and part == "length":
            value = len(value)
        elif isinstance(value, list | tuple) and (index := _index(part)) is not None and index < len(value):
            value = value[index]
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def getter(path: str) -> Callable[[Mapping[str, Any]], Any]:
    """A reader for one path, specialised at compile time. Contexts reaching a condition
    are dicts or ChainMaps (the engine checks), so a plain name is one `.get`."""
    if "." in path:
        return lambda ctx: lookup(ctx, path)
    return lambda ctx: ctx.get(path, MISSING)


def _index(part: str) -> int | None:
    """A list index written in ASCII digits (int() would also take '²' or 5,000 digits)."""
    return int(part) if _INDEX.fullmatch(part) else None


_INDEX = re.compile(r"[0-9]{1,18}")
_INTEGER = re.compile(r"[+-]?[0-9]{1,4000}")
# what counts as a numeric string: decimal notation only (float() would also take
# '1_000', 'inf', 'nan' and non-ASCII digits)
# '1.' and '.5' included; no two parts can take the same digits, so a long run of
# digits that fails to match fails in linear time
_NUMERIC = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_number(text: str) -> int | float | None:
    """The number a numeric string stands for (surrounding spaces allowed), else None."""
    text = text.strip()
    if not _NUMERIC.fullmatch(text):
        return None
    if _INTEGER.fullmatch(text):
        return int(text)  # exact, even beyond float precision
    number = float(text)
    return number if number not in (float("inf"), float("-inf")) else None


def lenient_equals(actual: Any, expected: Any) -> bool:
    if actual is MISSING or actual is None:
        return expected is None
    if expected is None:
        return False
    if isinstance(actual, bool) or isinstance(expected, bool):
        if isinstance(actual, bool) and isinstance(expected, bool):
            return actual is expected
        other, flag = (expected, actual) if isinstance(actual, bool) else (actual, expected)
        if isinstance(other, str):
            word = other.strip().casefold()
            return word in (_TRUE_WORDS if flag else _FALSE_WORDS)
        return False
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(actual, str) and is_number(expected):
        return bool(as_number(actual) == expected)
    if is_number(actual) and isinstance(expected, str):
        return bool(as_number(expected) == actual)
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            lenient_equals(a, e) for a, e in zip(actual, expected, strict=True)
        )
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(
            lenient_equals(actual[k], expected[k]) for k in actual
        )
    try:
        return bool(actual == expected)
    except Exception:
        return False


def truthy(value: Any) -> bool:
    if value is MISSING or value is None or value is False:
        return False
    if isinstance(value, str):
        word = value.strip().casefold()
        return word != "" and word not in _FALSE_WORDS
    if is_number(value):
        return bool(value)
    if isinstance(value, list | tuple | dict):
        return len(value) > 0
    return True


def _fold_text(value: Any) -> str | None:
    return value.strip().casefold() if isinstance(value, str) else None


def comparison(op: str, expected: Any) -> Callable[[Any], bool]:
    """A one-argument test for `actual <op> expected`, with the literal prepared once."""
    if op == "equals":
        if isinstance(expected, str):
            folded = expected.strip().casefold()
            return lambda a: (
                (a.strip().casefold() == folded) if type(a) is str else (lenient_equals(a, expected))
            )
        return lambda a: lenient_equals(a, expected)
    if op == "not_equals":
        equals = comparison("equals", expected)
        return lambda a: not equals(a)
    if op in ("gt", "gte", "lt", "lte"):
        if not is_number(expected):
            return lambda a: False
        bound = expected
        if op == "gt":
            return lambda a: is_number(a) and a > bound
        if op == "gte":
            return lambda a: is_number(a) and a >= bound
        if op == "lt":
            return lambda a: is_number(a) and a < bound
        return lambda a: is_number(a) and a <= bound
    if op == "contains":
        needle = _fold_text(expected)

        def contains(a: Any) -> bool:
            if isinstance(a, str):
                return needle is not None and needle in a.casefold()
            if isinstance(a, list | tuple):
                return any(lenient_equals(item, expected) for item in a)
            if isinstance(a, Mapping) and isinstance(expected, str):
                return expected in a
            return False

        return contains
    if op in ("startsWith", "endsWith"):
        affix = _fold_text(expected)
        if affix is None:
            return lambda a: False
        if op == "startsWith":
            return lambda a: isinstance(a, str) and a.strip().casefold().startswith(affix)
        return lambda a: isinstance(a, str) and a.strip().casefold().endswith(affix)
    if op == "matches":
        if not isinstance(expected, str):
            return lambda a: False
        search = compile_pattern(expected).search
        return lambda a: isinstance(a, str) and search(a) is not None
    if op == "in":
        options = expected if isinstance(expected, tuple) else ()
        return lambda a: a is not MISSING and any(lenient_equals(a, o) for o in options)
    raise ValueError(f"unknown operator {op}")


def compile_node(node: Expr) -> Predicate:
    """Tree -> closure. Called once per condition at load time."""
    match node:
        case Const(value=value):
            return lambda ctx: value
        case Truthy(var=path):
            get = getter(path)
            return lambda ctx: truthy(get(ctx))
        case Compare(var=path, op=op, value=expected):
            test = comparison(op, expected)
            if op == "not_equals" or (op == "equals" and expected is None):
                get = getter(path)
                return lambda ctx: test(get(ctx))
            # every other comparison is false on a missing variable
            read = getter(path)
            return lambda ctx: (v := read(ctx)) is not MISSING and test(v)
        case Not(item=item):
            inner = compile_node(item)
            return lambda ctx: not inner(ctx)
        case All(items=items) | Any_(items=items):
            return _combined(tuple(compile_node(i) for i in items), every=isinstance(node, All))


def _combined(parts: tuple[Predicate, ...], *, every: bool) -> Predicate:
    """`and` (every) or `or`; two parts, the common case, without a generator."""
    if len(parts) == 2:
        first, second = parts
        if every:
            return lambda ctx: first(ctx) and second(ctx)
        return lambda ctx: first(ctx) or second(ctx)
    if every:
        return lambda ctx: all(p(ctx) for p in parts)
    return lambda ctx: any(p(ctx) for p in parts)
