"""What an agent is shown for a step: the step itself and the composed guidance."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from handrail.engine.state import Frame
from handrail.engine.templates import render
from handrail.model import Condition, Context, Step, Workflow


def confirmation(value: bool | Condition, scope: Context) -> bool:
    return value if isinstance(value, bool) else value.holds(scope)


def step_view(step: Step, scope: Context) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": step.id,
        "title": render(step.title, scope),
        "prompt": render(step.prompt, scope),
    }
    if step.agent_role:
        view["agentRole"] = render(step.agent_role, scope)
    if step.guidance:
        view["guidance"] = [render(g, scope) for g in step.guidance]
    view["askForFiles"] = step.ask_for_files
    view["requireConfirmation"] = confirmation(step.confirmation, scope)
    if step.run_condition is not None:
        view["runCondition"] = step.run_condition.text
    if step.function_references:
        view["functionReferences"] = list(step.function_references)
    if step.checks:  # information only: checks run in runs, never in this stateless call
        shown = checks_text(step, scope)
        if shown:
            view["checks"] = shown
    return view


def checks_text(step: Step, scope: Context) -> list[str]:
    """The step's checks that apply in `scope`, in words."""
    return [
        f"{c.message} ({c.description})"
        for c in step.checks
        if c.condition is None or c.condition.holds(scope)
    ]


def compose(
    workflow: Workflow,
    step: Step,
    view: Mapping[str, Any],
    scope: Context,
    loops: Sequence[tuple[Frame, Mapping[str, Any]]],
    *,
    first: bool,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    parts: list[str] = []
    if first:
        parts.append(f"Workflow: {workflow.name} — {workflow.description}")
        if workflow.meta_guidance:
            parts.append(_throughout(workflow.meta_guidance))
    # the step's texts are rendered once, in `view`, and reused here
    if step.agent_role:
        parts.append(view["agentRole"])
    parts.append(f"## {view['title']}\n{view['prompt']}")
    if step.guidance:
        parts.append("Guidance:\n" + "\n".join(f"- {g}" for g in view["guidance"]))
    for frame, variables in loops:  # outermost first, each with its own loop variables
        loop = frame.loop
        line = f"Loop `{loop.title}`: iteration {frame.iteration} (at most {loop.max_iterations})"
        if loop.kind == "forEach":
            item = variables.get(loop.item_var)
            line += f"; {loop.item_var} = {json.dumps(item, ensure_ascii=False, default=str)}"
            line += f" ({loop.index_var} = {frame.iteration - 1})"
        parts.append(line)
    criteria = list(step.criteria)
    if criteria:
        parts.append("Your output must meet:\n" + "\n".join(f"- {c}" for c in criteria))
    if "checks" in view:
        listed = "\n".join(f"- {c}" for c in view["checks"])
        parts.append(f"In a run, the server verifies for itself:\n{listed}")
    parts.extend(notes)
    guidance: dict[str, Any] = {"prompt": "\n\n".join(parts)}
    hint = step.model_hint or workflow.model_hint
    if hint:
        guidance["modelHint"] = hint
    guidance["requiresConfirmation"] = view["requireConfirmation"]
    guidance["validationCriteria"] = criteria
    return guidance


@lru_cache(maxsize=256)
def _throughout(meta_guidance: tuple[str, ...]) -> str:
    """The metaGuidance block of a first step's prompt: the same text on every first call
    of a workflow, so made once (a quarter of that call's time otherwise: benchmarks)."""
    return "Throughout this workflow:\n" + "\n".join(f"- {g}" for g in meta_guidance)
