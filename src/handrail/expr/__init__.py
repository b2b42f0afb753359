"""Conditions: source (JSON or text) -> tree -> folded tree -> one function (inline.py),
or closures (semantics.py) for a tree too large to write out."""

from __future__ import annotations

from typing import Any

from handrail.expr.ast import Const, Expr, literals_by_variable, to_text, variables
from handrail.expr.fold import fold
from handrail.expr.inline import inline_predicate
from handrail.expr.parse import did_you_mean, parse_condition
from handrail.expr.semantics import MISSING, compile_node, lenient_equals, lookup, truthy
from handrail.expr.unknowns import compile_unknowns
from handrail.model.errors import IGNORE, Finding, Findings, Reporter
from handrail.model.workflow import Condition

__all__ = [
    "MISSING",
    "ParsedConditions",
    "Reporter",
    "compile_condition",
    "condition_from_tree",
    "did_you_mean",
    "lenient_equals",
    "lookup",
    "truthy",
]


class ParsedConditions:
    """Condition trees parsed once per compile: the builder reads which variables a
    condition tests before it compiles the condition, and both find the tree here, by
    the condition's place (a tree records its place, so a different place parses anew)."""

    __slots__ = ("_trees",)

    def __init__(self) -> None:
        self._trees: dict[str, tuple[Any, Expr, tuple[Finding, ...]]] = {}

    def parse(self, source: Any, at: str) -> tuple[Expr, tuple[Finding, ...]]:
        """The tree, and what parsing it found (not reported: compiling reports it)."""
        hit = self._trees.get(at)
        if hit is None or hit[0] is not source:
            found = Findings()
            hit = (source, parse_condition(source, at, found), tuple(found.findings))
            self._trees[at] = hit
        return hit[1], hit[2]


def compile_condition(
    source: Any,
    at: str,
    report: Reporter,
    *,
    what: str = "condition",
    parsed: ParsedConditions | None = None,
) -> Condition:
    tree, findings = (parsed or ParsedConditions()).parse(source, at)
    for finding in findings:
        report.add(finding)
    failed = any(f.severity == "error" for f in findings)
    # a condition that failed to parse is already reported; its stand-in is not folded
    return condition_from_tree(tree, at, IGNORE if failed else report, what=what)


def condition_from_tree(tree: Expr, at: str, report: Reporter, *, what: str = "condition") -> Condition:
    warned = False

    def warn(reason: str, always: bool, node: Expr) -> None:
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
        holds=inline_predicate(folded) or compile_node(folded),
        variables=tuple(names),
        looks_for=tuple((n, tuple(literals.get(n, ()))) for n in names),
        constant=constant,
        undecided=compile_unknowns(folded),
    )
