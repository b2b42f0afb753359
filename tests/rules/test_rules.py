"""Validation rules: the golden cases in spec/cases/rules, compile-time diagnostics,
and the engine's workflow_validate over the same cases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handrail.compiler import compile_text
from handrail.model.workflow import Output
from handrail.rules.closures import compile_criteria, run_rules
from tests.expr.test_conditions import Diagnostics, compared
from tests.helpers.cases import case_files, load_cases
from tests.helpers.wire import wire_validate

RULE_CASES = load_cases("rules")
ERROR_CASES = [c for c in load_cases("compile-errors") if c["kind"] == "criteria"]


def check(case: dict[str, Any]) -> dict[str, Any]:
    """valid, issues and suggestions for one golden case, straight from the rules."""
    report = Diagnostics()
    rules = compile_criteria(case["criteria"], "", report)
    assert report == [], report
    failures = run_rules(rules, Output(case["output"]), case["context"])
    return {
        "valid": not failures,
        "issues": [issue for issue, _ in failures],
        "suggestions": [suggestion for _, suggestion in failures],
    }


def one_step_workflow(criteria: Any) -> Any:
    document = {
        "id": "golden-rules",
        "name": "Golden rules",
        "description": "One step that carries the criteria under test.",
        "version": "1.0.0",
        "steps": [{"id": "check", "title": "Check", "prompt": "Write it.", "validationCriteria": criteria}],
    }
    compiled = compile_text(json.dumps(document))
    assert compiled.errors == (), compiled.errors
    return compiled.workflow


# --- golden cases ----------------------------------------------------------------------


def test_golden_rule_case_names_are_unique() -> None:
    names = [c["name"] for c in RULE_CASES]
    assert len(names) == len(set(names))


@pytest.mark.slow
@pytest.mark.parametrize("case", RULE_CASES, ids=[c["name"] for c in RULE_CASES])
def test_each_golden_output_gets_exactly_its_expected_issues(case: dict[str, Any]) -> None:
    result = check(case)
    assert {"valid": result["valid"], "issues": result["issues"]} == case["expected"]


@pytest.mark.slow
@pytest.mark.parametrize("case", RULE_CASES, ids=[c["name"] for c in RULE_CASES])
def test_workflow_validate_agrees_with_each_golden_case(case: dict[str, Any]) -> None:
    workflow = one_step_workflow(case["criteria"])
    result = wire_validate(workflow, "check", case["output"], case["context"])
    assert {"valid": result["valid"], "issues": result["issues"]} == case["expected"]
    assert bool(result["suggestions"]) is not result["valid"]


@pytest.mark.parametrize("stem", sorted(case_files("rules")))
def test_each_golden_rule_file_matches_its_snapshot(stem: str, snapshot: Any) -> None:
    cases = case_files("rules")[stem]["cases"]
    assert {c["name"]: check(c) for c in cases} == snapshot


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["name"] for c in ERROR_CASES])
def test_each_bad_rule_is_reported_where_it_goes_wrong(case: dict[str, Any]) -> None:
    report = Diagnostics()
    compile_criteria(case["source"], "", report)
    assert compared(report, case["diagnostics"]) == case["diagnostics"]


def test_the_rule_compile_errors_match_their_snapshot(snapshot: Any) -> None:
    results = {}
    for case in ERROR_CASES:
        report = Diagnostics()
        compile_criteria(case["source"], "", report)
        results[case["name"]] = list(report)
    assert results == snapshot


# --- named behaviours --------------------------------------------------------------------


def test_every_failing_rule_gives_a_suggestion() -> None:
    for case in RULE_CASES:
        result = check(case)
        assert len(result["suggestions"]) == len(result["issues"]), case["name"]
        assert all(s.strip() for s in result["suggestions"]), case["name"]


def test_the_output_is_parsed_as_json_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import orjson

    rules = compile_criteria(
        [
            {"type": "schema", "schema": {"type": "object", "required": ["a"]}, "message": "Need a"},
            {"type": "schema", "schema": {"type": "object", "required": ["b"]}, "message": "Need b"},
            {"not": {"type": "schema", "schema": {"type": "array"}, "message": "No list"}},
        ],
        "",
        Diagnostics(),
    )
    calls = []
    real = orjson.loads

    def counting(text: Any) -> Any:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(orjson, "loads", counting)
    failures = run_rules(rules, Output('{"a": 1}'), {})
    assert [issue for issue, _ in failures] == ["Need b: $: must contain ['b'] properties"]
    assert len(calls) == 1


def test_schemas_are_compiled_at_load_time_not_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import fastjsonschema

    rules = compile_criteria(
        [{"type": "schema", "schema": {"type": "object", "required": ["zz-load-time"]}, "message": "m"}],
        "",
        Diagnostics(),
    )

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a schema was compiled while checking an output")

    monkeypatch.setattr(fastjsonschema, "compile", refuse)
    assert run_rules(rules, Output("{}"), {}) == [
        (
            "m: $: must contain ['zz-load-time'] properties",
            "Fix $ so that it must contain ['zz-load-time'] properties.",
        )
    ]


def test_a_skipped_rule_is_not_checked_at_all() -> None:
    rules = compile_criteria(
        [{"type": "schema", "schema": {"type": "object"}, "message": "JSON", "condition": "wantJson"}],
        "",
        Diagnostics(),
    )
    output = Output("not json")
    assert run_rules(rules, output, {"wantJson": False}) == []
    assert output._parsed is False
    assert run_rules(rules, output, {"wantJson": True}) == [
        ("JSON: the output is not JSON", "Reply with one JSON value and nothing else.")
    ]


def test_length_counts_code_points_not_bytes_or_graphemes() -> None:
    rules = compile_criteria([{"type": "length", "max": 1, "message": "One"}], "", Diagnostics())
    assert run_rules(rules, Output("👍"), {}) == []  # four bytes in UTF-8, one code point
    assert run_rules(rules, Output("e\u0301"), {}) == [
        ("One", "The output has 2 characters; cut it to at most 1.")
    ]


def test_a_schema_rule_may_use_numeric_keywords() -> None:
    report = Diagnostics()
    rules = compile_criteria(
        [{"type": "schema", "schema": {"type": "string", "maxLength": 3}, "message": "Short"}], "", report
    )
    assert report == []
    assert run_rules(rules, Output('"abcd"'), {}) == [
        (
            "Short: $: must be shorter than or equal to 3 characters",
            "Fix $ so that it must be shorter than or equal to 3 characters.",
        )
    ]
