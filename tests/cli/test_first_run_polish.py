"""A new user's first commands: bad values end in one line and exit 2, problems go to
stderr, exit codes say what happened, help tells the truth, and the conventions hold
(-V, --json, an unknown flag pointing to its command's --help)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.gate.hook_options import HARNESSES
from handrail.model.version import __version__
from handrail.runs.approvers import CHANNELS, default_channels
from handrail.service.core import Service
from tests.conftest import BUNDLED
from tests.helpers.http import free_port
from tests.helpers.server import Server

Capture = pytest.CaptureFixture[str]


def one_line_usage_error(argv: list[str], capsys: Capture) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    assert "Traceback" not in err and out == "", (argv, err)
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["list", "--max-file-size", "-5"],
        ["check", "--max-file-size", "-5", "workflows"],
        ["sources", "--max-file-size", "0"],
        ["graph", "coding-task", "--max-file-size", "-5"],
        ["walk", "coding-task", "--max-file-size", "-5"],
        ["start", "--max-file-size", "-5"],
        ["start", "--max-line", "-1"],
        ["start", "--max-line", "0"],
        ["list", "--max-file-size", "many"],
    ],
    ids=" ".join,
)
def test_a_limit_below_one_is_a_one_line_usage_error(argv: list[str], capsys: Capture) -> None:
    err = one_line_usage_error(argv, capsys)
    assert argv[-2] in err or argv[-1] in err


def test_list_prints_a_missing_folders_warning_on_stderr_not_among_the_listing(
    capsys: Capture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./workflows: only the folder named
    assert main(["list", "--workflows", "/nonexistent", "--no-bundled"]) == 2
    out, err = capsys.readouterr()
    assert "H002" in err and "/nonexistent" in err
    assert "H002" not in out and out.strip().splitlines()[-1] == "0 workflows"


def test_gate_doctor_exits_1_when_it_cannot_reach_the_server(capsys: Capture) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    assert main(["gate", "doctor", "--server", url]) == 1
    assert "cannot reach" in capsys.readouterr().out
    assert main(["gate", "doctor", "--server", url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert {"what": "test event", "state": report["checks"][-1]["state"]} == report["checks"][-1]
    assert main(["gate", "doctor", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


@pytest.fixture
def a_run(tmp_path: Path) -> str:
    """A coding-task run in the test's own store (its HANDRAIL_HOME)."""
    service = Service(load_catalog(BUNDLED, bundled=False))
    try:
        run = service.call(
            "workflow_start", {"workflowId": "coding-task", "goal": "Polish", "workspace": str(tmp_path)}
        )
    finally:
        service.close()
    run_id: str = run["runId"]
    return run_id


def test_stats_of_an_unknown_workflow_exits_1_with_the_closest_names(a_run: str, capsys: Capture) -> None:
    assert main(["stats", "codingtask"]) == 1
    err = capsys.readouterr().err
    assert "no workflow `codingtask`" in err and "did you mean `coding-task`" in err
    assert main(["stats", "coding-task", "--json"]) == 0
    assert [w["id"] for w in json.loads(capsys.readouterr().out)["workflows"]] == ["coding-task"]


def test_approving_a_run_that_waits_for_nobody_says_so(a_run: str, capsys: Capture) -> None:
    assert main(["runs", "approve", a_run]) == 1
    err = capsys.readouterr().err
    assert "waits for no approval: it is active" in err
    assert "the run is active" not in err and "not active" not in err


def test_runs_list_and_sources_speak_json(a_run: str, capsys: Capture) -> None:
    assert main(["runs", "list", "--json"]) == 0
    assert [r["runId"] for r in json.loads(capsys.readouterr().out)["runs"]] == [a_run]
    assert main(["sources", "--json", "--no-bundled", "--workflows", str(BUNDLED)]) == 0
    listed = json.loads(capsys.readouterr().out)["sources"]
    assert listed[-1] == {
        "name": "cli",
        "path": str(BUNDLED),
        "exists": True,
        "workflows": len(list(BUNDLED.glob("*.json"))),
        "overrides": [],
    }


def test_dash_capital_v_prints_the_version(capsys: Capture) -> None:
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == f"handrail {__version__}\n"


@pytest.mark.parametrize("argv", [["list", "--bogus"], ["runs", "list", "--bogus"], ["gate", "doctor", "-Z"]])
def test_an_unknown_flag_points_to_its_own_commands_help(argv: list[str], capsys: Capture) -> None:
    err = one_line_usage_error(argv, capsys)
    command = " ".join(a for a in argv if not a.startswith("-") and a != "doctor")
    assert f"(see `handrail {command} --help`)" in err


def help_of(argv: list[str], capsys: Capture) -> str:
    assert main([*argv, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_approval_channels_help_states_the_true_defaults(capsys: Capture) -> None:
    text = help_of(["serve"], capsys)
    for tokens, said in ((False, "without tokens"), (True, "with tokens")):
        channels = ",".join(c for c in CHANNELS if c in default_channels(tokens))
        assert f"{channels} {said}" in text, channels


def test_dashboard_help_lists_its_own_options_and_points_to_serves(capsys: Capture) -> None:
    text = help_of(["dashboard"], capsys)
    assert "--port" in text and "--database" in text and "--approval-channels" in text
    for tuning in ("--max-reply", "--workers", "--max-context", "--header-timeout"):
        assert tuning not in text, tuning
    assert "`handrail serve --help`" in text
    assert main(["dashboard", "--max-reply", "0"]) == 2  # still taken, and still checked
    capsys.readouterr()


NAMES = {
    "claude-code": "Claude Code",
    "gemini": "Gemini CLI",
    "codex": "Codex",
    "cursor": "Cursor",
    "git": "git",
}


def test_the_gate_help_names_every_harness(capsys: Capture) -> None:
    assert set(NAMES) == set(HARNESSES)  # a new harness needs its name here, and in the help
    line = re.search(
        r" gate (hold an agent's harness to the run: hooks for [^.]*? and git)", help_of([], capsys)
    )
    assert line is not None
    for name in NAMES.values():
        assert name in line.group(1), name


@pytest.mark.slow
def test_initialize_keeps_the_seeds_name_and_adds_the_products_title() -> None:
    with Server("--no-bundled") as server:
        info = server.initialize()["serverInfo"]
    assert info["name"] == "workflowlookup" and info["title"] == "handrail"
