"""workflow_next: the first step, in order, that is not done and may run now.

A pure function of (workflow, completedSteps, context, state). Loop progress
lives in `state`, which the result hands back with the `completedSteps` the
client must send next time (loop bookkeeping applied).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from handrail.engine.guidance import compose, step_view
from handrail.engine.state import Frame, read_state
from handrail.errors import InvalidParams, StepNotFound
from handrail.expr import MISSING, lookup
from handrail.expr.semantics import is_number
from handrail.model import Condition, Context, Loop, Step, Workflow


@dataclass(slots=True)
class _Walk:
    workflow: Workflow
    context: Context
    completed: list[str]
    done: set[str]
    frames: list[Frame]
    waiting: dict[str, list[Any]] = field(default_factory=dict)  # missing variable -> wanted values
    notes: list[str] = field(default_factory=list)

    def scope(self, depth: int) -> Context:
        """The context seen at `depth`: loop variables of the running frames over the caller's."""
        if depth == 0:
            return self.context
        layers: dict[str, Any] = {}
        for frame in self.frames[:depth]:
            layers.update(loop_variables(frame, ChainMap(layers, self.context)))  # type: ignore[arg-type]
        return ChainMap(layers, self.context)  # type: ignore[arg-type]  # read-only use

    def skipped(self, condition: Condition, scope: Context) -> None:
        for name, wanted in condition.looks_for:
            if lookup(scope, name) is MISSING:
                values = self.waiting.setdefault(name, [])
                values.extend(v for v in wanted if v not in values)

    def finish(self, sid: str) -> None:
        if sid not in self.done:
            self.done.add(sid)
            self.completed.append(sid)

    def forget_body(self, loop: Loop) -> None:
        inner = _descendants(self.workflow, loop)
        self.completed[:] = [s for s in self.completed if s not in inner]
        self.done -= inner

    def walk(self, sequence: Sequence[str], depth: int) -> Step | None:
        scope = self.scope(depth)
        for sid in sequence:
            if sid in self.done:
                continue
            node = self.workflow.nodes[sid]
            if isinstance(node, Step):
                if node.run_condition is None or node.run_condition.holds(scope):
                    return node
                self.skipped(node.run_condition, scope)
                continue
            found = self.run_loop(node, depth, scope)
            if found is not None:
                return found
        return None

    def run_loop(self, loop: Loop, depth: int, scope: Context) -> Step | None:
        if len(self.frames) > depth and self.frames[depth].loop.id != loop.id:
            return None  # another loop at this level is running; this one waits its turn
        running = len(self.frames) > depth
        if not running:
            if loop.run_condition is not None and not loop.run_condition.holds(scope):
                self.skipped(loop.run_condition, scope)
                return None
            self.frames.append(Frame(loop, 1))
            verdict = self.may_iterate(depth)
            if verdict is None:  # cannot tell yet: the context lacks what the loop needs
                self.frames.pop()
                return None
            if not verdict:
                self.frames.pop()
                self.finish(loop.id)
                return None
        frame = self.frames[depth]
        for _ in range(loop.max_iterations + 1):  # bounded: every pass advances the iteration
            found = self.walk(loop.body, depth + 1)
            if found is not None:
                return found
            del self.frames[depth + 1 :]
            self.forget_body(loop)
            frame.iteration += 1
            verdict = frame.iteration <= loop.max_iterations and self.may_iterate(depth)
            if frame.iteration > loop.max_iterations:
                self.notes.append(
                    f"Loop `{loop.id}` stopped at its limit of {loop.max_iterations} iterations."
                )
            if not verdict:
                self.frames.pop()
                self.finish(loop.id)
                return None
        raise AssertionError("unreachable: the iteration bound ends every loop")

    def may_iterate(self, depth: int) -> bool | None:
        """Whether the frame at `depth` runs its current iteration; None when undecidable."""
        frame = self.frames[depth]
        loop = frame.loop
        outer = self.scope(depth)
        scope = self.scope(depth + 1)
        if loop.kind in ("while", "until"):
            if loop.condition is None:
                return False
            holds = loop.condition.holds(scope)
            if holds if loop.kind == "while" else not holds:
                return True
            if frame.iteration == 1 and any(
                lookup(scope, name) is MISSING for name in loop.condition.variables
            ):
                self.skipped(loop.condition, scope)
                return None  # undecided until the context sets what the condition reads
            return False
        if loop.kind == "for":
            count: Any = loop.count if not isinstance(loop.count, str) else lookup(outer, loop.count)
            if isinstance(count, str) and count.strip().isdigit():
                count = int(count)
            if not is_number(count):
                self.waiting.setdefault(str(loop.count), [])
                return None
            return bool(frame.iteration <= count)
        items = lookup(outer, loop.items or "")
        if not isinstance(items, list):
            self.waiting.setdefault(str(loop.items), [])
            return None
        return frame.iteration <= len(items)


def loop_variables(frame: Frame, context: Context) -> dict[str, Any]:
    loop = frame.loop
    out: dict[str, Any] = {loop.iteration_var: frame.iteration, loop.index_var: frame.iteration - 1}
    if loop.kind == "forEach":
        items = lookup(context, loop.items or "")
        if isinstance(items, list) and frame.iteration - 1 < len(items):
            out[loop.item_var] = items[frame.iteration - 1]
    return out


def _descendants(workflow: Workflow, loop: Loop) -> set[str]:
    out: set[str] = set()
    stack = list(loop.body)
    while stack:
        sid = stack.pop()
        out.add(sid)
        node = workflow.nodes.get(sid)
        if isinstance(node, Loop):
            stack.extend(node.body)
    return out


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
    state: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The seed's {step, guidance, isComplete}, plus `completedSteps` and `state` to send back."""
    context = context or {}
    if not isinstance(context, Mapping):
        raise InvalidParams(data={"details": "context must be an object"})
    check_completed(workflow, completed_steps)
    if current_step is not None and current_step not in workflow.nodes:
        raise StepNotFound(data={"stepId": current_step, "workflowId": workflow.id})
    done = set(completed_steps)
    frames = read_state(workflow, state, done)
    walk = _Walk(workflow, context, list(dict.fromkeys(completed_steps)), done, frames)
    step = walk.walk(workflow.sequence, 0)
    result: dict[str, Any] = {
        "completedSteps": walk.completed,
        "state": {"loops": [f.as_dict() for f in walk.frames]},
    }
    if step is not None:
        scope = walk.scope(len(walk.frames))
        result["step"] = step_view(step, scope)
        result["guidance"] = compose(
            workflow, step, scope, walk.frames, first=not completed_steps, notes=walk.notes
        )
        result["isComplete"] = False
        if walk.frames:
            frame = walk.frames[-1]
            result["loop"] = {
                "id": frame.loop.id,
                "title": frame.loop.title,
                "iteration": frame.iteration,
                **loop_variables(frame, walk.scope(len(walk.frames) - 1)),
            }
        return result
    result["step"] = None
    if walk.waiting:
        result["isComplete"] = False
        result["guidance"] = _blocked(walk.waiting)
    else:
        result["isComplete"] = True
        text = f"Workflow `{workflow.name}` is complete: every step that applies is done."
        result["guidance"] = {
            "prompt": " ".join([text, *walk.notes]),
            "requiresConfirmation": False,
            "validationCriteria": [],
        }
    return result


def _blocked(waiting: dict[str, list[Any]]) -> dict[str, Any]:
    import json

    lines = []
    for name, values in waiting.items():
        wanted = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
        lines.append(f"- `{name}`" + (f" (the conditions look for {wanted})" if wanted else ""))
    prompt = (
        "No remaining step can run yet: their conditions read context variables that are not set.\n"
        "Set these in `context` and call workflow_next again:\n" + "\n".join(lines)
    )
    return {
        "prompt": prompt,
        "requiresConfirmation": False,
        "validationCriteria": [],
        "missingContext": {name: list(values) for name, values in waiting.items()},
    }
