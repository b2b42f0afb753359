"""`handrail stats`, through `handrail.cli.main`: the golden event log of
spec/cases/stats/ gives its exact figures in every format on SQLite and on a real
PostgreSQL, and runs made through the MCP tools are counted as they happened."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.service.core import Service
from handrail.store.urls import sqlite_url
from tests.helpers.event_log import CASE, fill_case
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

FORMATS = {"json": "expected.json", "text": "expected.txt", "md": "expected.md"}


def stats(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "postgresql"])
def golden_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The golden event log in a fresh store of each kind."""
    if request.param == "sqlite":
        url = sqlite_url(tmp_path / "golden.db")
    else:
        url = request.getfixturevalue("postgres_url")
    fill_case(url)
    return url


@pytest.mark.parametrize("form", FORMATS)
def test_the_golden_event_log_gives_its_exact_figures_in_every_format_on_both_databases(
    golden_store: str, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = stats(capsys, "demo", "--format", form, "--database", golden_store)
    assert (code, err) == (0, "")
    assert out == (CASE.parent / FORMATS[form]).read_text()


def test_the_golden_figures_are_the_ones_worked_out_by_hand(
    golden_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = stats(capsys, "demo", "--format", "json", "--database", golden_store)
    (demo,) = json.loads(out)["workflows"]
    old, new = demo["versions"]
    assert (old["version"], new["version"]) == ("1.0.0", "1.1.0")
    assert old["runs"] == {"started": 3, "completed": 1, "abandoned": 1, "active": 1}
    understand, plan, implement, _ = old["steps"]
    # attempts 2, 3, 1 and times 180 s, 600 s, 150.5 s: nearest-rank median and p90
    assert understand["attempts"] == {"median": 2, "p90": 3, "max": 3}
    assert understand["seconds"] == {"median": 180.0, "p90": 600.0}
    assert understand["topIssues"][:2] == [
        {"message": "Missing field summary", "count": 2, "run": "run_a2"},
        {"message": "summary is too short", "count": 2, "run": "run_a2"},
    ]
    # a person declined once: two attempts; waits 600 s, 480 s, 300 s; one still waiting
    assert plan["attempts"]["max"] == 2
    assert plan["approvals"] == {"approved": 2, "declined": 1, "waitSeconds": {"median": 480.0, "p90": 600.0}}
    assert (plan["reached"], plan["accepted"], plan["active"]) == (3, 2, 1)
    assert (implement["rejectionRate"], implement["abandoned"], implement["gate"]["denied"]) == (0.75, 1, 1)
    command = old["checks"][0]
    assert (command["index"], command["type"], command["runs"], command["passRate"]) == (
        0,
        "command",
        4,
        0.25,
    )
    assert (command["timeouts"], command["durationMs"]["median"]) == (1, 1200)
    assert command["failingLines"][0] == {"line": "FAIL test_parse", "count": 2}
    # the rejection whose data holds a lone surrogate counts; its message is not read
    assert new["steps"][0]["rejected"] == 2
    assert [i["count"] for i in new["steps"][0]["topIssues"]] == [1]
    values = [{"version": "1.0.0", "value": 0.75}, {"version": "1.1.0", "value": 0.0}]
    assert {"step": "implement", "figure": "rejectionRate", "values": values} in demo["comparisons"]


def test_person_and_dates_narrow_the_runs_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = sqlite_url(tmp_path / "golden.db")
    fill_case(url)
    _, out, _ = stats(capsys, "--person", "ben", "--format", "json", "--database", url)
    started = [v["runs"]["started"] for v in json.loads(out)["workflows"][0]["versions"]]
    assert started == [1, 1]
    _, out, _ = stats(capsys, "--until", "2026-01-10", "--format", "json", "--database", url)
    assert [v["version"] for v in json.loads(out)["workflows"][0]["versions"]] == ["1.0.0"]
    _, out, _ = stats(capsys, "--since", "2026-01-10T11:00:00Z", "--until", "2026-01-10T11:59:59Z",
                      "--format", "json", "--database", url)  # fmt: skip
    assert json.loads(out)["workflows"][0]["versions"][0]["runs"]["started"] == 1
    code, out, err = stats(capsys, "elsewhere", "--database", url)  # no such workflow: a mistake
    assert (code, out) == (1, "") and err.startswith("handrail stats: no workflow `elsewhere`")


def test_a_date_that_is_not_one_is_a_usage_error_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = stats(capsys, "--until", "2026-02-30", "--database", sqlite_url(tmp_path / "x.db"))
    assert (code, out) == (2, "")
    assert err.startswith("handrail stats: --until: '2026-02-30' is not a date")


def test_runs_made_through_the_tools_are_counted_as_they_happened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    started = service.call(
        "workflow_start",
        {
            "workflowId": WORKFLOW_ID,
            "goal": "Add a flag",
            "workspace": str(tmp_path),
            "context": {"parts": []},
        },
    )
    run_id = started["runId"]
    service.call("workflow_continue", {"runId": run_id, "stepId": "plan", "output": "No plan here"})
    service.call("workflow_continue", {"runId": run_id, "stepId": "plan", "output": "Plan: one part."})
    service.call("workflow_abandon", {"runId": run_id, "reason": "enough"})
    service.close()
    code, out, _ = stats(capsys, WORKFLOW_ID, "--format", "json")
    assert code == 0
    (version,) = json.loads(out)["workflows"][0]["versions"]
    assert version["runs"] == {"started": 1, "completed": 0, "abandoned": 1, "active": 0}
    plan = next(s for s in version["steps"] if s["id"] == "plan")
    assert (plan["submissions"], plan["rejected"], plan["rejectionRate"]) == (2, 1, 0.5)
    assert plan["attempts"] == {"median": 2, "p90": 2, "max": 2}
    assert plan["topIssues"][0]["count"] == 1 and plan["topIssues"][0]["run"] == run_id
    # no parts to build: the run was left at the report, which it reached and never submitted
    assert [(s["id"], s["reached"], s["abandoned"]) for s in version["steps"]] == [
        ("plan", 1, 0),
        ("report", 1, 1),
    ]


def test_no_run_database_yet_is_said_without_making_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    code, out, err = stats(capsys, "--database", sqlite_url(missing))
    assert (code, out) == (1, "")
    assert err == f"handrail stats: no run database at {missing} yet\n"
    assert not missing.exists()


def test_stats_on_a_file_damaged_where_the_figures_are_names_the_damage_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "golden.db"
    fill_case(sqlite_url(database))
    db = sqlite3.connect(database)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'stats_visits'").fetchone()
    db.close()
    with database.open("r+b") as file:
        file.seek(page_size * (root - 1))
        file.write(b"\xa5" * page_size)
    damaged = database.read_bytes()

    code, out, err = stats(capsys, "demo", "--format", "json", "--database", sqlite_url(database))
    assert (code, out) == (1, "")
    assert str(database) in err and "is damaged" in err and len(err.splitlines()) == 1
    assert database.read_bytes() == damaged


def test_spec_stats_names_every_field_the_json_format_gives() -> None:
    import re

    def fields(value: object) -> set[str]:
        if isinstance(value, dict):
            return set(value).union(*(fields(v) for v in value.values()))
        if isinstance(value, list):
            return set().union(*(fields(v) for v in value))
        return set()

    spec = (CASE.parents[2] / "stats.md").read_text("utf-8")
    example = re.search(r"```json\n(.*?)```", spec, re.S)
    assert example is not None
    named = set(re.findall(r'"(\w+)":', example.group(1)))
    for row in (line for line in spec.splitlines() if line.startswith("| `")):
        field, meaning = row.split("|")[1:3]
        for code in re.findall(r"`([^`]+)`", field + meaning):
            named.update(re.findall(r"\w+", code))
    given = fields(json.loads((CASE.parent / FORMATS["json"]).read_text("utf-8")))
    assert given and given <= named, sorted(given - named)
