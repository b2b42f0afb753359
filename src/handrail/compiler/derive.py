"""The last stage of a compile: what is derived from the workflow for the engine and the
wire, made once and kept on it (`Workflow.derived`, an `engine.derived.Derived`).

The engine reads it; nothing derived from a workflow is kept anywhere else, so it
lives and dies with its workflow (the catalog's LRU of compiled workflows bounds them).
"""

from __future__ import annotations

import dataclasses

from handrail.engine.derived import Derived, PlanEntry
from handrail.engine.guidance import compose, render_view, same_in_every_context
from handrail.engine.result_json import wire
from handrail.engine.results import Shown
from handrail.model.codec import Encoded
from handrail.model.workflow import Step, Workflow


def derive(workflow: Workflow) -> Workflow:
    """`workflow` with its derived data."""
    return dataclasses.replace(workflow, derived=_derived(workflow))


def _derived(workflow: Workflow) -> Derived:
    plan: list[PlanEntry] = []
    for sid in workflow.sequence:
        node = workflow.nodes[sid]
        condition = node.run_condition
        holds = condition.holds if condition is not None else None
        plan.append((sid, node if isinstance(node, Step) else None, holds, condition))
    in_loops = frozenset(sid for sid, node in workflow.nodes.items() if node.loop is not None)
    firsts = _may_come_first(workflow)
    shown: dict[str, Shown | tuple[Shown, Shown]] = {}
    for sid, node in workflow.nodes.items():
        if not isinstance(node, Step) or not same_in_every_context(node):
            continue
        if isinstance(node.confirmation, bool):
            shown[sid] = _shown(workflow, node, node.confirmation, sid in firsts)
        else:
            shown[sid] = (
                _shown(workflow, node, False, sid in firsts),
                _shown(workflow, node, True, sid in firsts),
            )
    return Derived(tuple(plan), in_loops, shown, Encoded(workflow.document))


def _shown(workflow: Workflow, step: Step, requires_confirmation: bool, may_come_first: bool) -> Shown:
    view = render_view(step, {}, requires_confirmation)  # no template: the context is never read
    later = first = None
    if step.loop is None:  # inside a loop, guidance tells the iteration: composed per call
        later = compose(workflow, step, view, (), first=False, requires_confirmation=requires_confirmation)
        if may_come_first:
            first = compose(workflow, step, view, (), first=True, requires_confirmation=requires_confirmation)
    return Shown(
        view,
        wire(view),
        later,
        wire(later) if later is not None else None,
        first,
        wire(first) if first is not None else None,
    )


def _may_come_first(workflow: Workflow) -> set[str]:
    """The top-level steps a first call (nothing done) can offer: those up to the first
    one that always runs."""
    found: set[str] = set()
    for sid in workflow.sequence:
        node = workflow.nodes[sid]
        if isinstance(node, Step):
            found.add(sid)
            if node.run_condition is None:
                break
    return found
