"""A run row edited past handrail and sealed again, as someone with the store could
(the seal holds no secret), is still caught: `handrail runs verify` replays the run's
events and names each field of the row they do not give. The store is real SQLite,
edited with the standard sqlite3 module while no server holds it; the seal is
recomputed with the store's own function."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.home import database_file
from handrail.service.core import Service
from handrail.store.open import open_store
from handrail.store.rows import sealed
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


def started(tmp_path: Path) -> str:
    """A run two steps on: its plan accepted, its parts set, the first part built."""
    write(tmp_path / "flows", build_feature())
    workspace = tmp_path / "work"
    workspace.mkdir()
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        run = service.call(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Cart", "workspace": str(workspace)}
        )
        run_id = str(run["runId"])
        service.call("workflow_continue", {"runId": run_id, "stepId": "plan", "output": "Plan: parts"})
        service.call("workflow_continue", {"runId": run_id, "context": {"parts": ["a", "b"]}})
        service.call("workflow_continue", {"runId": run_id, "stepId": "build", "output": "Built a"})
    finally:
        service.close()
    return run_id


def sql(statement: str, *values: object) -> None:
    with sqlite3.connect(database_file()) as db:
        db.execute(statement, values)
    db.close()


def resealed(run_id: str) -> None:
    """The row's seal made again over the row as it now is, as the store makes it."""
    store = open_store(f"sqlite:///{database_file()}")
    try:
        run = store.get(run_id)
        assert run is not None and run.tampered  # the edit is caught by the seal, until...
        seal = sealed(run, run.head, run.events)
    finally:
        store.close()
    sql("UPDATE runs SET seal = ? WHERE id = ?", seal, run_id)


def position_ahead(run_id: str) -> None:
    with sqlite3.connect(database_file()) as db:
        (text,) = db.execute("SELECT position FROM runs WHERE id = ?", (run_id,)).fetchone()
        position = json.loads(text)
        position["step"] = {**position["step"], "id": "report", "title": "Report"}
        position["completedSteps"] = [*position["completedSteps"], "build"]
        db.execute("UPDATE runs SET position = ? WHERE id = ?", (json.dumps(position), run_id))
    db.close()


def loop_moved(run_id: str) -> None:
    with sqlite3.connect(database_file()) as db:
        (text,) = db.execute("SELECT position FROM runs WHERE id = ?", (run_id,)).fetchone()
        position = json.loads(text)
        position["state"]["loops"][0]["iteration"] += 1
        db.execute("UPDATE runs SET position = ? WHERE id = ?", (json.dumps(position), run_id))
    db.close()


def tail_cut(run_id: str) -> None:
    """The last event deleted, the hash of the one before copied into the row."""
    with sqlite3.connect(database_file()) as db:
        (last,) = db.execute("SELECT MAX(seq) FROM run_events WHERE run_id = ?", (run_id,)).fetchone()
        (older,) = db.execute(
            "SELECT hash FROM run_events WHERE run_id = ? AND seq = ?", (run_id, last - 1)
        ).fetchone()
        db.execute("DELETE FROM run_events WHERE run_id = ? AND seq = ?", (run_id, last))
        db.execute("UPDATE runs SET head = ?, events = events - 1 WHERE id = ?", (older, run_id))
    db.close()


def digest_loosened(run_id: str) -> None:
    """The gate digest a hook decides by, made to allow every edit and command."""
    with sqlite3.connect(database_file()) as db:
        (text,) = db.execute("SELECT gate FROM runs WHERE id = ?", (run_id,)).fetchone()
        digest = json.loads(text)
        digest["rules"] = {"allow": ["read", "edit:*", "shell:*"], "deny": []}
        db.execute("UPDATE runs SET gate = ? WHERE id = ?", (json.dumps(digest), run_id))
    db.close()


EDITS: dict[str, tuple[Callable[[str], None], str]] = {
    "position": (position_ahead, "position is at step `report` in the row, at `build` by its events"),
    "loop state": (loop_moved, "loop state is"),
    "status": (
        lambda r: sql("UPDATE runs SET status = 'completed' WHERE id = ?", r),
        "status is `completed` in the row, `active` by its events",
    ),
    "owner": (
        lambda r: sql("UPDATE runs SET owner = 'mallory' WHERE id = ?", r),
        "owner is `mallory` in the row, `local` by its events",
    ),
    "workspace": (
        lambda r: sql("UPDATE runs SET workspace = '/elsewhere' WHERE id = ?", r),
        "workspace is `/elsewhere` in the row",
    ),
    "the log's tail": (tail_cut, "accepted is 2 in the row, 1 by its events"),
    "gate digest": (digest_loosened, "the gate digest (the step's rules a hook decides by) is not what"),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_a_row_edited_and_sealed_again_fails_verify_naming_what_its_events_do_not_give(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = started(tmp_path)
    assert main(["runs", "verify", run]) == 0
    change, said = EDITS[what]
    change(run)
    resealed(run)
    store = open_store(f"sqlite:///{database_file()}")
    try:
        found = store.get(run)
        assert found is not None and found.tampered == ()  # the seal alone no longer sees it
    finally:
        store.close()
    capsys.readouterr()
    assert main(["runs", "verify", run, "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    problem = out["runs"][0]["broken"]["problem"]
    assert out["broken"] == 1 and "the run row is not what its events give" in problem
    assert said in problem
    assert main(["runs", "show", run]) == 1  # shown, marked
    shown = capsys.readouterr()
    assert shown.out.startswith("TAMPERED: the run row is not what its events give") and said in shown.out
    assert f"run {run}" in shown.out and said in shown.err


def test_a_run_left_as_its_events_made_it_verifies_by_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = started(tmp_path)
    capsys.readouterr()
    assert main(["runs", "verify", run]) == 0
    assert "verified" in capsys.readouterr().out
