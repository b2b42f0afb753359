"""The text form's lark tree -> condition tree: a lark `Transformer`, one method per
rule of grammar/condition.lark. Imported on first use of the text form (it imports lark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lark import Transformer

from handrail.expr.ast import TEXT_OPERATORS, All, Any_, Const, Expr, Not, Truthy
from handrail.expr.comparison import comparison
from handrail.model.errors import Reporter


class ToCondition(Transformer[Any, Expr]):
    """Builds the condition tree bottom-up; every node is located at the condition's `at`."""

    def __init__(self, at: str, report: Reporter) -> None:
        super().__init__()
        self.at = at
        self.report = report

    def or_expr(self, items: Sequence[Expr]) -> Expr:
        return Any_(tuple(items), self.at)

    def and_expr(self, items: Sequence[Expr]) -> Expr:
        return All(tuple(items), self.at)

    def negation(self, items: Sequence[Expr]) -> Expr:
        return Not(items[0], self.at)

    def truthy(self, items: Sequence[str]) -> Expr:
        return Truthy(items[0], self.at)

    def constant(self, items: Sequence[Any]) -> Expr:
        value = items[0]
        if isinstance(value, bool):
            return Const(value, self.at)
        self.report.error("H304", f"{value!r} alone is not a condition", self.at)
        return Const(False, self.at)

    def comparison(self, items: Sequence[Any]) -> Expr:
        name, op, value = items
        at = self.at
        return comparison(name, TEXT_OPERATORS[str(op)], value, at, at, self.report)

    def name(self, items: Sequence[Any]) -> str:
        return ".".join(str(t) for t in items)

    def string(self, items: Sequence[Any]) -> str:
        return unquote(str(items[0]))

    def number(self, items: Sequence[Any]) -> int | float:
        spelled = str(items[0])
        if len(spelled) <= 4000 and not any(c in spelled for c in ".eE"):
            return int(spelled)  # exact, as the JSON form reads it
        number = float(spelled)
        return int(number) if number.is_integer() and "." not in spelled else number

    def true(self, items: Sequence[Any]) -> bool:
        return True

    def false(self, items: Sequence[Any]) -> bool:
        return False

    def null(self, items: Sequence[Any]) -> None:
        return None

    def list(self, items: Sequence[Any]) -> Any:
        return [*items]


def unquote(token: str) -> str:
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
