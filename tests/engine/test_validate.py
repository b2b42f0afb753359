"""workflow_validate, called as a library: a step's rules against an output and a context."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from handrail.compiler import compile_text
from handrail.engine.validate import GENERIC_SUGGESTION
from handrail.model.errors import InvalidParams, StepNotFound
from handrail.model.workflow import Rule, Step, Workflow
from tests.helpers.wire import wire_validate


def build(steps: list[dict[str, Any]]) -> Workflow:
    document = {"id": "unit-flow", "name": "U", "description": "d", "version": "1.0.0", "steps": steps}
    compiled = compile_text(json.dumps(document))
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    return compiled.workflow


CONTAINS = {"type": "contains", "value": "Done", "message": "Say Done"}
LONG = {"type": "length", "min": 10, "message": "Write more"}
SECURITY = {
    "type": "contains",
    "value": "SECURITY",
    "message": "Add a SECURITY note",
    "condition": {"var": "sensitive", "equals": True},
}
WORKFLOW = build(
    [
        {"id": "plain", "title": "Plain", "prompt": "p"},
        {"id": "ruled", "title": "Ruled", "prompt": "p", "validationCriteria": [CONTAINS, LONG, SECURITY]},
        {
            "id": "each-item",
            "type": "loop",
            "title": "Each",
            "loop": {"type": "forEach", "items": "xs", "maxIterations": 3},
            "body": [{"id": "in-body", "title": "In", "prompt": "p", "validationCriteria": [CONTAINS]}],
        },
        {
            "id": "by-name",
            "type": "loop",
            "title": "By name",
            "loop": {"type": "for", "count": 2, "maxIterations": 2},
            "body": "referenced",
        },
        {"id": "referenced", "title": "Referenced", "prompt": "p", "validationCriteria": [LONG]},
    ]
)


def test_a_step_without_rules_accepts_any_output_that_is_not_blank() -> None:
    assert wire_validate(WORKFLOW, "plain", "x") == {"valid": True, "issues": [], "suggestions": []}


@pytest.mark.parametrize("output", ["", "   ", "\n\t"])
def test_a_step_without_rules_refuses_blank_output(output: str) -> None:
    result = wire_validate(WORKFLOW, "plain", output)
    assert result["valid"] is False
    assert result["issues"] == ["The output is empty."]
    assert result["suggestions"]


def test_an_output_meeting_every_rule_is_valid() -> None:
    assert wire_validate(WORKFLOW, "ruled", "All Done, and then some.")["valid"] is True


def test_every_failing_rule_is_reported_with_its_message_and_a_suggestion() -> None:
    result = wire_validate(WORKFLOW, "ruled", "nope")
    assert result["valid"] is False
    assert result["issues"] == ["Say Done", "Write more"]
    assert len(result["suggestions"]) == 2


def test_a_conditioned_rule_applies_only_when_its_condition_holds_in_the_context_sent() -> None:
    output = "All Done, and then some."
    assert wire_validate(WORKFLOW, "ruled", output, {"sensitive": False})["valid"] is True
    assert wire_validate(WORKFLOW, "ruled", output)["valid"] is True
    result = wire_validate(WORKFLOW, "ruled", output, {"sensitive": True})
    assert result["issues"] == ["Add a SECURITY note"]


def test_validate_works_for_inline_loop_body_steps() -> None:
    assert wire_validate(WORKFLOW, "in-body", "Done")["valid"] is True
    assert wire_validate(WORKFLOW, "in-body", "not yet")["issues"] == ["Say Done"]


def test_validate_works_for_steps_named_as_a_loop_body() -> None:
    assert wire_validate(WORKFLOW, "referenced", "short")["issues"] == ["Write more"]


def test_an_unknown_step_is_step_not_found() -> None:
    with pytest.raises(StepNotFound) as caught:
        wire_validate(WORKFLOW, "ghost", "x")
    assert caught.value.code == -32003
    assert caught.value.data == {"stepId": "ghost", "workflowId": "unit-flow"}


def test_a_loop_id_is_step_not_found_with_a_pointer_to_its_body() -> None:
    with pytest.raises(StepNotFound, match="`each-item` is a loop; validate the steps of its body"):
        wire_validate(WORKFLOW, "each-item", "x")


def test_an_output_that_is_not_a_string_is_invalid_params() -> None:
    with pytest.raises(InvalidParams):
        wire_validate(WORKFLOW, "plain", 42)  # type: ignore[arg-type]


def test_a_schema_rule_says_where_the_output_breaks_the_schema() -> None:
    schema_rule = {"type": "schema", "schema": {"type": "object"}, "message": "Send a JSON object"}
    workflow = build([{"id": "json-out", "title": "J", "prompt": "p", "validationCriteria": [schema_rule]}])
    assert wire_validate(workflow, "json-out", "not json")["issues"] == [
        "Send a JSON object: the output is not JSON"
    ]
    assert wire_validate(workflow, "json-out", "[1]")["issues"][0].startswith("Send a JSON object: ")
    assert wire_validate(workflow, "json-out", '{"a": 1}')["valid"] is True


def test_the_generic_suggestion_is_used_when_no_failing_rule_offers_one() -> None:
    silent = Rule(kind="contains", description="silent", check=lambda output, context: [("It failed", "")])
    step = WORKFLOW.nodes["plain"]
    assert isinstance(step, Step)
    workflow = replace(WORKFLOW, nodes={**WORKFLOW.nodes, "plain": replace(step, rules=(silent,))})
    result = wire_validate(workflow, "plain", "anything")
    assert result == {"valid": False, "issues": ["It failed"], "suggestions": [GENERIC_SUGGESTION]}
