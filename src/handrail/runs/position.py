"""Where a run stands, as a typed value: the steps done, the running loops, the current
step and its guidance as the agent was shown them. The run row keeps it as JSON in
the shape of workflow_next's answer (`stored`), so databases written before read the
same; the loops are handed back to the engine as typed values, not as wire JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from handrail.model.errors import StateError
from handrail.model.workflow import Loop, Step, SubWorkflow

if TYPE_CHECKING:
    from handrail.engine.results import LoopPosition, NextResult
    from handrail.model.workflow import Workflow


@dataclass(frozen=True, slots=True)
class Position:
    completed_steps: tuple[str, ...]
    loops: tuple[LoopPosition, ...]  # the running loops, outermost first
    step: Mapping[str, Any] | None  # the current step as shown (None: complete or blocked)
    guidance: Mapping[str, Any] | None
    is_complete: bool
    loop: Mapping[str, Any] | None = None  # the innermost loop around the step, as shown
    # what the run waits on instead of a step: its branches or its child run (runs/tree.py)
    waiting: Mapping[str, Any] | None = None
    # a branch's part of its parent's workflow: one iteration of a parallel loop
    scope: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, result: NextResult) -> Position:
        """The engine's answer as a run keeps it."""
        # the engine's and the wire's modules load with the first run
        from handrail.engine.result_json import next_json

        shown = next_json(result)
        return cls(
            tuple(result.completed_steps),
            tuple(result.loops),
            shown["step"],
            shown["guidance"],
            result.is_complete,
            shown.get("loop"),
        )

    @classmethod
    def stored(cls, data: Mapping[str, Any]) -> Position:
        """A run row's position (written by `to_stored`, by this or an earlier handrail)."""
        from handrail.engine.results import LoopPosition  # the engine's types load with the first run read

        try:
            state = data.get("state") or {}
            loops = tuple(LoopPosition(str(p["id"]), int(p["iteration"])) for p in state.get("loops", ()))
            step = data.get("step")
            guidance = data.get("guidance")
            return cls(
                tuple(str(s) for s in data["completedSteps"]),
                loops,
                step if isinstance(step, Mapping) else None,
                guidance if isinstance(guidance, Mapping) else None,
                bool(data.get("isComplete")),
                data["loop"] if isinstance(data.get("loop"), Mapping) else None,
                data["waitingOn"] if isinstance(data.get("waitingOn"), Mapping) else None,
                data["branchOf"] if isinstance(data.get("branchOf"), Mapping) else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"the run's stored position cannot be read ({exc!r})", {}) from None

    def to_stored(self) -> dict[str, Any]:
        """The row's JSON: workflow_next's answer, keys in its order."""
        state = {"loops": [{"id": p.id, "iteration": p.iteration} for p in self.loops]}
        tree = {
            **({"waitingOn": self.waiting} if self.waiting is not None else {}),
            **({"branchOf": self.scope} if self.scope is not None else {}),
        }
        if self.step is None:
            return {
                "completedSteps": list(self.completed_steps),
                "state": state,
                "step": None,
                "isComplete": self.is_complete,
                "guidance": self.guidance,
                **tree,
            }
        out: dict[str, Any] = {
            "completedSteps": list(self.completed_steps),
            "state": state,
            "step": self.step,
            "guidance": self.guidance,
            "isComplete": self.is_complete,
        }
        if self.loop is not None:
            out["loop"] = self.loop
        out.update(tree)
        return out

    @property
    def step_id(self) -> str | None:
        return str(self.step["id"]) if self.step is not None and "id" in self.step else None

    def shown_title(self) -> dict[str, str]:
        """`{"title": ...}`: the current step's title as the agent was shown it (a loop's
        templates filled for its iteration), kept on the step's events; {} without a step."""
        title = self.step.get("title") if self.step is not None else None
        return {"title": title} if isinstance(title, str) else {}

    def advanced(
        self, workflow: Workflow, context: Mapping[str, Any], done: str | None = None
    ) -> tuple[Position, NextResult]:
        """The engine's next answer from here (with step `done` completed first)."""
        from handrail.engine import next_step  # the engine's and the wire's modules load with the first run

        completed = [*self.completed_steps, done] if done is not None else self.completed_steps
        result = next_step(workflow, completed, context, state=self.loops)
        if self.waiting is not None and done is None:
            return self, result  # only the children it waits for move it on: context alone does not
        return scoped(workflow, context, Position.of(result), self), result


def merge_context(context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The run's context with `changes` applied; a key set to null is removed."""
    merged = dict(context)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def scoped(workflow: Workflow, context: Mapping[str, Any], position: Position, before: Position) -> Position:
    """The engine's position as a run in a tree takes it (spec/runs.md, "Runs in a tree"):
    a branch (`before.scope`) is done when its iteration of the loop is; any other run
    that reaches a parallel loop waits for the loop's branches instead of running it."""
    scope = before.scope
    entered = workflow.nodes.get(position.loops[0].id) if position.loops else None
    if scope is not None:
        position = replace(position, scope=scope)
        if not _inside(workflow, position, scope):
            return replace(
                position, loops=(), step=None, loop=None, is_complete=True, guidance=_guidance(BRANCH_DONE)
            )
    elif isinstance(entered, Loop) and entered.parallel is not None:
        from handrail.expr import lookup  # the conditions' modules load with the engine, after start-up

        items = lookup(context, entered.items or "")
        count = min(len(items), entered.max_iterations) if isinstance(items, list) else 0
        waiting = {"kind": "branches", "stepId": entered.id, "count": count}
        prompt = _guidance(_branches_prompt(entered, count))
        position = Position(position.completed_steps, (), None, prompt, False, None, waiting)
    node = workflow.nodes.get(position.step_id or "")
    if isinstance(node, Step) and node.subworkflow is not None:
        position = _waiting_for_child(node, node.subworkflow, context, position)
    return position


BRANCH_DONE = (
    "This branch is done: its item's steps are all accepted. The parent run goes on once "
    "its loop's branches are done (workflow_resume on the parent shows them)."
)


def _branches_prompt(loop: Loop, count: int) -> str:
    return (
        f"This run waits for parallel loop `{loop.id}` ({loop.title}): each of its {count} items is a "
        "branch, a run of its own. Work on the branches, not on this run: workflow_resume with this "
        "runId lists them under `branches` (runId, item, status, holder); continue each with "
        "workflow_continue and the branch's runId. This run goes on by itself once the loop's "
        "branches are done."
    )


def _waiting_for_child(
    step: Step, sub: SubWorkflow, context: Mapping[str, Any], position: Position
) -> Position:
    """A run at a sub-workflow step waits for its child, whose context is filled now."""
    from handrail.engine.templates import render  # the engine's: loaded with the first run

    shown = position.loop or {}
    scope = {**context, **{k: v for k, v in shown.items() if k not in ("id", "title", "iteration")}}
    filled = {k: render(v, scope) if isinstance(v, str) else v for k, v in sub.context.items()}
    waiting = {"kind": "child", "stepId": step.id, "workflowId": sub.workflow_id, "context": filled}
    prompt = (
        f"This run waits for its child run of workflow `{sub.workflow_id}` (step `{step.id}`, "
        f"{position.shown_title().get('title', step.title)}). Work on the child, not on this run: "
        "workflow_resume with this runId names it under `children`; continue it with "
        "workflow_continue and the child's runId. This run goes on by itself once the child completes."
    )
    return replace(position, step=None, guidance=_guidance(prompt), waiting=waiting)


def _guidance(prompt: str) -> dict[str, Any]:
    return {"prompt": prompt, "requiresConfirmation": False, "validationCriteria": []}


def _inside(workflow: Workflow, position: Position, scope: Mapping[str, Any]) -> bool:
    """Whether the position is still in the branch's own iteration of its loop."""
    from handrail.engine.results import LoopPosition  # as in Position.stored

    if position.is_complete or position.loops[:1] != (
        LoopPosition(str(scope.get("loopId")), int(scope.get("iteration", 0))),
    ):
        return False
    sid = position.step_id
    if sid is None:
        return True  # blocked inside the iteration
    node = workflow.nodes.get(sid)
    return node is not None and _within(workflow, sid, str(scope.get("loopId")))


def _within(workflow: Workflow, sid: str, loop_id: str) -> bool:
    node = workflow.nodes.get(sid)
    while node is not None and node.loop is not None:
        if node.loop == loop_id:
            return True
        node = workflow.nodes.get(node.loop)
    return False
