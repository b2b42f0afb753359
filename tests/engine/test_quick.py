"""The usual call answered from the plan alone (engine/walk.py `first_step`) finds what
the full walk finds, or leaves it to it."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.compiler import compile_path
from handrail.engine import next_step
from handrail.engine.walk import Walk, first_step
from handrail.model.errors import HandrailError, StateError
from handrail.model.workflow import Condition, Workflow
from tests.conftest import CORPUS_MISSING, bundled_files, corpus_accepted

pytestmark = pytest.mark.slow


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


def outcome(call: Call, state: Any) -> Any:
    workflow, done, context = call
    try:
        return next_step(workflow, done, context, state=state)
    except HandrailError as exc:
        return type(exc), exc.message


@settings(max_examples=300, deadline=None)
@given(call=calls(), state=st.sampled_from([None, {"loops": []}, ()]))
def test_next_step_gives_the_same_whole_answer_with_or_without_the_quick_way(call: Call, state: Any) -> None:
    quick = outcome(call, state)
    with patch("handrail.engine.next.first_step", lambda *args: None):  # the full walk only
        full = outcome(call, state)
    assert quick == full


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
