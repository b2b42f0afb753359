"""The dashboard's display helpers without a server: times in the units people read, a
banner only the server words, a run's branches grouped under it, checks by their label."""

from __future__ import annotations

import pytest

from handrail.compiler import compile_text
from handrail.dashboard.insights import check_labels
from handrail.dashboard.views import NOTES, duration, grouped, note_code
from handrail.model.errors import InvalidParams, RunNotActive, RunNotFound
from handrail.model.runs import RunRecord, RunStatus
from handrail.runs.refusals import NotAllowedToDecide


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (None, "–"),
        (0, "0 ms"),
        (0.0004, "0 ms"),
        (0.0005, "1 ms"),
        (0.4, "400 ms"),
        (0.9994, "999 ms"),
        (0.9995, "1.0 s"),  # never "1000 ms"
        (4.25, "4.3 s"),
        (9.94, "9.9 s"),
        (9.95, "10 s"),  # never "10.0 s"
        (59.4, "59 s"),
        (59.5, "1 min"),  # never "60 s"
        (61, "1 min 1 s"),
        (599.4, "9 min 59 s"),
        (599.5, "10 min"),
        (629, "10 min"),
        (630, "11 min"),
        (3569, "59 min"),
        (3570, "1 h"),  # never "60 min"
        (3630, "1 h 1 min"),
        (7500, "2 h 5 min"),
        (-2, "-2.0 s"),
    ],
)
def test_a_time_is_said_in_the_unit_people_read_it_in_rounded_into_the_next_at_each_boundary(
    seconds: float | None, said: str
) -> None:
    assert duration(seconds) == said


def test_each_failed_decision_has_a_code_and_every_code_its_fixed_words() -> None:
    raised = [
        NotAllowedToDecide("not yours", {"rule": "approvers"}),
        RunNotActive(data={"runId": "r"}),
        RunNotFound(data={"runId": "r"}),
        InvalidParams(data={"details": "<b>planted</b>"}),
    ]
    codes = [note_code(exc) for exc in raised]
    assert codes == ["not-allowed", "not-waiting", "not-found", "refused"]
    assert set(codes) | {"approved", "declined", "abandoned"} == set(NOTES)
    assert all("planted" not in text for text in NOTES.values())


def run(
    run_id: str, parent: str | None = None, branch: int | None = None, step: str | None = None
) -> RunRecord:
    return RunRecord(
        id=run_id,
        owner="local",
        workspace="/w",
        workflow_id="wf",
        workflow_version="1.0.0",
        source_hash="h",
        goal=f"goal of {run_id}",
        status=RunStatus.ACTIVE,
        context={},
        position={},
        accepted=0,
        created_at=f"2026-01-01T00:00:0{run_id[-1]}Z",
        updated_at="2026-01-01T00:00:00Z",
        version=1,
        parent_id=parent,
        parent_step=step,
        branch=branch,
    )


def test_a_runs_branches_and_children_follow_it_in_order_and_an_orphan_stands_alone() -> None:
    # most recently updated first, as the store lists them: branches before their parent
    listed = [
        run("b2", "p1", 1, "each"),
        run("p2"),
        run("b1", "p1", 0, "each"),
        run("p1"),
        run("c1", "b1", None, "sub"),
        run("o1", "gone", 0, "each"),  # its parent is not in the list
    ]
    rows = grouped(listed, lambda r: {"runId": r.id})
    assert [(r["runId"], r["depth"]) for r in rows] == [
        ("p2", 0),
        ("p1", 0),
        ("b1", 1),
        ("c1", 2),
        ("b2", 1),
        ("o1", 0),
    ]
    below = {r["runId"]: r.get("below") for r in rows}
    assert below["b1"] == "branch #0 of each" and below["c1"] == "child run at sub"
    assert below["p1"] is None and below["o1"] == "branch #0 of each"
    assert [r["parentId"] for r in rows][:3] == [None, None, "p1"]


def test_a_checks_label_is_its_message() -> None:
    text = """{"id": "labelled", "name": "L", "description": "d", "version": "1.0.0", "steps": [
      {"id": "verify", "title": "Verify", "prompt": "p", "checks": [
        {"type": "command", "run": ["pytest", "-q"], "message": "The tests pass"},
        {"type": "git", "changes": true, "message": "Something changed"}]}]}"""
    workflow = compile_text(text, "<labelled>").workflow
    assert workflow is not None
    assert check_labels(workflow) == {("verify", 0): "The tests pass", ("verify", 1): "Something changed"}
    assert check_labels(None) == {}
