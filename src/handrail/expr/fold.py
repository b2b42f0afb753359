"""Compile-time simplification: constant folding and conditions that cannot vary.

Folding makes the runtime closure smaller; the warnings tell the author that a
condition always holds or never holds, which is almost always a mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handrail.expr.ast import All, Any_, Compare, Const, Expr, Not, Truthy
from handrail.expr.semantics import as_number, is_number, lenient_equals

Warn = Callable[[str, bool, Expr], None]  # (reason, always_holds, node)


def fold(node: Expr, warn: Warn) -> Expr:
    match node:
        case Compare(op="in", value=value) if value == ():  # not a sequence pattern: () only
            warn("`in` an empty list never holds", False, node)
            return Const(False, node.at)
        case Compare() | Truthy() | Const():
            return node
        case Not(item=item):
            match fold(item, warn):
                case Const(value=value):
                    return Const(not value, node.at)
                case Not(item=twice):
                    return twice
                case inner:
                    return Not(inner, node.at)
        case All() | Any_():
            return _fold_parts(node, warn)


def _fold_parts(node: All | Any_, warn: Warn) -> Expr:
    is_all = isinstance(node, All)
    items: list[Expr] = []
    seen: set[Any] = set()  # keys are hashable; a set keeps a long `or` linear
    for child in node.items:
        folded = fold(child, warn)
        if isinstance(folded, Const):
            if folded.value is not is_all:
                return Const(not is_all, node.at)  # false in and / true in or decides
            continue  # neutral element
        key = _key(folded)
        if key not in seen:
            seen.add(key)
            items.append(folded)
    if not items:
        return Const(is_all, node.at)
    if len(items) == 1:
        return items[0]
    if is_all and _contradicts(items):
        warn("its parts contradict each other", False, node)
        return Const(False, node.at)
    if not is_all and _exhaustive(items):
        warn("one of its parts always holds", True, node)
        return Const(True, node.at)
    return All(tuple(items), node.at) if is_all else Any_(tuple(items), node.at)


def _key(node: Expr) -> Any:
    """Structural identity of a tree. Not `==` on nodes: Python has 1 == True and
    0 == False, but `x == 1` and `x == true` are different conditions."""
    match node:
        case Compare(var=var, op=op, value=value):
            return ("compare", var, op, _tag(value))
        case Truthy(var=var):
            return ("truthy", var)
        case Const(value=value):
            return ("const", value)
        case Not(item=item):
            return ("not", _key(item))
        case All(items=items):
            return ("and", tuple(_key(i) for i in items))
        case Any_(items=items):
            return ("or", tuple(_key(i) for i in items))


def _tag(value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if is_number(value):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, tuple):
        return ("list", tuple(_tag(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _tag(v)) for k, v in value.items())))
    return ("null",)


def _compatible(a: Any, b: Any) -> bool:
    """Whether some value lenient-equals both literals (`x == a and x == b` can hold)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_compatible(a[k], b[k]) for k in a)
    # a witness, if any, is one of the literals, a boolean, a yes/no word or a number
    candidates: list[Any] = [a, b, True, False, *_WORDS]
    candidates += [as_number(v) for v in (a, b) if isinstance(v, str) and as_number(v) is not None]
    return any(lenient_equals(c, a) and lenient_equals(c, b) for c in candidates)


_WORDS = ("true", "yes", "1", "false", "no", "0")


def _interchangeable_key(value: Any) -> Any:
    """Equal for two literals exactly when every value lenient-equals both or neither.
    Lenient equality is not transitive ('1' and '1.0' differ, yet the number 1 equals
    both), so this is stricter than lenient_equals(a, b)."""
    if isinstance(value, str):
        return ("string", value.strip().casefold())
    if isinstance(value, tuple):
        return ("list", tuple(_interchangeable_key(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _interchangeable_key(v)) for k, v in value.items())))
    return _tag(value)


def _has_negated_pair(items: list[Expr]) -> bool:
    """Whether two of `items` negate each other (`c` and `not c`, `x == v` and `x != v`).
    Hashing the parts keeps it linear: a pairwise search made an `or` of 16,000 terms
    take minutes."""
    keys = {_key(item) for item in items}
    if any(isinstance(item, Not) and _key(item.item) in keys for item in items):
        return True
    equal: set[tuple[str, Any]] = set()
    unequal: set[tuple[str, Any]] = set()
    for item in items:
        if isinstance(item, Compare) and item.op in ("equals", "not_equals"):
            (equal if item.op == "equals" else unequal).add((item.var, _interchangeable_key(item.value)))
    return not equal.isdisjoint(unequal)


def _contradicts(items: list[Expr]) -> bool:
    if _has_negated_pair(items):
        return True
    equals: dict[str, dict[Any, Any]] = {}  # var -> one value per interchangeable class
    low: dict[str, tuple[float, bool]] = {}
    high: dict[str, tuple[float, bool]] = {}
    for a in items:
        if not isinstance(a, Compare):
            continue
        if a.op == "equals":
            found = equals.setdefault(a.var, {})
            key = _interchangeable_key(a.value)
            if key in found:
                continue  # interchangeable values are compatible with the same values
            if any(not _compatible(v, a.value) for v in found.values()):
                return True
            found[key] = a.value
        elif a.op in ("gt", "gte") and is_number(a.value):
            # the tighter lower bound; at equal values the strict one (gt) is tighter
            low[a.var] = max(low.get(a.var, (float("-inf"), False)), (a.value, a.op == "gt"))
        elif a.op in ("lt", "lte") and is_number(a.value):
            # the tighter upper bound; at equal values the strict one (lt) is tighter
            bound = (a.value, a.op == "lt")
            old = high.get(a.var, (float("inf"), False))
            high[a.var] = min(old, bound, key=lambda b: (b[0], not b[1]))
    for var, (lo, lo_strict) in low.items():
        if var in high:
            hi, hi_strict = high[var]
            if lo > hi or (lo == hi and (lo_strict or hi_strict)):
                return True
    return False


def _exhaustive(items: list[Expr]) -> bool:
    return _has_negated_pair(items)
