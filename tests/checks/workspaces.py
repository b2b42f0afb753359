"""Workspaces set up from data (spec/cases/checks): files, links, git commits."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.checks_bench import compiled_checks
from handrail.checks import Baseline, git_baseline

__all__ = ["compiled_checks", "git", "set_up", "write"]

GIT = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(workspace: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=workspace, check=True, capture_output=True)


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def set_up(actions: Sequence[Mapping[str, Any]], workspace: Path, outside: Path) -> Baseline:
    """Carry out the actions in order; the baseline is taken at `{"baseline": true}`, or
    after the last action."""
    workspace.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    baseline: Baseline | None = None
    for action in actions:
        ((kind, value),) = action.items()
        if kind == "git":
            git(workspace, "-c", "init.defaultBranch=main", "init", "-q")
        elif kind == "write":
            write(workspace, value)
        elif kind == "outside":
            write(outside, value)
        elif kind == "link":
            for name, target in value.items():
                link = workspace / name
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target.replace("{outside}", str(outside)), link)
        elif kind == "delete":
            for name in value:
                (workspace / name).unlink()
        elif kind == "stage":
            git(workspace, "add", "-A")
        elif kind == "commit":
            git(workspace, "add", "-A")
            git(workspace, "commit", "-q", "--allow-empty", "-m", value)
        elif kind == "baseline":
            baseline = git_baseline(str(workspace))
        else:
            raise ValueError(f"unknown set-up action {kind!r}")
    return baseline if baseline is not None else git_baseline(str(workspace))
