"""A run row edited past handrail, as an agent with `sqlite3` would edit it (issue 34,
row 6), is caught: every read refuses it with -32006 naming the run and what differs,
and `handrail runs verify` says it is broken. The store is real SQLite, edited with the
standard sqlite3 module while no server holds it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.home import database_file
from handrail.model.errors import StorageError
from handrail.service.core import Service
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


def started(tmp_path: Path) -> tuple[Service, str]:
    write(tmp_path / "flows", build_feature())
    workspace = tmp_path / "work"
    workspace.mkdir()
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    run = service.call(
        "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Cart", "workspace": str(workspace)}
    )
    service.call("workflow_continue", {"runId": run["runId"], "stepId": "plan", "output": "Plan: parts"})
    return service, str(run["runId"])


def edit(sql: str, *values: object) -> None:
    with sqlite3.connect(database_file()) as db:
        db.execute(sql, values)
    db.close()


def ahead(run: str) -> None:
    """Move the row's position on to the report step, past the steps between."""
    with sqlite3.connect(database_file()) as db:
        (text,) = db.execute("SELECT position FROM runs WHERE id = ?", (run,)).fetchone()
        position = json.loads(text)
        position["step"] = {**(position.get("step") or {}), "id": "report", "title": "Report"}
        db.execute("UPDATE runs SET position = ? WHERE id = ?", (json.dumps(position), run))
    db.close()


def cut_the_tail(run: str) -> None:
    """Delete the last event and copy the hash of the one before into the row."""
    with sqlite3.connect(database_file()) as db:
        (last,) = db.execute("SELECT MAX(seq) FROM run_events WHERE run_id = ?", (run,)).fetchone()
        (older,) = db.execute(
            "SELECT hash FROM run_events WHERE run_id = ? AND seq = ?", (run, last - 1)
        ).fetchone()
        db.execute("DELETE FROM run_events WHERE run_id = ? AND seq = ?", (run, last))
        db.execute("UPDATE runs SET head = ?, events = events - 1 WHERE id = ?", (older, run))
    db.close()


EDITS: dict[str, tuple[Callable[[str], None], str]] = {
    "position": (lambda run: ahead(run), "position is not as sealed"),
    "status": (lambda run: edit("UPDATE runs SET status = 'completed' WHERE id = ?", run), "status is not"),
    "workspace": (
        lambda run: edit("UPDATE runs SET workspace = '/elsewhere' WHERE id = ?", run),
        "workspace is",
    ),
    "tail": (cut_the_tail, "head (the hash of the last event) is not the one sealed"),
    "seal": (lambda run: edit("UPDATE runs SET seal = NULL WHERE id = ?", run), "keeps no seal"),
    # the gate digest a hook decides by: moved to another step, or taken away
    "gate": (
        lambda run: edit("UPDATE runs SET gate = json_set(gate, '$.step', 'report') WHERE id = ?", run),
        "gate is not as sealed",
    ),
    "no gate": (lambda run: edit("UPDATE runs SET gate = NULL WHERE id = ?", run), "gate is not as sealed"),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_a_run_row_edited_with_sqlite3_is_refused_on_read_and_broken_in_verify(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service, run = started(tmp_path)
    assert main(["runs", "verify", run]) == 0
    change, said = EDITS[what]
    service.close()
    change(run)
    service.close()
    again = Service(load_catalog(tmp_path / "flows", bundled=False))  # a server started on the store
    try:
        with pytest.raises(StorageError) as refused:
            again.call("workflow_resume", {"runId": run})
    finally:
        again.close()
    assert refused.value.code == -32006 and run in str(refused.value) and said in str(refused.value)
    capsys.readouterr()
    assert main(["runs", "verify", run, "--format", "json"]) != 0
    out = json.loads(capsys.readouterr().out)
    assert out["broken"] == 1 and said in out["runs"][0]["broken"]["problem"]
    assert main(["runs", "show", run]) != 0
    shown = capsys.readouterr()
    assert said in shown.err
    assert shown.out.startswith("TAMPERED") and said in shown.out  # the run is shown, marked
    assert main(["runs", "list"]) == 0
    assert "TAMPERED: " in capsys.readouterr().out


def test_an_owner_edited_with_sqlite3_is_refused_to_the_owner_it_now_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service, run = started(tmp_path)
    service.close()
    edit("UPDATE runs SET owner = 'mallory' WHERE id = ?", run)
    capsys.readouterr()
    assert main(["runs", "verify", run, "--format", "json"]) != 0
    assert "owner is not as sealed" in json.loads(capsys.readouterr().out)["runs"][0]["broken"]["problem"]
