"""A condition as one Python function: the tree written out as a single expression,
so that evaluating it costs one call, not three per comparison.

Each comparison reads its variable once into a local and tests it in place; equality
with a string (most conditions) is written inline, every other test calls the closure
semantics.py prepares for it. The meaning is semantics.py's, whose `compile_node`
stays the reference (tests/expr check the two agree on every tree they generate).

Nothing from a workflow reaches the source text: variable paths and literals are bound
as constants (`K1`, `E1`, ...), so the text depends only on the tree's shape, and the
compiled code of each shape is kept (bounded) and shared.
"""

from __future__ import annotations

from functools import lru_cache
from types import CodeType
from typing import Any

from handrail.expr.ast import All, Any_, Compare, Const, Expr, Not, Truthy
from handrail.expr.semantics import MISSING, Predicate, comparison, lenient_equals, lookup, truthy

MAX_NODES = 64  # a larger tree keeps its closures: its source would cost more than it saves
SHAPES = 512  # compiled shapes kept


def inline_predicate(node: Expr) -> Predicate | None:
    """`node` as one function, or None when it is too large to write out."""
    writer = _Writer()
    try:
        body = writer.expr(node)
    except _TooLarge:
        return None
    namespace: dict[str, Any] = {
        "MISSING": MISSING,
        "lenient_equals": lenient_equals,
        "lookup": lookup,
        "truthy": truthy,
        **writer.constants,
    }
    exec(_compiled(body), namespace)
    holds: Predicate = namespace["holds"]
    return holds


@lru_cache(maxsize=SHAPES)
def _compiled(body: str) -> CodeType:
    return compile(f"def holds(ctx):\n    return {body}\n", "<condition>", "exec")


class _TooLarge(Exception):
    pass


class _Writer:
    def __init__(self) -> None:
        self.constants: dict[str, Any] = {}
        self.nodes = 0

    def constant(self, stem: str, value: Any) -> str:
        name = f"{stem}{len(self.constants)}"
        self.constants[name] = value
        return name

    def expr(self, node: Expr) -> str:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLarge
        match node:
            case Const(value=value):
                return "True" if value else "False"
            case Truthy(var=path):
                return f"truthy({self.read(path)})"
            case Compare(var=path, op=op, value=expected):
                return self.compare(path, op, expected)
            case Not(item=item):
                return f"(not {self.expr(item)})"
            case All(items=items):
                return "(" + " and ".join(self.expr(i) for i in items) + ")" if items else "True"
            case Any_(items=items):
                return "(" + " or ".join(self.expr(i) for i in items) + ")" if items else "False"
        raise TypeError(f"not a condition node: {node!r}")

    def read(self, path: str) -> str:
        """The variable's value, MISSING when unset (semantics.getter, written out)."""
        key = self.constant("K", path)
        return f"lookup(ctx, {key})" if "." in path else f"ctx.get({key}, MISSING)"

    def compare(self, path: str, op: str, expected: Any) -> str:
        local = f"v{len(self.constants)}"
        value = f"({local} := {self.read(path)})"
        if op in ("equals", "not_equals") and isinstance(expected, str):
            # semantics.comparison("equals", text), in place: a string is folded and compared
            folded = self.constant("F", expected.strip().casefold())
            literal = self.constant("E", expected)
            if op == "not_equals":  # holds on a missing variable: lenient_equals(MISSING, text) is False
                return (
                    f"(not (({local}.strip().casefold() == {folded}) if type({value}) is str "
                    f"else lenient_equals({local}, {literal})))"
                )
            test = (
                f"(({local}.strip().casefold() == {folded}) if type({local}) is str "
                f"else lenient_equals({local}, {literal}))"
            )
            return f"({value} is not MISSING and {test})"
        check = self.constant("T", comparison(op, expected))
        if op == "not_equals" or (op == "equals" and expected is None):
            return f"{check}({self.read(path)})"  # these decide on a missing variable too
        return f"({value} is not MISSING and {check}({local}))"
