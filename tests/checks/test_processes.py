"""The one process driver and its environment policy: real processes, a fake `git`
on PATH where git's own answers are needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handrail.catalog.git_sources import GitSource
from handrail.checks.git import git_baseline
from handrail.checks.git_view import GitError, run_git
from handrail.checks.processes import environment, git_environment, run

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads process states from /proc"
)


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether the process ended (a zombie waiting for its reaper has ended)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _fake_git(folder: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `git` first on PATH that runs `script` (sh) instead of git."""
    folder.mkdir()
    program = folder / "git"
    program.write_text("#!/bin/sh\n" + script + "\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}")


@needs_proc
def test_the_time_limit_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > grandchild.pid; sleep 60"
    started = time.monotonic()
    done = run(["sh", "-c", script], str(tmp_path), 1, 1024, env=environment())
    assert time.monotonic() - started < 10
    assert done.timed_out is True and done.exit_code is None
    assert _gone(int((tmp_path / "grandchild.pid").read_text()))


def test_output_is_bounded_to_its_last_bytes(tmp_path: Path) -> None:
    done = run(
        ["sh", "-c", "head -c 300000 /dev/zero; printf END"], str(tmp_path), 10, 100, env=environment()
    )
    assert done.exit_code == 0
    assert len(done.output) == 100 and done.output.endswith(b"END") and done.truncated is True


def test_errors_kept_apart_are_bounded_too(tmp_path: Path) -> None:
    script = "printf out; head -c 300000 /dev/zero >&2; printf ERR >&2"
    done = run(["sh", "-c", script], str(tmp_path), 10, 50, env=environment(), separate_errors=True)
    assert done.output == b"out" and done.truncated is False
    assert len(done.errors) == 50 and done.errors.endswith(b"ERR")


def test_a_program_that_cannot_start_says_why(tmp_path: Path) -> None:
    done = run(["handrail-no-such-program"], str(tmp_path), 10, 100, env=environment())
    assert done.exit_code is None and done.error == "`handrail-no-such-program` is not found on PATH"


def test_the_environment_never_holds_handrails_own_settings() -> None:
    server = {"PATH": "/bin", "HANDRAIL_TOKEN": "secret", "HANDRAIL_DATABASE_URL": "postgresql://x", "A": "1"}
    assert environment(environ=server) == {"PATH": "/bin", "A": "1"}
    assert environment(kept=("PATH", "HANDRAIL_TOKEN"), environ=server) == {"PATH": "/bin"}
    assert environment(kept=(), added={"B": "2"}, environ=server) == {"B": "2"}


def test_git_gets_only_what_is_named_with_its_isolation_on_top() -> None:
    server = {
        "PATH": "/bin",
        "HANDRAIL_TOKEN": "secret",
        "SSH_AUTH_SOCK": "/s",
        "GIT_DIR": "/x",
        "HOME": "/h",
    }
    env = git_environment("file", passed=("SSH_AUTH_SOCK", "HANDRAIL_TOKEN"), environ=server)
    assert env["PATH"] == "/bin" and env["SSH_AUTH_SOCK"] == "/s" and env["GIT_ALLOW_PROTOCOL"] == "file"
    assert "HANDRAIL_TOKEN" not in env and "GIT_DIR" not in env and env["HOME"] != "/h"


@needs_proc
def test_a_git_check_leaves_nothing_git_started_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "left.pid"
    _fake_git(tmp_path / "bin", f"sleep 60 >/dev/null 2>&1 & echo $! > {pid_file}; exit 1", monkeypatch)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    assert git_baseline(str(workspace), timeout=10).state == "not-a-repository"
    assert _gone(int(pid_file.read_text()))


def test_a_git_answer_past_its_bound_is_an_error_not_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_git(tmp_path / "bin", "head -c 2000 /dev/zero", monkeypatch)
    monkeypatch.setattr("handrail.checks.git_view.OUTPUT_BYTES", 1000)
    with pytest.raises(GitError, match="printed more than 1000 bytes"):
        run_git(["ls-files"], str(tmp_path), 10)


@needs_proc
def test_a_git_source_fetch_leaves_nothing_git_started_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "left.pid"
    _fake_git(tmp_path / "bin", f"sleep 60 >/dev/null 2>&1 & echo $! > {pid_file}; exit 1", monkeypatch)
    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path / "home"))
    source = GitSource.of("git+file:///nowhere/repo.git")
    assert source.sync() is True and source.error is not None
    assert _gone(int(pid_file.read_text()))


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("path", ["/usr/bin:/bin", "/nonexistent"], ids=["setpriv", "prctl-through-ctypes"])
def test_a_program_asked_to_die_with_its_parent_dies_when_the_parent_is_killed(
    tmp_path: Path, path: str
) -> None:
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from handrail.checks.processes import run; "
            "run(['/bin/sh', '-c', 'echo $$ > \"$0\"; exec /bin/sleep 60', sys.argv[1]], None, 60, 100, "
            "env={'PATH': sys.argv[2]}, die_with_parent=True)",
            str(pid_file),
            path,
        ],
        env={**os.environ, "PATH": path},
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.02)
        child = int(pid_file.read_text())
        parent.kill()  # SIGKILL: nothing of the parent runs to kill the program's group
        parent.wait(10)
        assert _gone(child), f"{child} outlived its parent"
    finally:
        parent.kill()
