"""Condition source (JSON object or text) -> condition tree, reporting every problem.

The text form is parsed by lark from grammar/condition.lark; the parser is built
once per process, on first use, and the grammar's parse table is cached on disk.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from handrail._resources import resource
from handrail.expr.ast import (
    COMPARISONS,
    All,
    Any_,
    Const,
    Expr,
    Not,
    Truthy,
)
from handrail.expr.comparison import comparison
from handrail.model.errors import Reporter

if TYPE_CHECKING:
    from lark import Lark

COMPOSITES = ("and", "or", "not")
KNOWN_KEYS = ("var", *COMPARISONS, *COMPOSITES)


def did_you_mean(word: str, options: tuple[str, ...] | list[str]) -> str | None:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        lowered = {o.lower(): o for o in options}
        if word.lower() in lowered:
            close = [lowered[word.lower()]]
    return f"did you mean `{close[0]}`?" if close else None


def parse_condition(source: Any, at: str, report: Reporter) -> Expr:
    if isinstance(source, str):
        return parse_text(source, at, report)
    if isinstance(source, Mapping):
        return _parse_object(source, at, report)
    report.error("H301", "a condition is an object or a text expression", at)
    return Const(False, at)


def _parse_object(obj: Mapping[str, Any], at: str, report: Reporter) -> Expr:
    ok = True
    for key in obj:
        if key not in KNOWN_KEYS:
            ok = False
            report.error(
                "H301",
                f"unknown condition operator `{key}`",
                f"{at}/{_escape(key)}",
                did_you_mean(key, KNOWN_KEYS),
            )
    composites = [k for k in COMPOSITES if k in obj]
    comparisons = [k for k in COMPARISONS if k in obj]
    if composites and ("var" in obj or comparisons or len(composites) > 1):
        report.error(
            "H305",
            f"a condition holds one operator, this one mixes {', '.join(sorted(obj))}",
            at,
            'wrap the parts in {"and": [...]}',
        )
        return Const(False, at)
    if not ok:
        return Const(False, at)
    if composites:
        key = composites[0]
        value = obj[key]
        if key == "not":
            return Not(parse_condition(value, f"{at}/not", report), at)
        if not isinstance(value, list):
            report.error("H301", f"`{key}` takes a list of conditions", f"{at}/{key}")
            return Const(False, at)
        items = tuple(parse_condition(v, f"{at}/{key}/{i}", report) for i, v in enumerate(value))
        return All(items, at) if key == "and" else Any_(items, at)
    if "var" not in obj:
        if comparisons:
            report.error(
                "H306",
                f"`{comparisons[0]}` compares a variable, but the condition names none",
                at,
                'add "var": "<context variable>"',
            )
            return Const(False, at)
        return Const(True, at)  # the empty condition holds
    var = obj["var"]
    if not isinstance(var, str) or not var:
        report.error("H301", "`var` names a context variable (a non-empty string)", f"{at}/var")
        return Const(False, at)
    if not comparisons:
        return Truthy(var, at)
    if len(comparisons) > 1:
        report.error(
            "H305",
            f"a condition holds one comparison, this one has {', '.join(comparisons)}",
            at,
            'split it into {"and": [...]}',
        )
        return Const(False, at)
    op = comparisons[0]
    return comparison(var, op, obj[op], at, f"{at}/{op}", report)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@cache
def _parser() -> Lark:
    from lark import Lark  # lazy: lark loads with the first condition parsed

    grammar = resource("grammar", "condition.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", maybe_placeholders=False, cache=True)


def parse_text(text: str, at: str, report: Reporter) -> Expr:
    # lazy: lark loads with the first condition parsed
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        offset = exc.pos_in_stream if exc.pos_in_stream is not None else len(text)
        if isinstance(exc, UnexpectedEOF):
            message = "the condition ends too early"
        elif isinstance(exc, UnexpectedCharacters):
            message = f"unexpected character {text[offset]!r}"
        else:
            token = getattr(exc, "token", None)
            if token is None or token.type == "$END":
                message, offset = "the condition ends too early", len(text)
            else:
                message = f"unexpected {str(token)!r}"
                offset = token.start_pos if token.start_pos is not None else offset
        expected = sorted(_readable(t) for t in (getattr(exc, "expected", None) or ()))
        hint = f"expected {', '.join(expected[:6])}" if expected else None
        report.error("H300", f"condition syntax: {message}", at, hint, offset)
        return Const(False, at)

    from handrail.expr.text_form import ToCondition  # imports lark: on first use of the text form

    return ToCondition(at, report).transform(tree)


_TERMINALS = {
    "COMPARATOR": "a comparison (==, !=, <, <=, >, >=, in, contains, ...)",
    "NAME": "a variable name",
    "STRING": "a string",
    "NUMBER": "a number",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "DOT": "'.'",
    "_AND": "and",
    "_OR": "or",
    "_NOT": "not",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "$END": "the end",
}


def _readable(terminal: str) -> str:
    return _TERMINALS.get(terminal, terminal)
