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

from handrail.expr.ast import All, Any_, Compare, Const, Node, Not, Truthy
from handrail.expr.semantics import MISSING, compile_node, getter
from handrail.model import Context

# (True/False when decided, None when unknown; the unset variables that could decide it)
Verdict = tuple[bool | None, tuple[str, ...]]


def compile_unknowns(node: Node) -> Callable[[Context], tuple[str, ...]]:
    """Context -> the unset variables whose values could change the outcome, in order."""
    verdict = _compile(node)
    return lambda ctx: verdict(ctx)[1]


def _compile(node: Node) -> Callable[[Context], Verdict]:
    if isinstance(node, Const):
        decided: Verdict = (node.value, ())
        return lambda ctx: decided
    if isinstance(node, Truthy | Compare):
        read, holds, unknown = getter(node.var), compile_node(node), (None, (node.var,))
        return lambda ctx: unknown if read(ctx) is MISSING else (holds(ctx), ())
    if isinstance(node, Not):
        inner = _compile(node.item)

        def negated(ctx: Context) -> Verdict:
            value, names = inner(ctx)
            return (None if value is None else not value), names

        return negated
    parts = tuple(_compile(i) for i in node.items)
    deciding = isinstance(node, Any_)  # the value that decides: true in `or`, false in `and`
    assert isinstance(node, All | Any_)

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
