"""What the compiler derives from a workflow for the engine, once (compiler/derive.py
builds it; `Workflow.derived` holds it, so it lives and dies with its workflow).

- The plan of the usual call: the top-level ids, steps and runCondition tests side by
  side, read by the walk (walk.py) when no loop is running, nothing looked up per call.
- `document`: the workflow's source JSON as a reply splices it.
- `Shown`: the view of a step that is the same on every call (texts without templates,
  no checks, a confirmation that is no condition; or one view per outcome of a
  confirmation condition), with the guidance composed for it outside loops and the
  wire forms of both, so that a call returns the same objects and the reply splices
  bytes encoded once (benchmarks: a 5 KB step was encoded on every call otherwise).

The engine only reads these; it builds no JSON (`Wire` is filled by the compiler,
through `handrail.result_json`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from handrail.codec import Encoded
from handrail.engine.results import Guidance, StepView
from handrail.model import Condition, Context, Step, Workflow


class Wire(NamedTuple):
    """A view's or a guidance's wire form: the JSON as dicts (each answer copies the top
    level) and the same JSON encoded (spliced into replies)."""

    json: dict[str, Any]
    encoded: Encoded


@dataclass(frozen=True, slots=True)
class Shown:
    """A step's view that no context changes, the guidance composed for it outside
    every loop, and their wire forms."""

    view: StepView
    view_wire: Wire | None
    later: Guidance | None  # when a step is done already (top-level steps)
    later_wire: Wire | None
    first: Guidance | None  # on a first call (only for steps that can come first)
    first_wire: Wire | None

    def wire_of(self, value: Any) -> Wire | None:
        """The wire form of `value`, when it is one of these objects."""
        if value is self.view:
            return self.view_wire
        if value is self.later:
            return self.later_wire
        if value is self.first:
            return self.first_wire
        return None


# (id, the step or None for a loop, its runCondition's test, that runCondition)
PlanEntry = tuple[str, Step | None, Callable[[Context], bool] | None, Condition | None]


@dataclass(frozen=True, slots=True)
class Derived:
    sequence: tuple[PlanEntry, ...]  # the top-level steps and loops, in order
    in_loops: frozenset[str]  # steps and loops inside a loop: done, they need a running one
    # step id -> its shared view, for a step whose view no context changes; or, for one
    # whose confirmation is a condition, (its view when that fails, when it holds)
    shown: Mapping[str, Shown | tuple[Shown, Shown]]
    document: Encoded  # `Workflow.document` as workflow_get splices it (its quoted text made once)


def derived(workflow: Workflow) -> Derived:
    """What the compiler derived from `workflow`."""
    found: Derived = workflow.derived
    return found
