"""`handrail runs list` and `runs show` only read, so they skip the whole-file check of
the database that writing commands make (its cost follows the file's size): damage in
the pages they read is still named in one line, and damage elsewhere stops the next
command that writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.service.core import Service, later_runs
from handrail.store.urls import sqlite_url
from tests.helpers.damage import damage_table
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """One active run, made through the tools, with a step accepted."""
    path = tmp_path / "runs.db"
    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=later_runs(sqlite_url(path)))
    run = service.call("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Add a flag"})["runId"]
    service.call("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: one part."})
    service.close()
    (path.parent / "run").write_text(run)
    return path


def made(database: Path) -> str:
    return (database.parent / "run").read_text()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_and_show_answer_from_a_file_damaged_only_where_they_do_not_read(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = made(database)
    damage_table(database, "stats_visits")
    damaged = database.read_bytes()
    url = sqlite_url(database)

    code, out, _ = run_cli(capsys, "runs", "list", "--database", url)
    assert code == 0 and run in out and "1 run" in out
    code, out, _ = run_cli(capsys, "runs", "show", run, "--database", url)
    assert code == 0 and out.startswith(f"run {run}") and "Plan: one part." in out

    code, out, err = run_cli(capsys, "runs", "abandon", run, "--database", url)
    assert (code, out) == (1, "")
    assert str(database) in err and "is damaged" in err and len(err.splitlines()) == 1
    assert database.read_bytes() == damaged


@pytest.mark.parametrize("verb", ["list", "show"])
def test_list_and_show_name_damage_in_the_pages_they_read_in_one_line(
    verb: str, database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = (made(database),) if verb == "show" else ()
    damage_table(database, "runs")
    code, out, err = run_cli(capsys, "runs", verb, *shown, "--database", sqlite_url(database))
    assert (code, out) == (1, "")
    assert str(database) in err and "is damaged" in err and len(err.splitlines()) == 1
