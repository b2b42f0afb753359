"""What an agent is shown for a step: the step itself and the composed guidance."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from handrail.engine.derived import Derived
from handrail.engine.results import Guidance, Shown, StepView
from handrail.engine.state import Frame
from handrail.engine.templates import render
from handrail.model.workflow import Condition, Context, Step, Workflow


def confirmation(value: bool | Condition, scope: Context) -> bool:
    return value if isinstance(value, bool) else value.holds(scope)


def step_view(step: Step, scope: Context, derived: Derived) -> tuple[StepView, Shown | None]:
    """The step with its texts rendered in `scope`, and its shared parts when its view is
    one the compiler made (compiler/derive.py): the same objects on every call."""
    shown = derived.shown.get(step.id)
    if shown is None:
        return render_view(step, scope), None
    if isinstance(shown, tuple):  # one view per outcome of its confirmation condition
        shown = shown[confirmation(step.confirmation, scope)]
    return shown.view, shown


def render_view(step: Step, scope: Context, requires_confirmation: bool | None = None) -> StepView:
    """`requires_confirmation`: the outcome of the step's confirmation, when already decided."""
    if requires_confirmation is None:
        requires_confirmation = confirmation(step.confirmation, scope)
    return StepView(
        step.id,
        render(step.title, scope),
        render(step.prompt, scope),
        render(step.agent_role, scope) if step.agent_role else None,
        tuple([render(g, scope) for g in step.guidance]) if step.guidance else (),
        step.ask_for_files,
        requires_confirmation,
        step.run_condition.text if step.run_condition is not None else None,
        step.function_references,
        # information only: checks run in runs, never in this stateless call
        tuple(checks_text(step, scope)) if step.checks else (),
    )


def same_in_every_context(step: Step) -> bool:
    """Whether no context changes the step's view but through its confirmation condition."""
    texts = (step.title, step.prompt, step.agent_role or "", *step.guidance)
    return not step.checks and not any("{{" in t for t in texts)


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
    view: StepView,
    loops: Sequence[tuple[Frame, Mapping[str, Any]]],
    *,
    first: bool,
    requires_confirmation: bool,
    notes: Sequence[str] = (),
    shown: Shown | None = None,
) -> Guidance:
    """The guidance for `step`; for a step with a shared view, outside loops, the one
    the compiler composed (`shown`)."""
    if shown is not None and not loops and not notes and requires_confirmation == view.require_confirmation:
        found = shown.first if first else shown.later
        if found is not None:
            return found
    parts: list[str] = []
    if first:
        parts.append(f"Workflow: {workflow.name} — {workflow.description}")
        if workflow.meta_guidance:
            parts.append(_throughout(workflow.meta_guidance))
    # the step's texts are rendered once, in `view`, and reused here
    if view.agent_role is not None:
        parts.append(view.agent_role)
    parts.append(f"## {view.title}\n{view.prompt}")
    if view.guidance:
        parts.append("Guidance:\n" + "\n".join(f"- {g}" for g in view.guidance))
    for frame, variables in loops:  # outermost first, each with its own loop variables
        loop = frame.loop
        line = f"Loop `{loop.title}`: iteration {frame.iteration} (at most {loop.max_iterations})"
        if loop.kind == "forEach":
            item = variables.get(loop.item_var)
            line += f"; {loop.item_var} = {json.dumps(item, ensure_ascii=False, default=str)}"
            line += f" ({loop.index_var} = {frame.iteration - 1})"
        parts.append(line)
    criteria = step.criteria
    if criteria:
        parts.append("Your output must meet:\n" + "\n".join(f"- {c}" for c in criteria))
    if view.checks:
        listed = "\n".join(f"- {c}" for c in view.checks)
        parts.append(f"In a run, the server verifies for itself:\n{listed}")
    parts.extend(notes)
    hint = step.model_hint or workflow.model_hint
    return Guidance("\n\n".join(parts), requires_confirmation, criteria, hint or None)


@lru_cache(maxsize=256)
def _throughout(meta_guidance: tuple[str, ...]) -> str:
    """The metaGuidance block of a first step's prompt: the same text on every first call
    of a workflow, so made once (a quarter of that call's time otherwise: benchmarks)."""
    return "Throughout this workflow:\n" + "\n".join(f"- {g}" for g in meta_guidance)
