"""What an agent is shown for a step: the step itself and the composed guidance."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from handrail.engine.results import Guidance, StepView
from handrail.engine.shared import keep, made, shared
from handrail.engine.state import Frame
from handrail.engine.templates import render
from handrail.model import Condition, Context, Step, Workflow


def confirmation(value: bool | Condition, scope: Context) -> bool:
    return value if isinstance(value, bool) else value.holds(scope)


def step_view(step: Step, scope: Context) -> StepView:
    """The step with its texts rendered in `scope`; made once for a step whose view
    cannot depend on the context (no templates, no conditions, no checks), and once per
    outcome for one whose only condition is its `requireConfirmation`."""
    found = made(step, _VIEW)
    if found is _BY_CONFIRMATION:
        # texts without templates, a condition for confirmation: one view per outcome
        key = (_VIEW, confirmation(step.confirmation, scope))
        view = made(step, key)
        if view is None:
            view = _view(step, scope)
            keep(step, key, view)
        return view  # type: ignore[no-any-return]
    if found is not None and found is not _DYNAMIC:
        return found  # type: ignore[no-any-return]
    view = _view(step, scope)
    if found is None:
        if _static(step):
            keep(step, _VIEW, view)
        elif _static_texts(step):
            keep(step, _VIEW, _BY_CONFIRMATION)
            keep(step, (_VIEW, view.require_confirmation), view)
        else:
            keep(step, _VIEW, _DYNAMIC)
    return view


def _view(step: Step, scope: Context) -> StepView:
    return StepView(
        step.id,
        render(step.title, scope),
        render(step.prompt, scope),
        render(step.agent_role, scope) if step.agent_role else None,
        tuple([render(g, scope) for g in step.guidance]) if step.guidance else (),
        step.ask_for_files,
        confirmation(step.confirmation, scope),
        step.run_condition.text if step.run_condition is not None else None,
        step.function_references,
        # information only: checks run in runs, never in this stateless call
        tuple(checks_text(step, scope)) if step.checks else (),
    )


_VIEW = "view"
_DYNAMIC = object()  # kept for a step whose view depends on the context: made on each call
_BY_CONFIRMATION = object()  # kept for a step whose view depends only on its confirmation condition


def _static(step: Step) -> bool:
    return isinstance(step.confirmation, bool) and _static_texts(step)


def _static_texts(step: Step) -> bool:
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
) -> Guidance:
    """The guidance for `step`; made once for a step with a shared view, outside loops."""
    once = not loops and not notes and shared(view)
    key = (first, requires_confirmation)
    if once:
        found = made(step, key)
        if found is not None:
            return found  # type: ignore[no-any-return]
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
    guidance = Guidance("\n\n".join(parts), requires_confirmation, criteria, hint or None)
    if once:
        keep(step, key, guidance)
    return guidance


@lru_cache(maxsize=256)
def _throughout(meta_guidance: tuple[str, ...]) -> str:
    """The metaGuidance block of a first step's prompt: the same text on every first call
    of a workflow, so made once (a quarter of that call's time otherwise: benchmarks)."""
    return "Throughout this workflow:\n" + "\n".join(f"- {g}" for g in meta_guidance)
