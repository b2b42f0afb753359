"""The engine's typed results as the tools' JSON (the seed's shapes, spec/engine.md):
the one conversion to the wire.

The service answers `workflow_next` and `workflow_validate` with these; runs store a
position in the same shape, and the compiler makes the wire forms of what it derives
with `wire`. The engine's own functions load none of it: they build no JSON. Key order
is part of the output (replies are compared byte for byte with the golden cases), so
every dict is built in the seed's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handrail.engine.results import PASSED, Guidance, NextResult, Shown, StepView, Verdict, Wire
from handrail.model.codec import Encoded, encode


def next_json(result: NextResult, *, spliced: bool = False) -> dict[str, Any]:
    """workflow_next's answer: {completedSteps, state, step, guidance, isComplete[, loop]}.
    A step and guidance the compiler made for their step (`result.shown`) come from the
    wire forms it made with them: copies of their JSON, or with `spliced` (the service's
    reply) their encoded bytes, spliced in as they are."""
    loops = result.loops
    state = {"loops": [{"id": p.id, "iteration": p.iteration} for p in loops] if loops else []}
    step = result.step
    if step is None:
        return {
            "completedSteps": list(result.completed_steps),
            "state": state,
            "step": None,
            "isComplete": result.is_complete,
            "guidance": guidance_json(result.guidance),
        }
    shown = result.shown
    out = {
        "completedSteps": list(result.completed_steps),
        "state": state,
        "step": _part(step, shown, step_json, spliced),
        "guidance": _part(result.guidance, shown, guidance_json, spliced),
        "isComplete": result.is_complete,
    }
    loop = result.loop
    if loop is not None:
        # the loop variables come last and may shadow a field of the same name, as they always have
        out["loop"] = {"id": loop.id, "title": loop.title, "iteration": loop.iteration, **loop.variables}
    return out


def _part(value: Any, shown: Shown | None, convert: Callable[[Any], dict[str, Any]], spliced: bool) -> Any:
    wire = shown.wire_of(value) if shown is not None else None
    if wire is None:
        return convert(value)
    # each answer gets its own top level; the lists and objects inside are shared: replies are only read
    return wire.encoded if spliced else wire.json.copy()


def wire(value: StepView | Guidance) -> Wire:
    """The wire forms of a view or a guidance the compiler makes once (compiler/derive.py)."""
    made = step_json(value) if isinstance(value, StepView) else guidance_json(value)
    return Wire(made, Encoded(encode(made)))


def step_json(step: StepView) -> dict[str, Any]:
    out: dict[str, Any] = {"id": step.id, "title": step.title, "prompt": step.prompt}
    if step.agent_role is not None:
        out["agentRole"] = step.agent_role
    if step.guidance:
        out["guidance"] = list(step.guidance)
    out["askForFiles"] = step.ask_for_files
    out["requireConfirmation"] = step.require_confirmation
    if step.run_condition is not None:
        out["runCondition"] = step.run_condition
    if step.function_references:
        out["functionReferences"] = list(step.function_references)
    if step.checks:
        out["checks"] = list(step.checks)
    return out


def guidance_json(guidance: Guidance) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt": guidance.prompt}
    if guidance.model_hint is not None:
        out["modelHint"] = guidance.model_hint
    out["requiresConfirmation"] = guidance.requires_confirmation
    out["validationCriteria"] = list(guidance.validation_criteria)
    missing = guidance.missing
    if missing:
        out["missingContext"] = {m.name: list(m.wanted) for m in missing}
        kinds = {m.name: m.kind for m in missing if m.kind is not None}
        if kinds:  # what a loop needs, for a client that builds the value: "number" or "list"
            out["missingKinds"] = kinds
    return out


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """workflow_validate's answer: {valid, issues, suggestions}."""
    if verdict is PASSED:
        return {"valid": True, "issues": [], "suggestions": []}
    return {"valid": verdict.valid, "issues": list(verdict.issues), "suggestions": list(verdict.suggestions)}


def verdict_reply(verdict: Verdict) -> dict[str, Any] | Encoded:
    """`verdict_json` as the service sends it: a pass, the usual answer, is one constant
    already encoded."""
    return _PASSED_REPLY if verdict is PASSED else verdict_json(verdict)


_PASSED_REPLY = Encoded(encode(verdict_json(PASSED)))
