"""workflow_validate: a step's compiled rules, run against an output and a context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.engine.results import PASSED, Verdict
from handrail.model.errors import InvalidParams, StepNotFound
from handrail.model.workflow import Output, Step, Workflow
from handrail.rules.closures import run_rules

GENERIC_SUGGESTION = "Review the step's validation criteria and revise the output."


def validate_output(
    workflow: Workflow, step_id: str, output: str, context: Mapping[str, Any] | None = None
) -> Verdict:
    """Run the step's rules on `output` (a step without rules asks for a non-empty one)."""
    step = workflow.nodes.get(step_id)
    if step is None:
        raise StepNotFound(data={"stepId": step_id, "workflowId": workflow.id})
    if not isinstance(step, Step):
        raise StepNotFound(
            f"`{step_id}` is a loop; validate the steps of its body",
            {"stepId": step_id, "workflowId": workflow.id},
        )
    if not isinstance(output, str):
        raise InvalidParams(data={"details": "output must be a string"})
    if not step.rules:
        return PASSED if output.strip() != "" else _EMPTY
    failures = run_rules(step.rules, Output(output), context or {})
    if not failures:
        return PASSED
    suggestions = tuple(dict.fromkeys([s for _, s in failures if s])) or (GENERIC_SUGGESTION,)
    return Verdict(False, tuple([issue for issue, _ in failures]), suggestions)


_EMPTY = Verdict(False, ("The output is empty.",), ("Describe what you did in this step.",))
