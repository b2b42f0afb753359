"""What the compiler derives from a workflow is made from the workflow itself and kept on
it: the plan the walk reads is its top level, and the views it shares are the ones a
call would render."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.compiler import compile_path
from handrail.engine.derived import derived
from handrail.engine.guidance import render_view
from handrail.model.workflow import Step, Workflow
from tests.conftest import bundled_files


def compiled(path: Path) -> Workflow:
    workflow = compile_path(path).workflow
    assert workflow is not None
    return workflow


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_the_plan_is_the_top_level_in_order_with_each_run_condition(path: Path) -> None:
    workflow = compiled(path)
    expected = []
    for sid in workflow.sequence:
        node = workflow.nodes[sid]
        condition = node.run_condition
        step = node if isinstance(node, Step) else None
        expected.append((sid, step, condition.holds if condition is not None else None, condition))
    assert list(derived(workflow).sequence) == expected
    assert derived(workflow).in_loops == {sid for sid, n in workflow.nodes.items() if n.loop is not None}


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_a_shared_view_is_the_view_a_call_would_render(path: Path) -> None:
    workflow = compiled(path)
    for sid, shown in derived(workflow).shown.items():
        step = workflow.nodes[sid]
        assert isinstance(step, Step)
        for one in shown if isinstance(shown, tuple) else (shown,):
            fresh = render_view(step, {"unrelated": 1}, one.view.require_confirmation)
            assert one.view == fresh
            assert one.view_wire is not None and one.view_wire.encoded.value() == one.view_wire.json


def test_the_content_hash_is_the_documents_and_the_compiler_makes_it() -> None:
    import hashlib

    workflow = compiled(bundled_files()[0])
    assert workflow.content_hash == hashlib.sha256(workflow.document).hexdigest()
    assert derived(workflow).document.data == workflow.document
