"""A scripted agent: follows workflow_next to the end, sending back exactly what it
was told (completedSteps, state) and setting the context variables the engine
says are missing. Works in-process or through any transport.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from handrail.model.workflow import Loop, Workflow

NextCall = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Walk:
    steps: list[str] = field(default_factory=list)  # step ids in the order they were offered
    context: dict[str, Any] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0


def choose(name: str, wanted: list[Any], workflow: Workflow) -> Any:
    """A value for a missing context variable: a list for forEach items, a count for
    for-loops, else the first value a condition looks for."""
    loops = [n for n in workflow.nodes.values() if isinstance(n, Loop)]
    if any(loop.items == name for loop in loops):
        return ["first", "second"]
    if any(loop.count == name for loop in loops):
        return 2
    return wanted[0] if wanted else True


def _set(context: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    target = context
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value


def walk(
    call_next: NextCall,
    workflow: Workflow,
    *,
    context: dict[str, Any] | None = None,
    max_calls: int = 5000,
    on_step: Callable[[dict[str, Any], Walk], None] | None = None,
) -> Walk:
    record = Walk(context=dict(context or {}))
    completed: list[str] = []
    state: dict[str, Any] | None = None
    while record.calls < max_calls:
        params: dict[str, Any] = {
            "workflowId": workflow.id,
            "completedSteps": completed,
            "context": record.context,
        }
        if state is not None:
            params["state"] = state
        result = call_next(params)
        record.calls += 1
        record.results.append(result)
        if result["isComplete"]:
            return record
        step = result["step"]
        if step is None:
            missing = result["guidance"].get("missingContext") or {}
            assert missing, f"blocked without naming what is missing: {result['guidance']}"
            for name, wanted in missing.items():
                _set(record.context, name, choose(name, wanted, workflow))
            continue
        record.steps.append(step["id"])
        if on_step is not None:
            on_step(result, record)
        completed = [*result["completedSteps"], step["id"]]
        state = result["state"]
    raise AssertionError(f"{workflow.id}: not complete after {max_calls} calls")


def engine_call(workflow: Workflow) -> NextCall:
    from handrail.engine import next_step
    from handrail.engine.result_json import next_json

    def call(params: dict[str, Any]) -> dict[str, Any]:
        completed, state = params["completedSteps"], params.get("state")
        result = next_step(workflow, completed, params.get("context"), state=state)
        return next_json(result)  # what a client reads: the walk keeps to the wire contract

    return call
