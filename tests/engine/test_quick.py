"""The quick way of engine/quick.py finds what the full walk finds, or leaves it to it."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.compiler import compile_path
from handrail.engine import next_step
from handrail.engine.quick import first_step
from handrail.engine.walk import Walk
from handrail.errors import StateError
from handrail.model import Condition, Loop, Step, Workflow
from tests.conftest import CORPUS_MISSING, bundled_files, corpus_accepted


@cache
def workflows() -> tuple[Workflow, ...]:
    paths: list[Path] = bundled_files() + ([] if CORPUS_MISSING else corpus_accepted())
    found = [compile_path(path).workflow for path in paths]
    return tuple(w for w in found if w is not None)


def conditions(workflow: Workflow) -> list[Condition]:
    found: list[Condition] = []
    for node in workflow.nodes.values():
        found += [c for c in (node.run_condition, getattr(node, "condition", None)) if c is not None]
    return found


Call = tuple[Workflow, list[str], dict[str, Any]]


@st.composite
def calls(draw: st.DrawFn) -> Call:
    workflow = draw(st.sampled_from(workflows()))
    everything = list(workflow.nodes)
    done = draw(st.lists(st.sampled_from(everything), unique=True, max_size=len(everything)))
    context: dict[str, Any] = {}
    for condition in conditions(workflow):
        for name, wanted in condition.looks_for:
            choices = [*wanted, "other", 3, True, None]
            if draw(st.booleans()):
                context[name.split(".")[0]] = draw(st.sampled_from(choices))
    return workflow, done, context


@settings(max_examples=400, deadline=None)
@given(call=calls())
def test_the_quick_way_finds_the_step_the_full_walk_finds(call: Call) -> None:
    workflow, done, context = call
    quick = first_step(workflow, set(done), context)
    if quick is None:
        return  # left to the full walk
    walk = Walk(workflow, context, list(dict.fromkeys(done)), set(done), [])
    assert walk.walk(workflow.sequence, 0) is quick
    # and the rest of the answer is what the full walk would give with it
    assert (walk.depth, walk.frames, walk.notes, walk.completed) == (0, [], [], list(dict.fromkeys(done)))


def test_the_quick_way_answers_the_usual_calls_of_a_workflow_without_loops() -> None:
    workflow = next(w for w in workflows() if not any(isinstance(n, Loop) for n in w.nodes.values()))
    first = workflow.nodes[workflow.sequence[0]]
    assert isinstance(first, Step)
    if first.run_condition is None:
        assert first_step(workflow, set(), {}) is first
    result = next_step(workflow, [], {}, state={"loops": []})
    assert result.step is not None and result.step.id == next_step(workflow, [], {}).step.id  # type: ignore[union-attr]


def test_a_step_done_inside_a_loop_that_is_not_running_is_still_refused() -> None:
    workflow = next(
        (w for w in workflows() if any(n.loop is not None for n in w.nodes.values())),
        None,
    )
    if workflow is None:
        pytest.skip("no workflow with a loop here")
    inside = next(sid for sid, n in workflow.nodes.items() if n.loop is not None)
    assert first_step(workflow, {inside}, {}) is None
    with pytest.raises(StateError):
        next_step(workflow, [inside], {})
