"""`{{name}}` templates, filled from the context; unset names render visibly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handrail.compiler import compile_text
from handrail.engine.templates import render
from tests.helpers.wire import wire_next

CONTEXT = {
    "name": "Ada",
    "user": {"name": "Grace", "roles": ["admin", "dev"]},
    "count": 3,
    "ratio": 0.5,
    "flag": True,
    "nothing": None,
    "tags": ["a", "b"],
    "title": "{{name}}",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello {{name}}", "Hello Ada"),
        ("{{user.name}}", "Grace"),
        ("{{ user.name }}", "Grace"),
        ("{{user.roles.1}}", "dev"),
        ("{{tags.length}} tags", "2 tags"),
        ("{{count}} / {{ratio}}", "3 / 0.5"),
        ("{{flag}}", "true"),
        ("{{nothing}}", "null"),
        ("{{tags}}", '["a", "b"]'),
        ("{{user}}", '{"name": "Grace", "roles": ["admin", "dev"]}'),
        ("{{missing}}", "[unset: missing]"),
        ("{{user.missing.deeper}}", "[unset: user.missing.deeper]"),
        ("{{tags.9}}", "[unset: tags.9]"),
        ("{{name.length}}", "3"),
    ],
)
def test_a_template_is_filled_from_the_context(text: str, expected: str) -> None:
    assert render(text, CONTEXT) == expected


def test_an_expression_that_is_no_plain_name_is_left_as_written() -> None:
    assert (
        render("Step {{ index + 1 }} of {{total-1}}", {"index": 1}) == "Step {{ index + 1 }} of {{total-1}}"
    )


def test_text_without_templates_is_returned_unchanged() -> None:
    text = "No braces here, just { one } and }} stray."
    assert render(text, CONTEXT) is text


def test_a_filled_value_is_not_filled_again() -> None:
    assert render("{{title}}", CONTEXT) == "{{name}}"


def test_every_occurrence_is_filled() -> None:
    assert render("{{name}}, {{name}} and {{unknown}} {{unknown}}", CONTEXT) == (
        "Ada, Ada and [unset: unknown] [unset: unknown]"
    )


def _workflow(steps: list[dict[str, Any]]) -> Any:
    document = {"id": "tmpl-flow", "name": "T", "description": "d", "version": "1.0.0", "steps": steps}
    compiled = compile_text(json.dumps(document))
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    return compiled.workflow


def test_step_title_prompt_role_and_guidance_are_all_filled() -> None:
    workflow = _workflow(
        [
            {
                "id": "only",
                "title": "For {{name}}",
                "prompt": "Help {{user.name}}",
                "agentRole": "You serve {{name}}",
                "guidance": ["Mind {{missing}}"],
            }
        ]
    )
    result = wire_next(workflow, [], CONTEXT)
    assert result["step"]["title"] == "For Ada"
    assert result["step"]["prompt"] == "Help Grace"
    assert result["step"]["agentRole"] == "You serve Ada"
    assert result["step"]["guidance"] == ["Mind [unset: missing]"]
    assert (
        "You serve Ada\n\n## For Ada\nHelp Grace\n\nGuidance:\n- Mind [unset: missing]"
        in result["guidance"]["prompt"]
    )


def test_templates_inside_loops_see_the_loop_variables_over_the_context() -> None:
    loop = {
        "id": "each-user",
        "type": "loop",
        "title": "Users",
        "loop": {"type": "forEach", "items": "people", "itemVar": "person", "maxIterations": 3},
        "body": [
            {
                "id": "greet",
                "title": "Greet {{person.name}}",
                "prompt": "#{{currentIteration}} {{person.name}} ({{name}})",
            }
        ],
    }
    result = wire_next(_workflow([loop]), [], {**CONTEXT, "people": [{"name": "Lin"}]})
    assert result["step"]["title"] == "Greet Lin"
    assert result["step"]["prompt"] == "#1 Lin (Ada)"


def test_a_loop_variable_shadows_a_context_variable_of_the_same_name() -> None:
    loop = {
        "id": "each-name",
        "type": "loop",
        "title": "Names",
        "loop": {"type": "forEach", "items": "names", "itemVar": "name", "maxIterations": 3},
        "body": [{"id": "say", "title": "Say", "prompt": "{{name}}"}],
    }
    result = wire_next(_workflow([loop]), [], {"name": "outer", "names": ["inner"]})
    assert result["step"]["prompt"] == "inner"
