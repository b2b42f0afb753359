"""File and git checks through evaluate_checks: real files, real links, real repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handrail.checks import Baseline, CheckConfig, evaluate_checks, git_baseline
from tests.checks.workspaces import compiled_checks, git, write

CONFIG = CheckConfig()


def _one(checks: list[dict[str, object]], workspace: Path, baseline: Baseline | None = None, **config: int):
    settings = CheckConfig(**config) if config else CONFIG  # type: ignore[arg-type]
    [result] = evaluate_checks(compiled_checks(checks), str(workspace), {}, baseline, settings, "source")
    return result


def test_a_named_pipe_that_matches_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "notes.md")  # opening it to read would block for ever
    result = _one([{"type": "file", "path": "*.md", "contains": "x", "message": "m"}], tmp_path)
    assert result.passed is False and "no file matches" in result.why


def test_only_the_first_bytes_of_a_file_are_searched(tmp_path: Path) -> None:
    write(tmp_path, {"big.txt": "a" * 5000 + "NEEDLE"})
    check = [{"type": "file", "path": "big.txt", "contains": "NEEDLE", "message": "m"}]
    assert _one(check, tmp_path, max_read_bytes=1000).passed is False
    assert _one(check, tmp_path, max_read_bytes=10_000).passed is True


def test_a_glob_over_too_many_entries_gives_up_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, {f"d/f{i}.txt": "" for i in range(50)})
    result = _one([{"type": "file", "path": "**/*.md", "message": "m"}], tmp_path, max_entries=20)
    assert result.passed is False and "narrow the glob" in result.why


def test_git_folders_are_not_searched(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    result = _one([{"type": "file", "path": "**/HEAD", "message": "m"}], tmp_path)
    assert result.passed is False


def test_a_link_to_a_folder_inside_the_workspace_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, {"real/a.md": "x"})
    os.symlink(tmp_path / "real", tmp_path / "alias")
    assert _one([{"type": "file", "path": "real/*.md", "message": "m"}], tmp_path).passed is True
    assert _one([{"type": "file", "path": "**/*.md", "message": "m"}], tmp_path).why.count("alias") == 0
    # named as the glob's own folder, it is resolved (inside the workspace, so allowed)
    assert _one([{"type": "file", "path": "alias/*.md", "message": "m"}], tmp_path).passed is True


def test_a_workspace_reached_through_a_link_still_confines_its_checks(tmp_path: Path) -> None:
    write(tmp_path, {"real/docs/a.md": "x", "secret.md": "s"})
    os.symlink(tmp_path / "real", tmp_path / "linked")
    os.symlink(tmp_path / "secret.md", tmp_path / "real" / "docs" / "b.md")
    result = _one([{"type": "file", "path": "docs/b.md", "message": "m"}], tmp_path / "linked")
    assert result.passed is False and "points out of the workspace" in result.why
    assert _one([{"type": "file", "path": "docs/a.md", "message": "m"}], tmp_path / "linked").passed


def _repository(path: Path) -> Baseline:
    git(path, "-c", "init.defaultBranch=main", "init", "-q")
    write(path, {"app/main.py": "x", "other/readme.md": "y"})
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return git_baseline(str(path))


def test_a_repositorys_fsmonitor_program_is_never_run(tmp_path: Path) -> None:
    baseline = _repository(tmp_path)
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    git(tmp_path, "config", "core.fsmonitor", str(hook))
    write(tmp_path, {"app/main.py": "changed"})
    result = _one([{"type": "git", "changes": True, "clean": True, "message": "m"}], tmp_path, baseline)
    assert "app/main.py" in result.why
    assert not (tmp_path / "hook-ran").exists()


@pytest.mark.slow
def test_a_workspace_inside_a_repository_sees_only_its_own_part(tmp_path: Path) -> None:
    baseline_root = _repository(tmp_path)
    write(tmp_path, {"other/readme.md": "changed"})
    workspace = tmp_path / "app"
    baseline = git_baseline(str(workspace))
    assert baseline == baseline_root
    result = _one([{"type": "git", "changes": True, "message": "m"}], workspace, baseline)
    assert result.passed is False
    assert _one([{"type": "git", "clean": True, "message": "m"}], workspace).passed is True
    write(tmp_path, {"app/new.py": ""})
    result = _one([{"type": "git", "changes": True, "message": "m"}], workspace, baseline)
    assert result.passed is True and "`new.py`" in result.why


def test_a_baseline_whose_commit_is_gone_says_so(tmp_path: Path) -> None:
    _repository(tmp_path)
    gone = Baseline("commit", "0" * 40)
    result = _one([{"type": "git", "changes": True, "message": "m"}], tmp_path, gone)
    assert result.passed is False and "no longer in the repository" in result.why


def test_without_a_baseline_changes_cannot_be_told(tmp_path: Path) -> None:
    _repository(tmp_path)
    result = _one([{"type": "git", "changes": True, "message": "m"}], tmp_path, None)
    assert result.passed is False and "no baseline" in result.why


def test_without_git_on_path_the_baseline_and_the_check_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    baseline = git_baseline(str(tmp_path))
    assert baseline.state == "unavailable" and "not found" in baseline.detail
    result = _one([{"type": "git", "clean": True, "message": "m"}], tmp_path, baseline)
    assert result.passed is False and "`git` is not found" in result.why


def test_a_baseline_travels_as_json_and_back(tmp_path: Path) -> None:
    baseline = _repository(tmp_path)
    assert baseline.state == "commit" and baseline.head is not None and len(baseline.head) >= 40
    assert Baseline.from_wire(baseline.to_wire()) == baseline
    assert Baseline.from_wire({"state": "no-commits"}) == Baseline("no-commits")
    with pytest.raises(ValueError, match="not a git baseline state"):
        Baseline.from_wire({"state": "maybe"})


@pytest.mark.slow
def test_a_file_rewritten_in_the_same_instant_as_the_commit_still_counts_as_uncommitted(
    tmp_path: Path,
) -> None:
    # same size, and often the same mtime as the index: git must see the content differs
    for attempt in range(15):
        workspace = tmp_path / str(attempt)
        workspace.mkdir()
        git(workspace, "init", "-q")
        write(workspace, {"app.py": "print(1)\n"})
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "-m", "first")
        write(workspace, {"app.py": "print(2)\n"})
        result = _one([{"type": "git", "clean": True, "message": "m"}], workspace)
        assert result.passed is False and "`app.py`" in result.why, (attempt, result.why)
