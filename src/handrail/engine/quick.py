"""The usual workflow_next call, the quick way: no loop is running and no step inside a
loop is done, so the walk (walk.py) starts at the top level and, until it meets a loop
that is due, only looks at top-level steps in order. The first of them not done whose
runCondition holds is then its answer, found here by a loop over a plan made once per
workflow: ids, steps and conditions side by side, nothing looked up per call.

Whenever the walk would do more (a loop that may run, no step left: complete, or
blocked on the context and saying why), `first_step` answers None and the full walk
decides. Spec: spec/engine.md; tests/engine check that both ways agree.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import NamedTuple

from handrail.model import Context, Step, Workflow


class Plan(NamedTuple):
    workflow: Workflow  # held: its id stays its own while the plan is kept
    # (id, the step or None for a loop, its runCondition's test or None), in order
    sequence: tuple[tuple[str, Step | None, Callable[[Context], bool] | None], ...]
    in_loops: frozenset[str]  # steps and loops inside a loop: done, they need a running one


def first_step(workflow: Workflow, done: Set[str], context: Context) -> Step | None:
    """The step the walk finds for a call with no loop running, or None when this cannot
    tell (the full walk then answers)."""
    plan = _plans.get(id(workflow))
    if plan is None or plan.workflow is not workflow:
        plan = _plan(workflow)
    if done and not plan.in_loops.isdisjoint(done):
        return None  # the walk refuses it (state): the full walk words why
    for sid, step, holds in plan.sequence:
        if sid in done:
            continue
        if step is None:  # a loop not done: skipped only when its runCondition fails
            if holds is not None and not holds(context):
                continue
            return None
        if holds is None or holds(context):
            return step
    return None


LIMIT = 256  # workflows; a reload leaves old ones behind, so the table starts again when full
_plans: dict[int, Plan] = {}


def _plan(workflow: Workflow) -> Plan:
    sequence = []
    for sid in workflow.sequence:
        node = workflow.nodes[sid]
        holds = node.run_condition.holds if node.run_condition is not None else None
        sequence.append((sid, node if isinstance(node, Step) else None, holds))
    in_loops = frozenset(sid for sid, node in workflow.nodes.items() if node.loop is not None)
    plan = Plan(workflow, tuple(sequence), in_loops)
    if len(_plans) >= LIMIT:
        _plans.clear()
    _plans[id(workflow)] = plan
    return plan
