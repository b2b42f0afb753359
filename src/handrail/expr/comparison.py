"""One comparison of a condition (`{"var": ..., "gt": 3}`, `x > 3`) checked and built:
shared by the JSON form (expr/parse.py) and the text form (expr/text_form.py)."""

from __future__ import annotations

from typing import Any

from handrail.expr.ast import NUMERIC, Compare, Const, Expr, freeze
from handrail.model.errors import Reporter, json_kind
from handrail.patterns import PatternError, compile_pattern


def comparison(var: str, op: str, value: Any, at: str, where: str, report: Reporter) -> Expr:
    kind = json_kind(value, array="a list")
    if op in NUMERIC and (not isinstance(value, int | float) or isinstance(value, bool)):
        report.error("H304", f"`{op}` compares numbers, not {kind}", where)
        return Const(False, at)
    if op in ("startsWith", "endsWith", "matches") and not isinstance(value, str):
        report.error("H304", f"`{op}` takes a string, not {kind}", where)
        return Const(False, at)
    if op == "in" and not isinstance(value, list | tuple):
        report.error("H304", f"`in` takes a list of values, not {kind}", where)
        return Const(False, at)
    if op == "matches":
        try:
            compiled = compile_pattern(value)
        except PatternError as exc:
            report.error("H400", f"invalid regex in `matches`: {exc.message}", where)
            return Const(False, at)
        if compiled.fallback is not None:
            report.warning(
                "H406",
                f"the regex of `matches` needs the backtracking engine ({compiled.fallback}): "
                "each search is cut off at a time limit",
                where,
                "without lookaround, backreferences, atomic groups and possessive repeats a regex "
                "runs in linear time on any text",
            )
    return Compare(var, op, freeze(value), at)
