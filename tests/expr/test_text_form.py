"""The text form means exactly what the JSON form means: one tree, one compiler.

Random condition trees are rendered to text by a renderer that shares no code with
handrail (tests.expr.test_conditions.text_of) and by handrail's own to_text; every
rendering must give the JSON form's result on random contexts.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.expr import compile_condition
from handrail.expr.ast import All, Any_, Compare, Const, Not, Truthy, to_text
from tests.expr.test_conditions import (
    CONDITION_CASES,
    PROPERTY,
    Diagnostics,
    conditions,
    contexts,
    ignore,
    text_of,
)

pytestmark = pytest.mark.slow

_NAME = r"[A-Za-z_$][A-Za-z0-9_$]*"
_SPELLABLE = re.compile(rf"{_NAME}(?:\.{_NAME})*")
_KEYWORDS = {
    "and",
    "or",
    "not",
    "true",
    "false",
    "null",
    "in",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
}


def spellable(condition: Any) -> bool:
    """Whether the text form can say this JSON condition (names and literals it can spell)."""
    if isinstance(condition, str) or not isinstance(condition, dict):
        return False
    if not condition:
        return True
    for word in ("and", "or"):
        if word in condition:
            return all(spellable(i) for i in condition[word])
    if "not" in condition:
        return spellable(condition["not"])
    name = condition.get("var")
    if not isinstance(name, str) or not _SPELLABLE.fullmatch(name):
        return False
    if any(part in _KEYWORDS for part in name.split(".")):
        return False
    return not any(_has_object(v) for k, v in condition.items() if k != "var")


def _has_object(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(_has_object(v) for v in value)


JSON_CASES = [c for c in CONDITION_CASES if spellable(c["condition"])]


@pytest.mark.parametrize("case", JSON_CASES, ids=[c["name"] for c in JSON_CASES])
def test_each_golden_json_condition_means_the_same_in_text_form(case: dict[str, Any]) -> None:
    for text in (text_of(case["condition"]), text_of(case["condition"], parens=True)):
        report = Diagnostics()
        condition = compile_condition(text, "", report)
        assert report.errors == [], text
        assert condition.holds(case["context"]) is case["expected"], text


@pytest.mark.parametrize("case", CONDITION_CASES, ids=[c["name"] for c in CONDITION_CASES])
def test_each_golden_condition_shown_as_text_reads_back_the_same(case: dict[str, Any]) -> None:
    if not spellable(case["condition"]) and not isinstance(case["condition"], str):
        pytest.skip("the text form cannot spell this name or literal")
    shown = compile_condition(case["condition"], "", ignore).text
    report = Diagnostics()
    condition = compile_condition(shown, "", report)
    assert report.errors == [], shown
    assert condition.holds(case["context"]) is case["expected"], shown


@PROPERTY
@given(conditions(), st.booleans(), st.lists(contexts(), min_size=1, max_size=6))
def test_a_random_condition_means_the_same_in_json_and_text_form(
    source: dict[str, Any], parens: bool, samples: list[dict[str, Any]]
) -> None:
    text = text_of(source, parens)
    report = Diagnostics()
    as_text = compile_condition(text, "", report)
    assert report.errors == [], text
    as_json = compile_condition(source, "", ignore)
    for context in samples:
        assert as_text.holds(context) is as_json.holds(context), (text, context)


@PROPERTY
@given(conditions(), st.lists(contexts(), min_size=1, max_size=6))
def test_a_random_condition_shown_by_to_text_reads_back_the_same(
    source: dict[str, Any], samples: list[dict[str, Any]]
) -> None:
    original = compile_condition(source, "", ignore)
    report = Diagnostics()
    again = compile_condition(original.text, "", report)
    assert report.errors == [], original.text
    for context in samples:
        assert again.holds(context) is original.holds(context), (original.text, context)


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (Compare("x", "equals", "it's"), "x == 'it\\'s'"),
        (Compare("x", "in", (1, None, True)), "x in [1, null, true]"),
        (Not(Any_((Truthy("a"), Truthy("b")))), "not (a or b)"),
        (Not(All((Truthy("a"), Truthy("b")))), "not (a and b)"),
        (Any_((All((Truthy("a"), Truthy("b"))), Truthy("c"))), "a and b or c"),
        (All((Any_((Truthy("a"), Truthy("b"))), Truthy("c"))), "(a or b) and c"),
        (All((Not(Truthy("a")), Truthy("b"))), "not a and b"),
        (Not(Not(Truthy("a"))), "not not a"),
        (All(()), "true"),
        (Any_(()), "false"),
        (Not(Any_(())), "not false"),
        (Const(True), "true"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_to_text_uses_the_fewest_parentheses_precedence_allows(tree: Any, text: str) -> None:
    assert to_text(tree) == text


def test_text_and_json_forms_compile_to_the_same_tree() -> None:
    text = compile_condition("scope == 'large' and (n >= 0.7 or not quick)", "", ignore)
    json = compile_condition(
        {
            "and": [
                {"var": "scope", "equals": "large"},
                {"or": [{"var": "n", "gte": 0.7}, {"not": {"var": "quick"}}]},
            ]
        },
        "",
        ignore,
    )
    assert text.text == json.text == "scope == 'large' and (n >= 0.7 or not quick)"
    assert text.variables == json.variables
    assert text.looks_for == json.looks_for


def test_a_syntax_error_is_located_by_its_offset_in_the_text() -> None:
    report = Diagnostics()
    condition = compile_condition("scope == 'large' && quick", "/steps/0/runCondition", report)
    assert [(d["code"], d["pointer"], d["offset"]) for d in report] == [("H300", "/steps/0/runCondition", 17)]
    assert condition.holds({"scope": "large", "quick": True}) is False


def test_keywords_are_lower_case_only() -> None:
    report = Diagnostics()
    compile_condition("a AND b", "", report)
    assert [d["code"] for d in report] == ["H300"]
