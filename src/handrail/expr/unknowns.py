"""Which unset variables could still change a condition's outcome.

A condition that does not hold because of unset variables names, in guidance, the
variables to set. Only those whose value could change the outcome count: in
`(a or b) and c` with `a` true and `c` unset, setting `b` changes nothing, so only
`c` is named. Decided in three-valued logic (an unset variable is unknown; `and`
is false as soon as one part is false, `or` true as soon as one part is true),
with closures compiled once, like the condition itself.
"""

from __future__ import annotations

from collections.abc import Callable

from handrail.expr.ast import All, Any_, Compare, Const, Expr, Not, Truthy
from handrail.expr.semantics import MISSING, compile_node, getter
from handrail.model.workflow import Context

# (True/False when decided, None when unknown; the unset variables that could decide it)
Verdict = tuple[bool | None, tuple[str, ...]]


def compile_unknowns(node: Expr) -> Callable[[Context], tuple[str, ...]]:
    """Context -> the unset variables whose values could change the outcome, in order."""
    verdict = _compile(node)
    return lambda ctx: verdict(ctx)[1]


def _compile(node: Expr) -> Callable[[Context], Verdict]:
    match node:
        case Const(value=value):
            decided: Verdict = (value, ())
            return lambda ctx: decided
        case Truthy(var=var) | Compare(var=var):
            read, holds, unknown = getter(var), compile_node(node), (None, (var,))
            return lambda ctx: unknown if read(ctx) is MISSING else (holds(ctx), ())
        case Not(item=item):
            inner = _compile(item)

            def negated(ctx: Context) -> Verdict:
                value, names = inner(ctx)
                return (None if value is None else not value), names

            return negated
        case All(items=items) | Any_(items=items):
            return _combined(tuple(_compile(i) for i in items), deciding=isinstance(node, Any_))


def _combined(
    parts: tuple[Callable[[Context], Verdict], ...], *, deciding: bool
) -> Callable[[Context], Verdict]:
    """`and` (deciding False) or `or` (deciding True): the value that decides it."""

    def combined(ctx: Context) -> Verdict:
        names: dict[str, None] = {}  # in order, each once: linear however wide the condition
        for part in parts:
            value, unknown = part(ctx)
            if value is deciding:
                return deciding, ()
            if value is None:
                names.update(dict.fromkeys(unknown))
        return (None, tuple(names)) if names else (not deciding, ())

    return combined
