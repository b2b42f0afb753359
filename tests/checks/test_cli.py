"""Checks where a user meets them: `handrail check`, the options of `handrail start`
and `serve`, and what a real server shows an agent about a step's checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SPEC
from tests.helpers.server import Server, clean_env

CASES = SPEC / "cases" / "compiler"
WORKFLOW: dict[str, Any] = {
    "id": "checked-work",
    "name": "Checked work",
    "description": "A step whose work the server verifies.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "implement",
            "title": "Implement",
            "prompt": "Implement it.",
            "checks": [
                {"type": "command", "run": {"command": "test"}, "message": "The tests pass"},
                {"type": "git", "changes": True, "message": "The code changed"},
                {"type": "file", "path": "docs/*.md", "message": "Documented", "condition": "docs == true"},
            ],
        }
    ],
}


def handrail(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env.update(extra)
    return env


def _workflow_file(tmp_path: Path) -> Path:
    path = tmp_path / "checked-work.json"
    path.write_text(json.dumps(WORKFLOW, indent=2), encoding="utf-8")
    return path


def test_check_reports_the_check_diagnostics_of_a_file_with_their_positions() -> None:
    done = handrail("check", CASES / "check-path-leaves-workspace" / "workflow.json", env=_environment())
    assert done.returncode == 1
    assert "workflow.json:14:20: error H606 the path leaves the workspace" in done.stdout
    assert "3 errors" in done.stdout


def test_check_warns_about_a_program_not_on_path_but_passes() -> None:
    done = handrail("check", CASES / "check-program-not-on-path" / "workflow.json", env=_environment())
    assert done.returncode == 0
    assert "warning H603 `handrail-no-such-program` is not found on PATH" in done.stdout


@pytest.mark.slow
def test_check_warns_about_a_command_name_only_against_configured_commands(tmp_path: Path) -> None:
    path = _workflow_file(tmp_path)
    quiet = handrail("check", path, env=_environment())
    assert quiet.returncode == 0 and "H604" not in quiet.stdout
    named = handrail("check", path, "--command", "lint=ruff check .", env=_environment())
    assert named.returncode == 0
    assert "warning H604 no command `test` is configured (configured: `lint`)" in named.stdout
    from_env = handrail("check", path, env=_environment(HANDRAIL_COMMANDS="lint=ruff"))
    assert "H604" in from_env.stdout
    known = handrail("check", path, env=_environment(HANDRAIL_COMMANDS='test="pytest -q"'))
    assert known.returncode == 0 and "H604" not in known.stdout


@pytest.mark.slow
def test_a_bad_command_option_or_variable_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    path = _workflow_file(tmp_path)
    for args, env, words in (
        (("check", path, "--command", "test"), _environment(), "'test' is not NAME=COMMAND"),
        (("check", path), _environment(HANDRAIL_COMMANDS='x="open'), "HANDRAIL_COMMANDS"),
        (("start", "--command", "bad name=x"), _environment(), "'bad name' is not a command name"),
        (("serve", "--command", "t="), _environment(), "command `t` is empty"),
    ):
        done = handrail(*args, env=env)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr
        assert done.stdout == ""


def test_every_bundled_workflow_passes_check_with_the_test_command_configured() -> None:
    done = handrail("check", ROOT / "workflows", "--command", "test=pytest -q", env=_environment())
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip().endswith("0 errors, 0 warnings")


def test_start_takes_the_check_options_and_the_service_carries_them(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from handrail import cli\n"
        "from handrail.service import core as service\n"
        "seen = []\n"
        "original = service.Service.__init__\n"
        "def spy(self, *a, **k):\n"
        "    original(self, *a, **k)\n"
        "    seen.append(self.check_config)\n"
        "service.Service.__init__ = spy\n"
        "cli.main(sys.argv[1:])\n"
        "c = seen[0]\n"
        "print(c.allow_commands, dict(c.commands), file=sys.stderr)\n"
    )
    env = clean_env(tmp_path) | {"HANDRAIL_COMMANDS": "lint=ruff"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "start",
            "--no-bundled",
            "--allow-commands",
            "--command",
            "test=pytest -q",
        ],
        cwd=tmp_path,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "True {'lint': ('ruff',), 'test': ('pytest', '-q')}" in done.stderr, done.stderr
    assert done.stdout == ""


def test_workflow_next_shows_the_checks_that_apply_as_information(tmp_path: Path) -> None:
    path = _workflow_file(tmp_path)
    with Server("--no-bundled", "--workflows", str(path), "--allow-commands") as server:
        server.initialize()
        result = server.result(
            "workflow_next", {"workflowId": "checked-work", "completedSteps": [], "context": {"docs": False}}
        )
        checks = result["step"]["checks"]
        assert checks == [
            "The tests pass (the configured command `test` exits with 0)",
            "The code changed (the workspace has changes since the run began)",
        ]
        assert "In a run, the server verifies for itself:\n- The tests pass" in result["guidance"]["prompt"]
        documented = server.result(
            "workflow_next", {"workflowId": "checked-work", "completedSteps": [], "context": {"docs": True}}
        )
        assert len(documented["step"]["checks"]) == 3
        got = server.result("workflow_get", {"id": "checked-work"})
        assert got["steps"][0]["checks"] == WORKFLOW["steps"][0]["checks"]


def test_workflow_validate_json_reports_check_problems_of_a_submitted_workflow(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(WORKFLOW))
    bad["steps"][0]["checks"].append({"type": "file", "path": "../../etc/passwd", "message": "m"})
    with Server("--no-bundled") as server:
        server.initialize()
        result = server.result("workflow_validate_json", {"workflow": json.dumps(bad)})
        assert result["valid"] is False
        [diagnostic] = result["diagnostics"]
        assert diagnostic["code"] == "H606"
        assert diagnostic["pointer"] == "/steps/0/checks/3/path"


@pytest.mark.slow
def test_the_checks_benchmark_quick_run_writes_a_complete_report(tmp_path: Path) -> None:
    from benchmarks.checks_bench import main

    out = tmp_path / "checks.json"
    assert main(["--quick", "--output", str(out)]) == 0
    report = json.loads(out.read_text("utf-8"))
    assert [row["what"].split()[0] for row in report["rows"]] == ["command", "file", "git"]
    for row in report["rows"]:
        assert row["handrail_ms"] > 0 and row["baseline_ms"] > 0 and row["ratio"] > 0
