"""The engine's typed results as the tools' JSON (the seed's shapes, spec/engine.md):
the one conversion to the wire.

The service answers `workflow_next` and `workflow_validate` with these; runs store a
position in the same shape. Key order is part of the output (replies are compared
byte for byte with the golden cases), so every dict is built in the seed's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handrail.codec import Encoded, encode
from handrail.engine.results import PASSED, Guidance, NextResult, StepView, Verdict
from handrail.engine.shared import LIMIT, shared


def next_json(
    result: NextResult,
    step_of: Callable[[StepView], Any] | None = None,
    guidance_of: Callable[[Guidance], Any] | None = None,
) -> dict[str, Any]:
    """workflow_next's answer: {completedSteps, state, step, guidance, isComplete[, loop]}.
    `step_of` and `guidance_of` convert those two parts (default: to dicts)."""
    step_of = step_of or step_json
    guidance_of = guidance_of or guidance_json
    loops = result.loops
    state = {"loops": [{"id": p.id, "iteration": p.iteration} for p in loops] if loops else []}
    step = result.step
    if step is None:
        return {
            "completedSteps": list(result.completed_steps),
            "state": state,
            "step": None,
            "isComplete": result.is_complete,
            "guidance": guidance_of(result.guidance),
        }
    out = {
        "completedSteps": list(result.completed_steps),
        "state": state,
        "step": step_of(step),
        "guidance": guidance_of(result.guidance),
        "isComplete": result.is_complete,
    }
    loop = result.loop
    if loop is not None:
        # the loop variables come last and may shadow a field of the same name, as they always have
        out["loop"] = {"id": loop.id, "title": loop.title, "iteration": loop.iteration, **loop.variables}
    return out


def next_reply(result: NextResult) -> dict[str, Any]:
    """`next_json` as the service sends it: a step and guidance the engine gives on every
    call for their step (engine/shared.py) are encoded once and spliced into each reply
    (a 5 KB step was encoded again on every call otherwise: benchmarks)."""
    return next_json(result, _step_reply, _guidance_reply)


def _step_reply(step: StepView) -> Any:
    return _kept(_shared_encoded, step, _step_encoded) if shared(step) else _step_json(step)


def _guidance_reply(guidance: Guidance) -> Any:
    if shared(guidance):
        return _kept(_shared_encoded, guidance, _guidance_encoded)
    return _guidance_json(guidance)


def _step_encoded(step: StepView) -> Encoded:
    return Encoded(encode(_step_json(step)))


def _guidance_encoded(guidance: Guidance) -> Encoded:
    return Encoded(encode(_guidance_json(guidance)))


def step_json(step: StepView) -> dict[str, Any]:
    return _once(step, _step_json) if shared(step) else _step_json(step)


def _once(value: Any, convert: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """The JSON of a value the engine gives on every call for its step (engine/shared.py):
    made once, each answer getting its own copy of the top level (the lists and objects
    inside are shared: replies are only read)."""
    made: dict[str, Any] = _kept(_shared_json, value, convert)
    return made.copy()


def _kept(table: dict[int, tuple[Any, Any]], value: Any, make: Callable[[Any], Any]) -> Any:
    """`make(value)`, made once per value while `table` keeps it (bounded: it starts
    again when full). The value is held there, so its id stays its own."""
    cached = table.get(id(value))
    if cached is None or cached[0] is not value:
        if len(table) >= LIMIT:
            table.clear()
        cached = table[id(value)] = (value, make(value))
    return cached[1]


_shared_json: dict[int, tuple[Any, Any]] = {}  # value -> its JSON as dicts (next_json)
_shared_encoded: dict[int, tuple[Any, Any]] = {}  # value -> its JSON encoded (next_reply)


def _step_json(step: StepView) -> dict[str, Any]:
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
    return _once(guidance, _guidance_json) if shared(guidance) else _guidance_json(guidance)


def _guidance_json(guidance: Guidance) -> dict[str, Any]:
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
