"""`handrail runs list/show/abandon`, through `handrail.cli.main`, over runs made by the
same service the MCP tools use."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.model.errors import StorageError
from handrail.service.core import Service
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


@pytest.fixture
def made(tmp_path: Path) -> dict[str, Any]:
    """Two runs in the default database (the test's own HANDRAIL_HOME): one with a rejected
    attempt and an accepted step, one completed."""
    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    first = service.call(
        "workflow_start",
        {
            "workflowId": WORKFLOW_ID,
            "goal": "Add a flag",
            "workspace": str(tmp_path),
            "context": {"parts": ["a"]},
        },
    )["runId"]
    service.call("workflow_continue", {"runId": first, "stepId": "plan", "output": "No plan here"})
    service.call("workflow_continue", {"runId": first, "stepId": "plan", "output": "Plan: one part."})
    done = service.call(
        "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Quick", "workspace": str(tmp_path)}
    )
    done_id = done["runId"]
    service.call("workflow_continue", {"runId": done_id, "stepId": "plan", "output": "Plan: none."})
    blocked = service.call("workflow_continue", {"runId": done_id, "context": {"parts": []}})  # context only
    assert blocked["step"]["id"] == "report"
    service.call("workflow_continue", {"runId": done_id, "stepId": "report", "output": "Nothing to build."})
    service.close()
    return {"first": first, "done": done_id, "workspace": str(tmp_path)}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_list_shows_every_run_newest_first_and_filters_by_status(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "runs", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(made["done"]) and "completed" in lines[0]
    assert lines[1].startswith(made["first"]) and "active" in lines[1] and "build" in lines[1]
    assert lines[-1] == "2 runs"
    code, out, _ = run_cli(capsys, "runs", "list", "--status", "active", "--format", "json")
    listed = json.loads(out)["runs"]
    assert [r["runId"] for r in listed] == [made["first"]]
    assert listed[0]["currentStep"] == {"id": "build", "title": "Build a part"}
    assert listed[0]["owner"] == "local" and listed[0]["completed"] == 1
    code, out, _ = run_cli(
        capsys, "runs", "list", "--workspace", os.path.join(made["workspace"], "elsewhere")
    )
    assert out.strip() == "0 runs"


def test_runs_show_prints_the_timeline_with_outputs_and_issues(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "runs", "show", made["first"], "--format", "json")
    assert code == 0
    shown = json.loads(out)
    assert shown["run"]["runId"] == made["first"] and shown["run"]["status"] == "active"
    events = shown["events"]
    assert [e["type"] for e in events] == ["started", "rejected", "accepted"]
    assert events[1]["stepId"] == "plan" and events[1]["output"] == "No plan here"
    assert events[1]["issues"] == ["Start the plan with 'Plan:'"]
    assert events[2]["output"] == "Plan: one part." and all(e["at"].endswith("Z") for e in events)
    code, text, _ = run_cli(capsys, "runs", "show", made["first"])
    assert (
        "rejected  plan" in text and "! Start the plan with 'Plan:'" in text and "| Plan: one part." in text
    )
    code, md, _ = run_cli(capsys, "runs", "show", made["first"], "--format", "md")
    assert md.startswith(f"# Run `{made['first']}`") and "### " in md and "```text\nNo plan here\n```" in md


def test_runs_abandon_ends_a_run_and_refuses_one_that_is_over(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "runs", "abandon", made["first"], "--reason", "Changed my mind")
    assert code == 0 and "abandoned" in out
    code, out, _ = run_cli(capsys, "runs", "show", made["first"], "--format", "json")
    last = json.loads(out)["events"][-1]
    assert last["type"] == "abandoned" and last["reason"] == "Changed my mind"
    code, _, err = run_cli(capsys, "runs", "abandon", made["done"])
    assert (code, err) == (1, "handrail runs abandon: Run is not active: the run is already completed\n")
    code, _, err = run_cli(capsys, "runs", "abandon", made["first"])
    assert (code, err) == (1, "handrail runs abandon: Run is not active: the run is already abandoned\n")


def test_approving_a_run_no_person_is_asked_about_says_why_once(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for verb in ("approve", "decline"):
        code, _, err = run_cli(capsys, "runs", verb, made["first"])
        assert (code, err) == (
            1,
            f"handrail runs {verb}: run {made['first']} waits for no approval: it is active, "
            "and no submission of its current step is waiting for a person\n",
        )


@pytest.mark.slow
def test_runs_commands_name_an_unknown_run_and_a_bad_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = Path(os.environ["HANDRAIL_HOME"]) / "handrail.db"
    for verb in ("show", "approve", "decline", "abandon"):
        code, _, err = run_cli(capsys, "runs", verb, "run_nope1234")
        assert (code, err) == (
            1,
            f"handrail runs {verb}: Run not found: `run_nope1234` (no run database at {default})\n",
        )
    service = Service(load_catalog(tmp_path, bundled=False))
    service.runs.store.list_runs()  # the database, empty
    service.close()
    for verb in ("show", "approve", "decline", "abandon"):
        code, _, err = run_cli(capsys, "runs", verb, "run_nope1234")
        assert (code, err) == (
            1,
            f"handrail runs {verb}: Run not found: `run_nope1234` (`handrail runs list` shows the runs)\n",
        )
    code, _, err = run_cli(capsys, "runs", "list", "--database", "postgresql://u:pw@host/db")
    assert code == 1 and "cannot open the run database postgresql://u@host/db" in err and "pw" not in err
    database = tmp_path / "other.db"
    code, out, _ = run_cli(capsys, "runs", "list", "--database", f"sqlite:///{database}")
    assert code == 0 and out == "0 runs\n" and not database.exists()


def test_reading_commands_never_create_a_database_or_its_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "new" / "folders" / "runs.db"
    url = f"sqlite:///{database}"
    code, out, err = run_cli(capsys, "runs", "list", "--database", url)
    assert (code, out, err) == (0, "0 runs\n", f"handrail runs list: no run database at {database} yet\n")
    code, out, _ = run_cli(capsys, "runs", "list", "--database", url, "--format", "json")
    assert code == 0 and json.loads(out) == {"runs": []}
    for verb in ("show", "approve", "decline", "abandon"):
        code, _, err = run_cli(capsys, "runs", verb, "run_nope1234", "--database", url)
        assert (code, err) == (
            1,
            f"handrail runs {verb}: Run not found: `run_nope1234` (no run database at {database})\n",
        )
    code, _, _ = run_cli(capsys, "runs", "list")  # the default database, in HANDRAIL_HOME
    assert code == 0
    assert not (tmp_path / "new").exists()
    assert list(Path(os.environ["HANDRAIL_HOME"]).iterdir()) == []


def test_a_database_path_is_shown_with_one_leading_slash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", "utf-8")
    monkeypatch.setenv("HANDRAIL_HOME", str(blocked / "home"))
    service = Service(load_catalog(tmp_path, bundled=False))
    with pytest.raises(StorageError) as refused:
        service.runs.store.list_runs()
    service.close()
    assert f"cannot create the run database {blocked}/home/handrail.db:" in refused.value.message
    assert "//" not in refused.value.message


@pytest.mark.parametrize("limit", ["-1", "many"])
def test_a_limit_that_is_not_a_count_is_a_usage_error(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "runs", "list", "--limit", limit)
    assert (code, out) == (2, "")
    assert err == (
        f"handrail runs list: argument --limit: {limit!r} is not a count of runs (0 or more) "
        "(see `handrail runs list --help`)\n"
    )


def test_runs_commands_given_bytes_that_are_not_utf8_say_which_argument_and_exit_2(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = "caf\udce9"  # how Python hands over the byte 0xe9 of a Latin-1 command line
    for argv, named in (
        (["runs", "show", bad], "RUN"),
        (["runs", "abandon", bad], "RUN"),
        (["runs", "list", "--workspace", f"/tmp/{bad}"], "--workspace"),
        (["runs", "decline", made["first"], "--comment", bad], "--comment"),
        (["runs", "approve", made["first"], "--as", bad], "--as"),
    ):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2, (argv, err)
        assert err.count("\n") == 1 and "not UTF-8" in err and named in err and "caf\\xe9" in err, err
    code, out, _ = run_cli(capsys, "runs", "show", made["first"], "--format", "json")
    assert code == 0 and [e["type"] for e in json.loads(out)["events"]][-1] != "declined"


def test_runs_list_tree_and_runs_show_draw_a_parallel_loop_with_each_branch_its_holder_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.runs.workflows import REVIEW_ID, review_files

    write(tmp_path / "flows", review_files(max_parallel=2))
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    started = service.call(
        "workflow_start", {"workflowId": REVIEW_ID, "goal": "Tree", "workspace": str(tmp_path)}
    )
    parent = started["runId"]
    waiting = service.call(
        "workflow_continue",
        {"runId": parent, "stepId": "collect", "output": "Three.", "context": {"files": ["a", "b", "c"]}},
    )
    first, second = (b["runId"] for b in waiting["branches"][:2])
    service.call("workflow_continue", {"runId": first, "stepId": "review", "output": "Reviewed a"})
    service.close()

    code, out, _ = run_cli(capsys, "runs", "list", "--tree")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(parent) and "waiting on each-file, 1 queued" in lines[0]
    assert lines[1].startswith(f"  └ #0 {first}  active") and lines[1].endswith("at note")
    assert lines[2].startswith(f"  └ #1 {second}  active") and lines[2].endswith("at review")
    assert lines[-1] == "1 tree"

    code, out, _ = run_cli(capsys, "runs", "list", "--tree", "--format", "json")
    (tree,) = json.loads(out)["runs"]
    assert tree["runId"] == parent and tree["queued"] == 1
    assert tree["waitingOn"] == {"kind": "branches", "stepId": "each-file", "count": 3}
    assert [(c["branch"], c["item"], c["status"], c["holder"]) for c in tree["children"]] == [
        (0, "a", "active", None),
        (1, "b", "active", None),
    ]

    code, out, _ = run_cli(capsys, "runs", "show", second)
    assert code == 0
    shown = out.split("\ntree\n")[1].splitlines()
    assert shown[0].strip().startswith(parent)
    assert shown[2].strip().startswith(f"└ #1 {second}") and shown[2].endswith("<- this run")
    code, out, _ = run_cli(capsys, "runs", "show", parent, "--format", "json")
    assert [c["runId"] for c in json.loads(out)["tree"]["children"]] == [first, second]
