"""`handrail runs migrate` on runs in a tree (spec/runs.md, "Migration"): a waiting
parent keeps what it waits on, and a branch does not move on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.service.core import Service, later_runs
from tests.runs.test_tree import FILES, _finish, _waiting_parent
from tests.runs.workflows import review_files, write


def _served(tmp: Path) -> tuple[Service, str]:
    url = f"sqlite:///{tmp / 'runs.db'}"
    write(tmp / "flows", review_files(max_parallel=3))
    return Service(load_catalog(tmp / "flows", bundled=False), runs=later_runs(url)), url


def _newer(tmp: Path, change: Any = None) -> Path:
    newer = review_files(max_parallel=3)
    newer["version"] = "1.0.1"
    newer["steps"][2]["prompt"] = "Report on every file, briefly."
    if change is not None:
        change(newer)
    write(tmp / "v2", newer)
    return tmp / "v2"


def _migrate(capsys: pytest.CaptureFixture[str], url: str, flows: Path, run_id: str) -> tuple[int, str]:
    argv = ["runs", "migrate", run_id, "--to", "1.0.1", "--no-bundled", "--workflows", str(flows)]
    code = main([*argv, "--database", url])
    out, err = capsys.readouterr()
    return code, out + err


def test_a_waiting_parent_migrated_after_its_list_was_emptied_still_waits_on_every_branch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service, url = _served(tmp_path)
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        parent, ids = waiting["runId"], [b["runId"] for b in waiting["branches"]]
        service.call("workflow_continue", {"runId": parent, "context": {"files": ["a.py"]}})
        code, said = _migrate(capsys, url, _newer(tmp_path), parent)
        assert code == 0, said
        assert "moved from 1.0.0 to 1.0.1" in said
        _finish(service, ids[0])
        shown = service.call("workflow_resume", {"runId": parent})
        assert shown["step"] is None
        assert shown["waitingOn"] == {"kind": "branches", "stepId": "each-file", "count": 3}
        assert [b["status"] for b in shown["branches"]] == ["completed", "active", "active"]
        for branch in ids[1:]:
            _finish(service, branch)
        done = service.call("workflow_resume", {"runId": parent})
        assert done["step"]["id"] == "report" and done["workflowVersion"] == "1.0.1"
        assert done["step"]["prompt"].startswith("Report on every file, briefly.")
        assert [r["status"] for r in done["context"]["reviews"]] == ["completed"] * 3
    finally:
        service.close()


def test_a_waiting_parent_whose_loop_is_gone_renamed_or_sequential_in_the_newer_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def gone(flow: dict[str, Any]) -> None:
        del flow["steps"][1]

    def sequential(flow: dict[str, Any]) -> None:
        loop = flow["steps"][1]["loop"]
        for key in ("parallel", "maxParallel", "as"):
            loop.pop(key)

    service, url = _served(tmp_path)
    try:
        parent = _waiting_parent(service, tmp_path, FILES)["runId"]
        cases = [
            (gone, [], "which version 1.0.1 does not have"),
            (sequential, [], "which is of another kind in version 1.0.1"),
            (None, ["--map", "each-file=collect"], "which the --map renames"),
        ]
        for index, (change, extra, reason) in enumerate(cases):
            flows = _newer(tmp_path / str(index), change)
            argv = ["runs", "migrate", parent, "--to", "1.0.1", "--no-bundled", "--workflows", str(flows)]
            code = main([*argv, *extra, "--database", url])
            said = "".join(capsys.readouterr())
            assert code == 1, said
            waits = "it waits on the branches of loop `each-file`"
            assert f"run {parent} cannot migrate: {waits}, {reason}" in said
        assert service.runs.store.get(parent).workflow_version == "1.0.0"  # type: ignore[union-attr]
    finally:
        service.close()


def test_a_branch_is_not_migrated_on_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service, url = _served(tmp_path)
    try:
        waiting = _waiting_parent(service, tmp_path, FILES)
        branch = waiting["branches"][1]["runId"]
        code, said = _migrate(capsys, url, _newer(tmp_path), branch)
        assert code == 1
        assert (
            f"run {branch} cannot migrate: it is branch 1 of step `each-file` of run {waiting['runId']}; "
            "a run below another stays on the version it started on" in said
        )
        assert service.runs.store.get(branch).workflow_version == "1.0.0"  # type: ignore[union-attr]
    finally:
        service.close()
