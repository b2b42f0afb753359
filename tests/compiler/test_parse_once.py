"""Each condition of a workflow is parsed once per compile: the compiler reads which
variables a condition tests before it compiles it, and both use the same tree."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import handrail.expr
from handrail.compiler import compile_text

WORKFLOW: dict[str, Any] = {
    "id": "conditions-everywhere",
    "name": "Conditions everywhere",
    "description": "A condition in every place a workflow can hold one.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "plan",
            "title": "Plan",
            "prompt": "Plan; set `scope` and `docs`.",
            "runCondition": "scope == 'large'",
            "requireConfirmation": {"var": "risky", "equals": True},
            "validationCriteria": [
                {"type": "contains", "value": "plan", "message": "A plan", "condition": "docs"},
                {
                    "or": [
                        {"type": "contains", "value": "a", "message": "A", "condition": {"var": "risky"}},
                        {"type": "contains", "value": "b", "message": "B"},
                    ]
                },
            ],
            "checks": [
                {"type": "file", "path": "docs/*.md", "message": "Documented", "condition": "docs == true"}
            ],
        },
        {
            "id": "again",
            "type": "loop",
            "title": "Again",
            "loop": {"type": "while", "condition": "more", "maxIterations": 3},
            "body": "work",
        },
        {"id": "work", "title": "Work", "prompt": "Work; set `more` and `risky`."},
    ],
}


def test_every_condition_of_a_workflow_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: Counter[str] = Counter()
    parse = handrail.expr.parse_condition

    def counting(source: Any, at: str, report: Any) -> Any:
        parsed[at] += 1
        return parse(source, at, report)

    monkeypatch.setattr(handrail.expr, "parse_condition", counting)
    result = compile_text(json.dumps(WORKFLOW), "conditions.json")
    assert result.workflow is not None, [d.render() for d in result.diagnostics]
    assert parsed == {
        "/steps/0/runCondition": 1,
        "/steps/0/requireConfirmation": 1,
        "/steps/0/validationCriteria/0/condition": 1,
        "/steps/0/validationCriteria/1/or/0/condition": 1,
        "/steps/0/checks/0/condition": 1,
        "/steps/1/loop/condition": 1,
    }
