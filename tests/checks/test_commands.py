"""Command checks through evaluate_checks: real processes in a real folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from handrail.checks import CheckConfig, evaluate_checks
from handrail.checks.processes import environment, run
from tests.checks.workspaces import compiled_checks

ALLOWED = CheckConfig(allow_commands=True)


def _state(pid: int) -> str | None:
    """The process's state letter, or None when it no longer exists."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether the process ended (a zombie waiting for its reaper has ended)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _state(pid) in (None, "Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_timeout_kills_the_program_and_the_grandchild_it_started(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > grandchild.pid; echo $$ > child.pid; sleep 60"
    checks = compiled_checks(
        [{"type": "command", "run": ["sh", "-c", script], "timeoutSeconds": 1, "message": "Quick"}]
    )
    started = time.monotonic()
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "source")
    assert time.monotonic() - started < 10  # killed at its limit, not after the sleep
    assert result.passed is False and result.timed_out is True
    assert "time limit of 1 s" in result.why
    for name in ("child.pid", "grandchild.pid"):
        pid = int((tmp_path / name).read_text())
        assert _gone(pid), f"{name} {pid} still runs"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_program_that_exits_leaves_nothing_running_behind_it(tmp_path: Path) -> None:
    checks = compiled_checks(
        [{"type": "command", "run": ["sh", "-c", "sleep 60 & echo $! > bg.pid; exit 0"], "message": "m"}]
    )
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "source")
    assert result.passed is True and result.exit_code == 0
    assert _gone(int((tmp_path / "bg.pid").read_text()))


def test_without_allow_commands_nothing_runs_and_the_answer_says_how_to_allow_it(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    checks = compiled_checks([{"type": "command", "run": ["rm", "keep.txt"], "message": "m"}])
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, CheckConfig(), "source")
    assert (tmp_path / "keep.txt").exists()
    assert result.passed is False and result.argv is None and result.exit_code is None
    assert "--allow-commands" in result.why and "HANDRAIL_ALLOW_COMMANDS=1" in result.why
    issue, suggestion = result.issue()
    assert "--allow-commands" in issue and suggestion


def test_a_workflow_sent_by_a_client_never_runs_commands_even_when_they_are_allowed(tmp_path: Path) -> None:
    checks = compiled_checks(
        [{"type": "command", "run": ["touch", "ran"], "message": "m"}], origin="submitted"
    )
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "submitted")
    assert not (tmp_path / "ran").exists()
    assert result.passed is False and "sent by a client" in result.why


def test_a_named_command_comes_from_the_configuration_not_the_workflow(tmp_path: Path) -> None:
    config = CheckConfig(allow_commands=True, commands={"test": ("sh", "-c", "pwd; exit 0")})
    checks = compiled_checks([{"type": "command", "run": {"command": "test"}, "message": "Tests pass"}])
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, config, "source")
    assert result.passed is True
    assert result.argv == ("sh", "-c", "pwd; exit 0")
    assert result.output is not None and os.path.realpath(tmp_path) in result.output


def test_the_output_kept_is_a_bounded_tail(tmp_path: Path) -> None:
    config = CheckConfig(allow_commands=True, output_tail_bytes=64)
    script = "for i in $(seq 1 2000); do echo line $i; done; exit 1"
    checks = compiled_checks([{"type": "command", "run": ["sh", "-c", script], "message": "m"}])
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, config, "source")
    assert result.output is not None
    assert result.output.startswith("…") and result.output.endswith("line 2000\n")
    assert len(result.output.encode()) <= 64 + len("…".encode())
    assert result.exit_code == 1 and result.duration_ms is not None
    assert "line 2000" in result.issue()[0]


def test_a_program_never_sees_the_servers_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_TOKEN", "secret-token")
    monkeypatch.setenv("H16_VISIBLE", "visible")
    done = run(["sh", "-c", "env"], str(tmp_path), 10, 65536, env=environment())
    assert b"H16_VISIBLE=visible" in done.output
    assert b"secret-token" not in done.output


@pytest.mark.slow
def test_the_timeout_is_capped_by_the_configuration(tmp_path: Path) -> None:
    config = CheckConfig(allow_commands=True, max_timeout_seconds=1)
    checks = compiled_checks(
        [{"type": "command", "run": ["sleep", "30"], "timeoutSeconds": 600, "message": "m"}]
    )
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, config, "source")
    assert result.timed_out is True and "time limit of 1 s" in result.why


def test_a_check_whose_condition_does_not_hold_gives_no_result(tmp_path: Path) -> None:
    checks = compiled_checks(
        [{"type": "command", "run": ["false"], "message": "m", "condition": "strict == true"}]
    )
    assert evaluate_checks(checks, str(tmp_path), {"strict": False}, None, ALLOWED, "source") == []
    [result] = evaluate_checks(checks, str(tmp_path), {"strict": True}, None, ALLOWED, "source")
    assert result.passed is False and result.exit_code == 1


def test_a_result_converts_to_a_json_ready_event(tmp_path: Path) -> None:
    checks = compiled_checks([{"type": "command", "run": ["sh", "-c", "echo hi"], "message": "Says hi"}])
    [result] = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "source")
    event = result.to_event()
    assert event["check"] == "command" and event["passed"] is True
    assert event["argv"] == ["sh", "-c", "echo hi"] and event["exitCode"] == 0
    assert event["output"] == "hi\n" and event["message"] == "Says hi"
    assert event["pointer"] == "/steps/0/checks/0" and "timedOut" not in event
    assert isinstance(event["durationMs"], int)


def test_every_check_runs_even_after_one_fails(tmp_path: Path) -> None:
    checks = compiled_checks(
        [
            {"type": "command", "run": ["false"], "message": "first"},
            {"type": "file", "path": "missing.txt", "message": "second"},
            {"type": "command", "run": ["true"], "message": "third"},
        ]
    )
    results = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "source")
    assert [r.passed for r in results] == [False, False, True]


def test_a_workspace_that_is_not_a_folder_fails_every_check(tmp_path: Path) -> None:
    checks = compiled_checks([{"type": "file", "path": "a.txt", "message": "m"}])
    [result] = evaluate_checks(checks, str(tmp_path / "nowhere"), {}, None, ALLOWED, "source")
    assert result.passed is False and "is not a folder" in result.why


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs the setsid program")
def test_a_daemon_that_leaves_the_group_and_holds_the_output_open_does_not_hang_the_check(
    tmp_path: Path,
) -> None:
    script = "setsid sleep 30 & echo $! > daemon.pid; echo done"
    checks = compiled_checks([{"type": "command", "run": ["sh", "-c", script], "message": "m"}])
    started = time.monotonic()
    try:
        [result] = evaluate_checks(checks, str(tmp_path), {}, None, ALLOWED, "source")
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((tmp_path / "daemon.pid").read_text()), signal.SIGKILL)
    assert time.monotonic() - started < 15  # the grace after exit, not the daemon's 30 s
    assert result.passed is True and result.output == "done\n"
