"""Where a run stands, as a typed value: the steps done, the running loops, the current
step and its guidance as the agent was shown them. The run row keeps it as JSON in
the shape of workflow_next's answer (`stored`), so databases written before read the
same; the loops are handed back to the engine as typed values, not as wire JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.engine.results import LoopPosition
from handrail.errors import StateError

if TYPE_CHECKING:
    from handrail.engine.results import NextResult
    from handrail.model import Workflow


@dataclass(frozen=True, slots=True)
class Position:
    completed_steps: tuple[str, ...]
    loops: tuple[LoopPosition, ...]  # the running loops, outermost first
    step: Mapping[str, Any] | None  # the current step as shown (None: complete or blocked)
    guidance: Mapping[str, Any] | None
    is_complete: bool
    loop: Mapping[str, Any] | None = None  # the innermost loop around the step, as shown

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
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"the run's stored position cannot be read ({exc!r})", {}) from None

    def to_stored(self) -> dict[str, Any]:
        """The row's JSON: workflow_next's answer, keys in its order."""
        state = {"loops": [{"id": p.id, "iteration": p.iteration} for p in self.loops]}
        if self.step is None:
            return {
                "completedSteps": list(self.completed_steps),
                "state": state,
                "step": None,
                "isComplete": self.is_complete,
                "guidance": self.guidance,
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
        return Position.of(result), result


def merge_context(context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The run's context with `changes` applied; a key set to null is removed."""
    merged = dict(context)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
