"""Compile-time simplification: constant folding and conditions that cannot vary.

Folding makes the runtime closure smaller; the warnings tell the author that a
condition always holds or never holds, which is almost always a mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handrail.expr.ast import All, Any_, Compare, Const, Node, Not, Truthy
from handrail.expr.semantics import is_number, lenient_equals

Warn = Callable[[str, bool, Node], None]  # (reason, always_holds, node)


def fold(node: Node, warn: Warn) -> Node:
    if isinstance(node, Compare):
        if node.op == "in" and node.value == ():
            warn("`in` an empty list never holds", False, node)
            return Const(False, node.at)
        return node
    if isinstance(node, Truthy | Const):
        return node
    if isinstance(node, Not):
        inner = fold(node.item, warn)
        if isinstance(inner, Const):
            return Const(not inner.value, node.at)
        if isinstance(inner, Not):
            return inner.item
        return Not(inner, node.at)
    is_all = isinstance(node, All)
    items: list[Node] = []
    for child in node.items:
        folded = fold(child, warn)
        if isinstance(folded, Const):
            if folded.value is not is_all:
                return Const(not is_all, node.at)  # false in and / true in or decides
            continue  # neutral element
        if folded not in items:
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


def _negation(a: Node, b: Node) -> bool:
    if (isinstance(a, Not) and a.item == b) or (isinstance(b, Not) and b.item == a):
        return True
    if isinstance(a, Compare) and isinstance(b, Compare) and a.var == b.var:
        pair = {a.op, b.op}
        return pair == {"equals", "not_equals"} and lenient_equals(a.value, b.value)
    return False


def _contradicts(items: list[Node]) -> bool:
    equals: dict[str, Any] = {}
    low: dict[str, tuple[float, bool]] = {}
    high: dict[str, tuple[float, bool]] = {}
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if _negation(a, b):
                return True
        if not isinstance(a, Compare):
            continue
        if a.op == "equals":
            if a.var in equals and not lenient_equals(equals[a.var], a.value):
                return True
            equals.setdefault(a.var, a.value)
        elif a.op in ("gt", "gte") and is_number(a.value):
            low[a.var] = max(low.get(a.var, (float("-inf"), False)), (a.value, a.op == "gt"))
        elif a.op in ("lt", "lte") and is_number(a.value):
            high[a.var] = min(high.get(a.var, (float("inf"), False)), (a.value, a.op == "lt"))
    for var, (lo, lo_strict) in low.items():
        if var in high:
            hi, hi_strict = high[var]
            if lo > hi or (lo == hi and (lo_strict or hi_strict)):
                return True
    return False


def _exhaustive(items: list[Node]) -> bool:
    return any(_negation(a, b) for i, a in enumerate(items) for b in items[i + 1 :])
