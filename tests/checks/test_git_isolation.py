"""A git check never runs a program the repository (or the user's git configuration)
names, and still tells changes and cleanliness right. Each vector is armed in a real
repository, shown to fire under ordinary git, then a check runs and the marker the
program would leave must not appear."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from handrail.checks import Baseline, CheckConfig, evaluate_checks, git_baseline
from handrail.checks.processes import git_environment
from tests.checks.workspaces import compiled_checks, git, write

pytestmark = pytest.mark.slow

Arm = Callable[[Path, Path, Path], list[str]]  # (repo, program, scratch) -> a git command that fires it


def _program(folder: Path, marker: Path) -> Path:
    """A program that leaves `marker` and otherwise acts as `cat` (a filter must give content)."""
    program = folder / "evil.sh"
    # as a transport it must not wait for git to speak first
    program.write_text(f'#!/bin/sh\ntouch {marker}\ncase "$1" in git-*) exit 1;; esac\nexec cat\n', "utf-8")
    program.chmod(0o755)
    return program


def _hook_in(folder: Path, program: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("post-index-change", "post-checkout", "reference-transaction", "pre-auto-gc"):
        (folder / name).write_text(f"#!/bin/sh\nexec {program} </dev/null\n", "utf-8")
        (folder / name).chmod(0o755)


def hooks_in_the_git_folder(repo: Path, program: Path, scratch: Path) -> list[str]:
    _hook_in(repo / ".git" / "hooks", program)
    return ["status"]


def core_hooks_path_in_the_local_config(repo: Path, program: Path, scratch: Path) -> list[str]:
    _hook_in(scratch / "hooks", program)
    git(repo, "config", "core.hooksPath", str(scratch / "hooks"))
    return ["status"]


def a_clean_filter(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "filter.x.clean", str(program))
    git(repo, "config", "filter.x.smudge", str(program))
    write(repo, {".gitattributes": "*.py filter=x\n"})
    return ["diff", "--name-only", "HEAD", "--"]


def a_long_running_filter_process(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "filter.x.process", str(program))
    git(repo, "config", "filter.x.required", "true")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n", "utf-8")
    return ["diff", "--name-only", "HEAD", "--"]


def an_attributes_file_named_by_the_local_config(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "filter.x.clean", str(program))
    (scratch / "attributes").write_text("* filter=x\n", "utf-8")
    git(repo, "config", "core.attributesFile", str(scratch / "attributes"))
    return ["diff", "--name-only", "HEAD", "--"]


def a_textconv(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "diff.x.textconv", str(program))
    write(repo, {".gitattributes": "*.py diff=x\n"})
    return ["diff", "HEAD", "--"]


def an_external_diff(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "diff.external", str(program))
    git(repo, "config", "diff.x.command", str(program))
    write(repo, {".gitattributes": "*.py diff=x\n"})
    return ["diff", "HEAD", "--"]


def an_fsmonitor(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "core.fsmonitor", str(program))
    return ["status"]


def a_credential_helper_and_an_ssh_command(repo: Path, program: Path, scratch: Path) -> list[str]:
    git(repo, "config", "credential.helper", f"!{program}")
    git(repo, "config", "core.sshCommand", str(program))
    return ["credential", "fill"]


def a_partial_clone_whose_remote_is_a_command(repo: Path, program: Path, scratch: Path) -> list[str]:
    # a missing object would be fetched from the promisor remote, which here runs a program
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", f"ext::{program} %S")
    git(repo, "config", "protocol.ext.allow", "always")
    return ["cat-file", "-e", "1" * 40]


def an_included_config(repo: Path, program: Path, scratch: Path) -> list[str]:
    included = scratch / "included.gitconfig"
    included.write_text(f'[filter "x"]\n\tclean = {program}\n[core]\n\tfsmonitor = {program}\n', "utf-8")
    git(repo, "config", "include.path", str(included))
    write(repo, {".gitattributes": "*.py filter=x\n"})
    return ["diff", "--name-only", "HEAD", "--"]


def the_users_global_config(repo: Path, program: Path, scratch: Path) -> list[str]:
    config = scratch / "user.gitconfig"
    config.write_text(f'[filter "x"]\n\tclean = {program}\n[core]\n\tfsmonitor = {program}\n', "utf-8")
    os.environ["GIT_CONFIG_GLOBAL"] = str(config)  # restored by the fixture below
    write(repo, {".gitattributes": "*.py filter=x\n"})
    return ["diff", "--name-only", "HEAD", "--"]


VECTORS = [
    hooks_in_the_git_folder,
    core_hooks_path_in_the_local_config,
    a_clean_filter,
    a_long_running_filter_process,
    an_attributes_file_named_by_the_local_config,
    a_textconv,
    an_external_diff,
    an_fsmonitor,
    a_credential_helper_and_an_ssh_command,
    a_partial_clone_whose_remote_is_a_command,
    an_included_config,
    the_users_global_config,
]


@pytest.fixture
def armed_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The server's environment as a user might have it, restored afterwards."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HANDRAIL_TOKEN", "secret-token")


def _check(workspace: Path, baseline: Baseline, **kinds: bool) -> tuple[bool, str]:
    checks = compiled_checks([{"type": "git", "message": "m", **kinds}])
    [result] = evaluate_checks(checks, str(workspace), {}, baseline, CheckConfig(), "source")
    return result.passed, result.why


def _fire(repo: Path, args: list[str]) -> None:
    """Ordinary git, as a user would run it: the vector is live."""
    asked = b"protocol=https\nhost=example.com\n\n"  # what `git credential fill` reads
    subprocess.run(["git", *args], cwd=repo, input=asked, capture_output=True, timeout=30, check=False)


@pytest.mark.parametrize("arm", VECTORS, ids=lambda f: f.__name__)
def test_no_program_the_repository_or_the_user_names_runs_during_a_git_check(
    arm: Arm, tmp_path: Path, armed_environment: None
) -> None:
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    marker = scratch / "a-program-ran"
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    write(repo, {"app/main.py": "one\n", "docs/readme.md": "doc\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    baseline = git_baseline(str(repo))
    trigger = arm(repo, _program(scratch, marker), scratch)
    if (repo / ".gitattributes").exists():  # part of the committed tree, so it is no change
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "attributes")
        baseline = git_baseline(str(repo))
    committed = git_baseline(str(repo))
    assert baseline.state == "commit" and committed.head == baseline.head

    write(repo, {"app/main.py": "fire\n"})
    _fire(repo, trigger)
    assert marker.exists(), "the vector does not fire under ordinary git"
    marker.unlink()
    # back to the committed content, but stat-dirty: git must hash the file to tell
    write(repo, {"app/main.py": "one\n"})
    os.utime(repo / "app" / "main.py", (1, 1))

    assert _check(repo, baseline, changes=True) == (
        False,
        f"no changes since the run began (at commit {baseline.head[:12]})",  # type: ignore[index]
    )
    assert _check(repo, baseline, clean=True) == (True, "nothing uncommitted")
    write(repo, {"app/main.py": "two\n", "app/new.py": "new\n"})
    passed, why = _check(repo, baseline, changes=True, clean=True)
    assert passed is False and "2 files changed" in why and "2 files uncommitted" in why, why
    assert "`app/main.py`" in why and "`app/new.py`" in why
    assert not marker.exists(), "a program the repository named ran during a check"
    assert git_baseline(str(repo)) == committed
    assert not marker.exists()


def test_git_runs_with_a_minimal_environment_without_the_servers_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HANDRAIL_TOKEN", "secret-token")
    monkeypatch.setenv("HANDRAIL_DATABASE_URL", "postgresql://u:p@h/db")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/somewhere/user.gitconfig")
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    env = git_environment()
    assert not [name for name in env if name.startswith("HANDRAIL_")]
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_ATTR_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["LC_ALL"] == "C" and "GIT_DIR" not in env
    assert os.path.isdir(env["HOME"]) and os.listdir(env["HOME"]) == []
    assert env["HOME"] != os.path.expanduser("~")


def test_a_baseline_commit_missing_from_a_partial_clone_is_not_fetched_from_its_remote(
    tmp_path: Path, armed_environment: None
) -> None:
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    marker = scratch / "a-program-ran"
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    write(repo, {"a.txt": "a\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    a_partial_clone_whose_remote_is_a_command(repo, _program(scratch, marker), scratch)
    gone = Baseline("commit", "1" * 40)  # a commit the repository does not hold
    passed, why = _check(repo, gone, changes=True)
    assert passed is False
    assert why == f"the commit the run began at ({'1' * 12}) is no longer in the repository"
    assert not marker.exists()


def test_a_work_tree_the_repository_config_sets_outside_the_workspace_is_never_looked_at(
    tmp_path: Path, armed_environment: None
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    write(outside, {"private-name.txt": "x\n"})
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    write(repo, {"a.txt": "a\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    baseline = git_baseline(str(repo))
    git(repo, "config", "core.worktree", str(outside))
    for kinds in ({"changes": True}, {"clean": True}):
        passed, why = _check(repo, baseline, **kinds)
        assert passed is False, why
        assert "private-name" not in why
        assert "working tree" in why and str(outside) in why, why


def test_an_index_larger_than_any_real_one_fails_the_check_without_being_copied(
    tmp_path: Path, armed_environment: None
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    write(repo, {"a.txt": "a\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    baseline = git_baseline(str(repo))
    index = repo / ".git" / "index"
    with open(index, "r+b") as handle:  # sparse: it takes no room here, but a copy would
        handle.truncate((1 << 30) + 1)
    passed, why = _check(repo, baseline, clean=True)
    assert passed is False
    assert "index" in why and "larger than" in why, why
    assert git_baseline(str(repo)).state == "unavailable"
