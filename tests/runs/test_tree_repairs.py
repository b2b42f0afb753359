"""A tree left half-moved heals when anyone looks (spec/runs.md, "Exactly once, across
servers and crashes"): branches open past their parent's fan-in are cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handrail.model.errors import HandrailError
from handrail.model.request import Request
from handrail.runs.tree_writes import TreeWrites
from tests.runs.test_tree import FILES, _finish, _service, _waiting_parent
from tests.runs.workflows import review_files

B = Request(session="stdio:agent-b")


def _crash_after_fan_in(service: Any, monkeypatch: Any, branch: str) -> None:
    """The branch completes and the parent moves on; the server dies before cancelling."""

    def killed(self: TreeWrites, run_id: str, reason: str) -> None:
        raise KeyboardInterrupt("server killed after the parent moved on")

    monkeypatch.setattr(TreeWrites, "abandon", killed)
    with pytest.raises(KeyboardInterrupt):
        _finish(service, branch)
    monkeypatch.undo()


def test_branches_left_open_by_a_crash_after_fan_in_are_cancelled_when_read(
    tmp_path: Path, monkeypatch: Any
) -> None:
    service = _service(tmp_path, review_files(max_parallel=3, at_least=1))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        ids = [b["runId"] for b in waiting["branches"]]
        _crash_after_fan_in(service, monkeypatch, ids[0])
        parent = service.call("workflow_resume", {"runId": waiting["runId"]})
        assert parent["step"]["id"] == "report"
        assert [service.runs.store.get(i).status.value for i in ids[1:]] == ["active", "active"]  # type: ignore[union-attr]
        left = [service.call("workflow_resume", {"runId": i}) for i in ids[1:]]
        assert [r["status"] for r in left] == ["abandoned", "abandoned"]
        last = service.runs.store.events(ids[1])[-1]
        assert last.type == "abandoned"
        assert last.data["reason"] == f"cancelled: its parent run {waiting['runId']} no longer waits on it"
    finally:
        service.close()


def test_a_claim_never_hands_out_a_branch_its_parent_no_longer_waits_on(
    tmp_path: Path, monkeypatch: Any
) -> None:
    service = _service(tmp_path, review_files(max_parallel=3, at_least=1))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        ids = [b["runId"] for b in waiting["branches"]]
        _crash_after_fan_in(service, monkeypatch, ids[0])
        claimed = service.call("workflow_claim", {"runId": waiting["runId"]}, B)
        assert claimed["claimed"] is False
        assert [service.runs.store.get(i).status.value for i in ids[1:]] == ["abandoned", "abandoned"]  # type: ignore[union-attr]
    finally:
        service.close()


def test_a_step_submitted_to_a_branch_its_parent_no_longer_waits_on_is_refused(
    tmp_path: Path, monkeypatch: Any
) -> None:
    service = _service(tmp_path, review_files(max_parallel=3, at_least=1))
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        ids = [b["runId"] for b in waiting["branches"]]
        _crash_after_fan_in(service, monkeypatch, ids[0])
        with pytest.raises(HandrailError, match="abandoned"):
            service.call("workflow_continue", {"runId": ids[1], "stepId": "review", "output": "Reviewed b"})
        assert service.runs.store.get(ids[1]).status.value == "abandoned"  # type: ignore[union-attr]
    finally:
        service.close()
