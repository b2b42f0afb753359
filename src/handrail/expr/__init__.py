"""Conditions: source (JSON or text) -> tree -> folded tree -> closure."""

from __future__ import annotations

from typing import Any

from handrail.errors import IGNORE, Reporter
from handrail.expr.ast import Const, Node, literals_by_variable, to_text, variables
from handrail.expr.fold import fold
from handrail.expr.parse import did_you_mean, parse_condition
from handrail.expr.semantics import MISSING, compile_node, lenient_equals, lookup, truthy
from handrail.expr.unknowns import compile_unknowns
from handrail.model import Condition

__all__ = [
    "MISSING",
    "Reporter",
    "compile_condition",
    "condition_from_tree",
    "did_you_mean",
    "lenient_equals",
    "lookup",
    "truthy",
]


def compile_condition(source: Any, at: str, report: Reporter, *, what: str = "condition") -> Condition:
    watch = report.watch()
    tree = parse_condition(source, at, watch)
    # a condition that failed to parse is already reported; its stand-in is not folded
    return condition_from_tree(tree, at, IGNORE if watch.failed else report, what=what)


def condition_from_tree(tree: Node, at: str, report: Reporter, *, what: str = "condition") -> Condition:
    warned = False

    def warn(reason: str, always: bool, node: Node) -> None:
        nonlocal warned
        warned = True
        verdict = "always holds" if always else "never holds"
        report.warning(
            "H302" if always else "H303",
            f"this {what} {verdict}: {reason}",
            node.at or at,
        )

    folded = fold(tree, warn)
    constant = folded.value if isinstance(folded, Const) else None
    if constant is not None and not warned:
        verdict = "always holds" if constant else "never holds"
        report.warning(
            "H302" if constant else "H303",
            f"this {what} {verdict}: it reads no variable that can change it",
            at,
            "remove it" if constant else None,
        )
    names = variables(tree)
    literals = literals_by_variable(tree)
    return Condition(
        text=to_text(tree),
        holds=compile_node(folded),
        variables=tuple(names),
        looks_for=tuple((n, tuple(literals.get(n, ()))) for n in names),
        constant=constant,
        undecided=compile_unknowns(folded),
    )
