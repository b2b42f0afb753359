"""workflow_next: the first step, in order, that is not done and may run now.

A pure function of (workflow, completedSteps, context, state). Loop progress
lives in `state`, which the result hands back (`NextResult.loops`) with the
`completed_steps` the client must send next time (loop bookkeeping applied).
The walk itself is in walk.py; this module turns it into a `NextResult`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from typing import Any

from handrail.engine.derived import derived
from handrail.engine.guidance import compose, confirmation, step_view
from handrail.engine.results import Guidance, LoopNeed, LoopPosition, LoopView, MissingContext, NextResult
from handrail.engine.state import Frame, read_state
from handrail.engine.walk import Walk, first_step
from handrail.model.errors import InvalidParams, StepNotFound
from handrail.model.workflow import Context, Step, Workflow


def check_completed(workflow: Workflow, completed: Sequence[str]) -> None:
    for sid in completed:
        if sid not in workflow.nodes:
            raise StepNotFound(
                data={
                    "stepId": sid,
                    "workflowId": workflow.id,
                    "details": f"completedSteps names `{sid}`, which is no step of workflow `{workflow.id}`",
                }
            )


def next_step(
    workflow: Workflow,
    completed_steps: Sequence[str] = (),
    context: Mapping[str, Any] | None = None,
    *,
    current_step: str | None = None,
    state: Mapping[str, Any] | tuple[LoopPosition, ...] | None = None,
) -> NextResult:
    """The first step, in order, that is not done and may run now, with its guidance.
    `state`: the previous result's `loops` (or their wire form, `{"loops": [...]}`)."""
    context = {} if context is None else context
    if type(context) is not dict and not isinstance(context, Mapping):  # the ABC check costs: dicts first
        raise InvalidParams(data={"details": "context must be an object"})
    check_completed(workflow, completed_steps)
    if current_step is not None and current_step not in workflow.nodes:
        raise StepNotFound(data={"stepId": current_step, "workflowId": workflow.id})
    done = set(completed_steps)
    if state is None or state == () or state == _NO_LOOPS:  # no loop running: the usual call
        found = first_step(workflow, done, context)
        if found is not None:
            completed = tuple(dict.fromkeys(completed_steps))
            return _found(workflow, found, context, [], completed, (), first=not completed_steps)
    frames = read_state(workflow, _wire_state(state), done)
    walk = Walk(workflow, context, list(dict.fromkeys(completed_steps)), done, frames)
    step = walk.walk(workflow.sequence, 0)
    completed = tuple(walk.completed)
    loops = tuple([LoopPosition(f.loop.id, f.iteration) for f in walk.frames]) if walk.frames else ()
    if step is None:
        walk.settle()
        if walk.waiting:
            return NextResult(completed, loops, None, blocked(walk), False)
        text = f"Workflow `{workflow.name}` is complete: every step that applies is done."
        return NextResult(completed, loops, None, Guidance(" ".join([text, *walk.notes]), False, ()), True)
    depth = walk.depth  # the running loops that enclose the step (an earlier step may reappear)
    enclosing = [(f, f.variables(walk.scope(i))) for i, f in enumerate(walk.frames[:depth])]
    return _found(
        workflow,
        step,
        walk.scope(depth),
        enclosing,
        completed,
        loops,
        first=not completed_steps,
        done=walk.done,
        notes=walk.notes,
    )


def _found(
    workflow: Workflow,
    step: Step,
    scope: Context,
    enclosing: list[tuple[Frame, dict[str, Any]]],
    completed: tuple[str, ...],
    loops: tuple[LoopPosition, ...],
    *,
    first: bool,
    done: Set[str] = frozenset(),
    notes: Sequence[str] = (),
) -> NextResult:
    """The answer that shows `step`, seen in `scope` inside the `enclosing` loops."""
    view, shown = step_view(step, scope, derived(workflow))
    requires = view.require_confirmation
    for frame, _ in enclosing:
        # a loop that asks for confirmation asks once, as it is entered
        entering = frame.iteration == 1 and done.isdisjoint(frame.loop.body)
        if entering and confirmation(frame.loop.confirmation, scope):
            requires = True
    guidance = compose(
        workflow, step, view, enclosing, first=first, requires_confirmation=requires, notes=notes, shown=shown
    )
    loop = None
    if enclosing:
        frame, variables = enclosing[-1]
        loop = LoopView(frame.loop.id, frame.loop.title, frame.iteration, variables)
    return NextResult(completed, loops, view, guidance, False, loop, shown)


# the state of a previous answer outside every loop, sent back
_NO_LOOPS: dict[str, list[Any]] = {"loops": []}


def _wire_state(state: Mapping[str, Any] | tuple[LoopPosition, ...] | None) -> Any:
    """The typed `loops` of a previous result, in the form `read_state` checks."""
    if isinstance(state, tuple) and all(isinstance(p, LoopPosition) for p in state):  # JSON has no tuples
        return {"loops": [{"id": p.id, "iteration": p.iteration} for p in state]}
    return state


def loop_need(kind: LoopNeed, loop_id: str) -> str:
    """What a loop's `count` ("number") or `items` ("list") variable must hold, in words."""
    if kind == "number":
        return f"a number: loop `{loop_id}` runs that many times"
    return f"a JSON list: loop `{loop_id}` goes through it"


AGAIN = "call workflow_next again"  # a run says instead how it is told (runs/base.py)


def blocked(walk: Walk) -> Guidance:
    """The guidance of a walk that found no step because the context lacks variables."""
    missing = []
    lines = []
    for name, values in walk.waiting.items():
        kind, loop_id = walk.kinds.get(name, (None, None))
        unusable = walk.unusable.get(name)
        missing.append(MissingContext(name, tuple(values), kind, loop_id, unusable))
        line = f"- `{name}`"
        if values:
            wanted = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
            line += f" (the conditions look for {wanted})"
        if unusable:
            line += f" ({unusable})"
        elif kind is not None and loop_id is not None:
            line += f" ({loop_need(kind, loop_id)})"
        lines.append(line)
    prompt = (
        "No remaining step can run yet: their conditions read context variables that are not set.\n"
        f"Set these in `context` and {AGAIN}:\n" + "\n".join(lines)
    )
    return Guidance("\n\n".join([prompt, *walk.notes]), False, (), None, tuple(missing))
