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

The engine only reads these; it builds no JSON (`Shown` and its `Wire` forms, in
engine/results.py, are filled by the compiler through `engine/result_json.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from handrail.engine.results import Shown
from handrail.model.codec import Encoded
from handrail.model.workflow import Condition, Context, Step, Workflow

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
