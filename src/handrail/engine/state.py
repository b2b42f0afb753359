"""Loop progress, carried by the client between calls: the server keeps no memory.

The wire form is `{"loops": [{"id": "<loop id>", "iteration": <n>}, ...]}`, the
running loops from outermost to innermost. Anything inconsistent with the
workflow is a StateError (-32005) that says what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from handrail.expr import lookup
from handrail.model.errors import StateError
from handrail.model.workflow import Context, Loop, Workflow


@dataclass(slots=True)
class Frame:
    loop: Loop
    iteration: int  # 1-based

    def advance(self) -> int:
        """Move on to the next iteration, and say which it is."""
        self.iteration += 1
        return self.iteration

    def back(self) -> None:
        """Stay on the iteration before: the next one waits on the context."""
        self.iteration -= 1

    def skip_to(self, last: int) -> None:
        """Go straight to iteration `last`, when it is ahead (the iterations between
        would change nothing)."""
        if last > self.iteration:
            self.iteration = last

    def variables(self, context: Context) -> dict[str, Any]:
        """The loop variables this frame sets, given the context its loop reads `items` from."""
        loop = self.loop
        out: dict[str, Any] = {loop.iteration_var: self.iteration, loop.index_var: self.iteration - 1}
        if loop.kind == "forEach":
            items = lookup(context, loop.items or "")
            if isinstance(items, list) and self.iteration - 1 < len(items):
                out[loop.item_var] = items[self.iteration - 1]
        return out


def iteration_limit(loop: Loop) -> int:
    """The highest iteration a loop can reach whatever the context: maxIterations, or a
    literal `for` count below it."""
    if loop.kind == "for" and isinstance(loop.count, int):
        return max(0, min(loop.max_iterations, loop.count))
    return loop.max_iterations


def read_state(workflow: Workflow, state: Mapping[str, Any] | None, completed: set[str]) -> list[Frame]:
    frames = _frames(workflow, state, completed) if state is not None else []
    running = {f.loop.id for f in frames}
    for sid in completed:
        node = workflow.nodes[sid]
        if node.loop is not None and node.loop not in running:
            raise StateError(
                f"step `{sid}` belongs to loop `{node.loop}`, which is not running; "
                "send back the `state` and `completedSteps` of the previous result",
                {"stepId": sid, "loopId": node.loop},
            )
    return frames


def _frames(workflow: Workflow, state: Any, completed: set[str]) -> list[Frame]:
    if not isinstance(state, Mapping):
        raise StateError("state must be an object: send back the `state` of the previous result")
    extra = set(state) - {"loops"}
    if extra:
        raise StateError(f"state has unknown fields: {', '.join(sorted(extra))}", {"fields": sorted(extra)})
    loops = state.get("loops", [])
    if not isinstance(loops, Sequence) or isinstance(loops, str):
        raise StateError("state.loops must be a list")
    frames: list[Frame] = []
    for index, item in enumerate(loops):
        where = f"state.loops[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"id", "iteration"}:
            raise StateError(f"{where} must be an object with exactly `id` and `iteration`")
        loop_id, iteration = item["id"], item["iteration"]
        node = workflow.nodes.get(loop_id) if isinstance(loop_id, str) else None
        if not isinstance(node, Loop):
            raise StateError(
                f"{where} names `{loop_id}`, which is no loop of workflow `{workflow.id}`",
                {"loopId": loop_id},
            )
        if isinstance(iteration, float) and iteration.is_integer():
            iteration = int(iteration)  # 2.0 from a client that writes every number as a float
        if not isinstance(iteration, int) or isinstance(iteration, bool):
            raise StateError(
                f"{where}: iteration {json.dumps(iteration, default=str)} is not a whole number",
                {"loopId": loop_id},
            )
        limit = iteration_limit(node)
        if not (1 <= iteration <= limit):
            raise StateError(
                f"{where}: iteration {iteration} is outside 1..{limit} for loop `{loop_id}`",
                {"loopId": loop_id},
            )
        expected_parent = frames[-1].loop.id if frames else None
        if node.loop != expected_parent:
            raise StateError(
                f"{where}: loop `{loop_id}` cannot run "
                + (f"inside `{expected_parent}`" if expected_parent else "at the top level"),
                {"loopId": loop_id},
            )
        if loop_id in completed:
            raise StateError(
                f"loop `{loop_id}` is both running (in state) and in completedSteps",
                {"loopId": loop_id},
            )
        frames.append(Frame(node, iteration))
    return frames
