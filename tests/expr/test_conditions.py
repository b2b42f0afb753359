"""Conditions: the golden cases in spec/cases/conditions, compile-time diagnostics,
and properties (evaluation never raises; folding never changes a result).

The hypothesis strategies and the independent text renderer live here too;
test_text_form.py imports them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.expr import compile_condition
from handrail.expr.inline import MAX_NODES, inline_predicate
from handrail.expr.parse import parse_condition
from handrail.expr.semantics import compile_node
from handrail.model.errors import IGNORE, Finding, Reporter
from tests.helpers.cases import case_files, load_cases

CONDITION_CASES = load_cases("conditions")
ERROR_CASES = [c for c in load_cases("compile-errors") if c["kind"] == "condition"]
PROPERTY = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


class Diagnostics(list[dict[str, Any]], Reporter):
    """A reporter that keeps what it is told."""

    def add(self, finding: Finding) -> None:
        self.append(
            {
                "code": finding.code,
                "severity": finding.severity,
                "pointer": finding.pointer,
                "offset": finding.offset,
                "hint": finding.hint,
                "message": finding.message,
            }
        )

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [d for d in self if d["severity"] == "error"]


ignore = IGNORE


def evaluate(case: dict[str, Any]) -> dict[str, Any]:
    """Everything a golden condition case produces: for the snapshots."""
    report = Diagnostics()
    condition = compile_condition(case["condition"], "", report)
    return {
        "holds": condition.holds(case["context"]),
        "text": condition.text,
        "variables": list(condition.variables),
        "constant": condition.constant,
        "diagnostics": [f"{d['code']} {d['severity']} {d['pointer']!r}: {d['message']}" for d in report],
    }


def compared(report: Diagnostics, expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What was reported, trimmed to what a golden case states (hint only where it gives one)."""
    out = []
    for index, found in enumerate(report):
        wanted = expected[index] if index < len(expected) else {}
        row = {k: found[k] for k in ("code", "severity", "pointer")}
        if found["offset"] is not None:
            row["offset"] = found["offset"]
        if "hint" in wanted:
            row["hint"] = found["hint"]
        out.append(row)
    return out


# --- golden cases ----------------------------------------------------------------------


def test_golden_condition_case_names_are_unique() -> None:
    names = [c["name"] for c in CONDITION_CASES]
    assert len(names) == len(set(names))


@pytest.mark.slow
@pytest.mark.parametrize("case", CONDITION_CASES, ids=[c["name"] for c in CONDITION_CASES])
def test_each_golden_condition_gives_its_expected_result(case: dict[str, Any]) -> None:
    report = Diagnostics()
    condition = compile_condition(case["condition"], "", report)
    assert report.errors == []
    assert condition.holds(case["context"]) is case["expected"]


@pytest.mark.parametrize("stem", sorted(case_files("conditions")))
def test_each_golden_condition_file_matches_its_snapshot(stem: str, snapshot: Any) -> None:
    cases = case_files("conditions")[stem]["cases"]
    assert {c["name"]: evaluate(c) for c in cases} == snapshot


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["name"] for c in ERROR_CASES])
def test_each_bad_condition_is_reported_where_it_goes_wrong(case: dict[str, Any]) -> None:
    report = Diagnostics()
    compile_condition(case["source"], "", report)
    assert compared(report, case["diagnostics"]) == case["diagnostics"]


def test_the_condition_compile_errors_match_their_snapshot(snapshot: Any) -> None:
    results = {}
    for case in ERROR_CASES:
        report = Diagnostics()
        compile_condition(case["source"], "", report)
        results[case["name"]] = list(report)
    assert results == snapshot


# --- named behaviours --------------------------------------------------------------------


OPERATORS = {
    "equals": "a",
    "not_equals": "a",
    "gt": 0,
    "gte": 0,
    "lt": 0,
    "lte": 0,
    "contains": "a",
    "startsWith": "a",
    "endsWith": "a",
    "matches": "a",
    "in": ["a"],
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_missing_variable_fails_every_comparison_but_not_equals(op: str) -> None:
    condition = compile_condition({"var": "x", op: OPERATORS[op]}, "", ignore)
    assert condition.holds({}) is (op == "not_equals")


def test_missing_variable_equals_null() -> None:
    assert compile_condition({"var": "x", "equals": None}, "", ignore).holds({}) is True


def test_the_empty_condition_holds_and_is_flagged_as_constant() -> None:
    report = Diagnostics()
    condition = compile_condition({}, "/runCondition", report)
    assert condition.holds({}) is True
    assert condition.constant is True
    assert [(d["code"], d["pointer"]) for d in report] == [("H302", "/runCondition")]


def test_a_condition_reports_the_variables_and_literals_it_reads() -> None:
    condition = compile_condition(
        "scope in ['small', 'large'] and (user.role == 'admin' or not quick)", "", ignore
    )
    assert condition.variables == ("scope", "user.role", "quick")
    assert dict(condition.looks_for) == {
        "scope": ("small", "large"),
        "user.role": ("admin",),
        "quick": (True,),
    }


def test_pointers_are_relative_to_where_the_condition_sits() -> None:
    report = Diagnostics()
    compile_condition({"and": [{"var": "n", "gt": "x"}]}, "/steps/2/runCondition", report)
    assert [d["pointer"] for d in report] == ["/steps/2/runCondition/and/0/gt"]


def test_a_condition_over_an_object_literal_compares_objects_not_pairs() -> None:
    condition = compile_condition({"var": "cfg", "equals": {"a": [1, "x"]}}, "", ignore)
    assert condition.holds({"cfg": {"a": ["1", "X"]}}) is True
    assert condition.holds({"cfg": [["a", [1, "x"]]]}) is False


# --- properties -----------------------------------------------------------------------------

# names the text form can spell; dotted paths and .length included
NAMES = ("a", "b", "flag", "user.role", "items", "items.length", "name.length")
# odd names only the JSON form can spell: evaluation must still never raise
ODD_NAMES = ("items.0", "items.²", "a..b", "length", "user.role.length", "items.99999999999999999999")

SCALARS = st.sampled_from(
    [
        "a",
        "A ",
        "yes",
        "No",
        "1",
        "1.0",
        "0",
        "",
        "true",
        "x y",
        "ab",
        0,
        1,
        1.0,
        -2,
        2.5,
        10,
        True,
        False,
        None,
    ]
)
NUMBERS = st.sampled_from([0, 1, 1.0, -2, 2.5, 10, 0.7]) | st.integers(-20, 20)
STRINGS = st.sampled_from(["a", "A", " b ", "yes", "1", "", "x y", "ab"])
PATTERNS = st.sampled_from(["^a", "b$", "[0-9]", "(?i)yes", ".", "^$", "a|b"])


def comparisons(names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    var = st.sampled_from(names)

    def build(name: str, op: str, value: Any) -> dict[str, Any]:
        return {"var": name, op: value}

    return st.one_of(
        st.builds(build, var, st.sampled_from(["equals", "not_equals", "contains"]), SCALARS),
        st.builds(build, var, st.sampled_from(["equals", "not_equals"]), st.lists(SCALARS, max_size=2)),
        st.builds(build, var, st.sampled_from(["gt", "gte", "lt", "lte"]), NUMBERS),
        st.builds(build, var, st.sampled_from(["startsWith", "endsWith"]), STRINGS),
        st.builds(build, var, st.just("matches"), PATTERNS),
        st.builds(build, var, st.just("in"), st.lists(SCALARS, min_size=1, max_size=3)),
        st.builds(lambda name: {"var": name}, var),
    )


# values that lenient equality relates in non-transitive ways: where folding can go wrong
TRICKY_VALUES: list[Any] = ["1", "1.0", " YES", "true", "A", "a", "0", "no", 1, 1.0, 0, 5, True, False, None]
TRICKY = st.sampled_from(TRICKY_VALUES)


def tricky_comparisons() -> st.SearchStrategy[dict[str, Any]]:
    """Comparisons of one variable, `x`, against values lenient equality relates."""
    equality = st.builds(
        lambda op, value: {"var": "x", op: value}, st.sampled_from(["equals", "not_equals"]), TRICKY
    )
    bounds = st.builds(
        lambda op, value: {"var": "x", op: value},
        st.sampled_from(["gt", "gte", "lt", "lte"]),
        st.integers(3, 6),
    )
    members = st.builds(lambda values: {"var": "x", "in": values}, st.lists(TRICKY, max_size=2))
    leaf = equality | equality | bounds | members | st.just({"var": "x"})
    # and/or of a few leaves side by side: what contradiction and tautology checks look at
    group = st.builds(
        lambda word, items: {word: items},
        st.sampled_from(["and", "or"]),
        st.lists(leaf, min_size=2, max_size=3),
    )
    return leaf | group | group


def conditions(
    names: tuple[str, ...] = NAMES, leaves: st.SearchStrategy[dict[str, Any]] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Random condition trees in the JSON form."""
    leaves = leaves if leaves is not None else comparisons(names) | st.just({})
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(lambda items: {"and": items}, st.lists(inner, max_size=3)),
            st.builds(lambda items: {"or": items}, st.lists(inner, max_size=3)),
            st.builds(lambda item: {"not": item}, inner),
        ),
        max_leaves=8,
    )


def json_values() -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (big integers and unusual strings included)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
        | SCALARS
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
        max_leaves=12,
    )


def contexts(values: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Contexts that hold (some of) the variables the conditions read."""
    values = values if values is not None else SCALARS | st.lists(SCALARS, max_size=3)
    nested = values | st.fixed_dictionaries({}, optional={"role": values, "length": values})
    return st.fixed_dictionaries(
        {},
        optional={
            "a": values,
            "b": values,
            "flag": values,
            "user": nested,
            "items": st.lists(values, max_size=3) | values,
            "name": st.text(max_size=4) | values,
        },
    )


def text_of(condition: Any, parens: bool = False) -> str:
    """The JSON form rendered as text, with the fewest parentheses precedence allows
    (or a redundant pair around every group when `parens`)."""
    return _render(condition, 0, parens)


_OR, _AND, _NOT, _ATOM = 1, 2, 3, 4
_SYMBOLS = {
    "equals": "==",
    "not_equals": "!=",
    "gt": ">",
    "gte": ">=",
    "lt": "<",
    "lte": "<=",
    "contains": "contains",
    "startsWith": "startsWith",
    "endsWith": "endsWith",
    "matches": "matches",
    "in": "in",
}


def _render(node: dict[str, Any], need: int, parens: bool) -> str:
    if not node:
        return "true"
    if "and" in node or "or" in node:
        word = "and" if "and" in node else "or"
        items = node[word]
        if not items:
            return "true" if word == "and" else "false"
        level = _AND if word == "and" else _OR
        text = f" {word} ".join(_render(i, level + 1 if word == "and" else level, parens) for i in items)
        if len(items) == 1:
            text = _render(items[0], need, parens)
            return f"({text})" if parens else text
        return f"({text})" if parens or level < need else text
    if "not" in node:
        text = "not " + _render(node["not"], _NOT, parens)
        return f"({text})" if parens or need > _NOT else text
    name = str(node["var"])
    ops = [k for k in node if k != "var"]
    if not ops:
        return name
    op = ops[0]
    return f"{name} {_SYMBOLS[op]} {_literal(node[op])}"


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


@pytest.mark.slow
@PROPERTY
@given(conditions(NAMES + ODD_NAMES), st.lists(contexts(json_values()), min_size=1, max_size=6))
def test_evaluation_never_raises_and_one_function_means_what_the_closures_mean(
    source: dict[str, Any], samples: list[dict[str, Any]]
) -> None:
    condition = compile_condition(source, "", ignore)
    tree = parse_condition(source, "", ignore)
    inline, closures = inline_predicate(tree), compile_node(tree)  # unfolded: both of them
    assert inline is not None
    for context in [*samples, *WITNESSES]:
        assert condition.holds(context) in (True, False)
        assert inline(context) is closures(context), context


@pytest.mark.slow
@PROPERTY
@given(conditions(NAMES + ODD_NAMES), json_values())
def test_evaluation_never_raises_whatever_the_context_is(source: dict[str, Any], context: Any) -> None:
    condition = compile_condition(source, "", ignore)
    assert condition.holds(context if isinstance(context, dict) else {"a": context}) in (True, False)


# every value x can take that matters to the tricky comparisons, and x missing
WITNESSES: list[dict[str, Any]] = [
    {},
    *({"x": v} for v in TRICKY_VALUES),
    {"x": 4},
    {"x": "4"},
    {"x": 5.5},
    {"x": []},
]


@pytest.mark.slow
@PROPERTY
@given(conditions(leaves=tricky_comparisons()))
def test_folding_never_changes_what_a_condition_means(source: dict[str, Any]) -> None:
    folded = compile_condition(source, "", ignore)
    unfolded = compile_node(parse_condition(source, "", ignore))
    for context in WITNESSES:
        assert folded.holds(context) is unfolded(context), context


@pytest.mark.slow
@PROPERTY
@given(conditions(("a", "b")), st.lists(contexts(), min_size=1, max_size=6))
def test_folding_never_changes_a_result_on_random_contexts(
    source: dict[str, Any], samples: list[dict[str, Any]]
) -> None:
    folded = compile_condition(source, "", ignore)
    unfolded = compile_node(parse_condition(source, "", ignore))
    for context in samples:
        assert folded.holds(context) is unfolded(context), context


@pytest.mark.slow
@PROPERTY
@given(conditions(leaves=tricky_comparisons()))
def test_a_condition_flagged_constant_gives_that_constant_everywhere(source: dict[str, Any]) -> None:
    condition = compile_condition(source, "", ignore)
    if condition.constant is not None:
        unfolded = compile_node(parse_condition(source, "", ignore))
        for context in WITNESSES:
            assert unfolded(context) is condition.constant, context


def test_a_condition_too_large_to_write_out_keeps_its_closures() -> None:
    source = {"or": [{"var": f"v{i}", "equals": i} for i in range(MAX_NODES)]}
    assert inline_predicate(parse_condition(source, "", ignore)) is None
    assert compile_condition(source, "", ignore).holds({"v3": "3"})
