"""A run database written by an earlier handrail (rows as JSON text in workflow_next's
shape, statuses and event types as plain words) is read and carried on as it is."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.service.core import Service, later_runs
from handrail.store.schema import migrations, statements
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

RUN = "run_" + "0" * 32
AT = "2026-01-01T00:00:00.000Z"
# the row as the store wrote it: the run in its loop's first iteration, over parts a and b
POSITION = {
    "completedSteps": ["plan"],
    "state": {"loops": [{"id": "parts", "iteration": 1}]},
    "step": {"id": "build", "title": "Build a part", "prompt": "Build a."},
    "guidance": {"prompt": "Build a.", "validationCriteria": ["Say what you built"]},
    "isComplete": False,
    "loop": {"id": "parts", "title": "Each part", "iteration": 1, "part": "a"},
}


def old_database(path: Path, folder: Path) -> str:
    document = json.dumps(build_feature()).encode()
    source = hashlib.sha256(document).hexdigest()  # a pinned version's name: its document's hash
    db = sqlite3.connect(path)
    # schema version 1: the runs and events tables as the first handrail wrote them
    for version, migration in enumerate(migrations("sqlite")[:1], 1):
        for statement in statements(migration):
            db.execute(statement)
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)"
        )
        db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, AT))
    db.execute("INSERT INTO workflow_sources VALUES (?, ?, ?, ?)", (source, WORKFLOW_ID, document, AT))
    row = (RUN, "local", str(folder), WORKFLOW_ID, "1.0.0", source, "Old goal", "active")
    db.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (*row, json.dumps({"parts": ["a", "b"]}), json.dumps(POSITION), 1, AT, AT, 3, 2),
    )
    for seq, kind, step, data in (
        (1, "started", None, {"goal": "Old goal"}),
        (2, "accepted", "plan", {"output": "Plan: two parts.", "title": "Plan"}),
    ):
        db.execute(
            "INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (RUN, seq, kind, AT, "local", step, json.dumps(data)),
        )
    db.commit()
    db.close()
    return f"sqlite:///{path}"


def test_a_run_an_earlier_handrail_wrote_goes_on_from_its_loop_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = old_database(tmp_path / "old.db", tmp_path)
    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=later_runs(url))
    try:
        resumed = service.call("workflow_resume", {"runId": RUN})
        assert (resumed["status"], resumed["step"]["id"], resumed["loop"]["part"]) == ("active", "build", "a")
        assert [r["stepId"] for r in resumed["recap"]] == ["plan"]
        after = service.call("workflow_continue", {"runId": RUN, "stepId": "build", "output": "Built a"})
        assert after["accepted"] is True
        assert (after["step"]["id"], after["loop"]["iteration"], after["loop"]["part"]) == ("build", 2, "b")
    finally:
        service.close()
    assert main(["runs", "show", RUN, "--format", "json", "--database", url]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["status"] == "active" and shown["run"]["completed"] == 2
    assert [e["type"] for e in shown["events"]] == ["started", "accepted", "accepted"]


def test_the_events_of_a_database_from_before_the_chain_are_chained_when_it_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = old_database(tmp_path / "old.db", tmp_path)
    assert main(["runs", "verify", RUN, "--database", url]) == 0
    assert f"{RUN}  verified  2 events" in capsys.readouterr().out
    with sqlite3.connect(tmp_path / "old.db") as db:
        head = db.execute("SELECT head FROM runs WHERE id = ?", (RUN,)).fetchone()[0]
        links = [
            h for (h,) in db.execute("SELECT hash FROM run_events WHERE run_id = ? ORDER BY seq", (RUN,))
        ]
    assert len(head) == 64 and links[-1] == head and None not in links
    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=later_runs(url))
    try:  # a new event goes on from the head the upgrade wrote
        service.call("workflow_continue", {"runId": RUN, "stepId": "build", "output": "Built a"})
    finally:
        service.close()
    assert main(["runs", "verify", RUN, "--database", url]) == 0
    assert f"{RUN}  verified  3 events" in capsys.readouterr().out
